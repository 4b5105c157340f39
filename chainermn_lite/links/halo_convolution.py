"""HaloConvolution2D: neon's ConvLayerDist, a convolution over tiles."""
import chainer

from chainermn_lite.functions import halo
from chainermn_lite.parallel.weights import whole_array
from chainermn_lite.parallel.grid import as_mpi_comm
from chainermn_lite.parallel.grid import check_grid

__all__ = ['HaloConvolution2D']


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,
                                                                  value)


class HaloConvolution2D(chainer.Link):
    """HaloConvolution2D(comm, grid, in_channels, out_channels, ksize,
    stride=1, pad=0, nobias=False, initialW=None, initial_bias=None).

    ``Convolution2D`` of an NCHW image tiled over ``grid=(rows, cols)`` of
    ``comm``'s ranks (see ``chainermn_lite.functions.halo``). Every rank
    holds the whole weights; after backward their gradients are the whole
    image's, so any Chainer optimizer keeps the ranks' weights identical.
    """

    def __init__(self, comm, grid, in_channels, out_channels, ksize,
                 stride=1, pad=0, nobias=False, initialW=None,
                 initial_bias=None):
        super().__init__()
        mpi_comm = as_mpi_comm(comm)
        self.comm = comm
        self.grid = check_grid(grid, mpi_comm.Get_size())
        if in_channels is None:
            raise ValueError('HaloConvolution2D needs in_channels (got '
                             'None): lazy shapes would differ by tile')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.ksize, self.stride, self.pad = _pair(ksize), stride, pad
        W = whole_array(mpi_comm, initialW,
                        (out_channels, in_channels) + self.ksize,
                        'HaloConvolution2D initialW')
        b = None
        if not nobias:
            b = whole_array(mpi_comm, initial_bias, (out_channels,),
                            'HaloConvolution2D initial_bias')
        with self.init_scope():
            self.W = chainer.Parameter(W)
            self.b = None if b is None else chainer.Parameter(b)

    def forward(self, x):
        """forward(x): this rank's output tile of the convolution."""
        channels = x.shape[1] if len(x.shape) == 4 else None
        if channels != self.in_channels:
            raise ValueError(
                'HaloConvolution2D expects {} input channels, got x of '
                'shape {}'.format(self.in_channels, x.shape))
        return halo.halo_convolution_2d(x, self.W, self.b, self.comm,
                                        self.grid, self.stride, self.pad)
