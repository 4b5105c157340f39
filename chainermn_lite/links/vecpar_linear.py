"""VecparLinear: neon's LayerDist, a linear layer over split features."""
import chainer
import numpy

from chainermn_lite.functions import vecpar
from chainermn_lite.parallel.weights import whole_array
from chainermn_lite.parallel.grid import as_mpi_comm
from chainermn_lite.parallel.grid import axis_bounds

__all__ = ['VecparLinear']


class VecparLinear(chainer.Link):
    """VecparLinear(comm, in_size, out_size, nobias=False, initialW=None,
    initial_bias=None).

    Input and output are ``(batch, features)`` arrays whose features are
    split over ``comm``'s ranks by ``numpy.array_split``: rank ``r`` holds
    ``in_r`` and ``out_r``. It keeps ``W[:, in_r]`` of the whole
    ``(out_size, in_size)`` matrix ``initialW`` and ``b[out_r]``; the
    forward pass is one reduce-scatter, the backward pass one allgather.
    Stacked layers chain without gathering; gradients are exact, so any
    Chainer optimizer keeps each rank's slice of the whole layer.
    """

    def __init__(self, comm, in_size, out_size, nobias=False, initialW=None,
                 initial_bias=None):
        super().__init__()
        self.comm = comm
        mpi_comm = as_mpi_comm(comm)
        size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
        if in_size is None or out_size is None:
            raise ValueError('VecparLinear needs in_size and out_size (got '
                             '{}, {}): each rank keeps a slice of the whole '
                             'matrix'.format(in_size, out_size))
        self.in_size, self.out_size = int(in_size), int(out_size)
        self.in_bounds = axis_bounds(self.in_size, size)[rank]
        self.out_bounds = axis_bounds(self.out_size, size)[rank]
        W = whole_array(mpi_comm, initialW, (self.out_size, self.in_size),
                        'VecparLinear initialW')
        b = None
        if not nobias:
            b = whole_array(mpi_comm, initial_bias, (self.out_size,),
                            'VecparLinear initial_bias')
        in0, in1 = self.in_bounds
        out0, out1 = self.out_bounds
        with self.init_scope():
            self.W = chainer.Parameter(numpy.ascontiguousarray(
                W[:, in0:in1]))
            self.b = None if b is None else chainer.Parameter(
                b[out0:out1].copy())

    def forward(self, x):
        """forward(x): this rank's output features of ``x_full @ W.T + b``."""
        return vecpar.vecpar_linear(x, self.W, self.b, self.comm,
                                    self.out_size)
