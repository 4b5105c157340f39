"""HaloConvolution2D trains like Chainer's Convolution2D on any grid."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

from chainermn_lite.functions import gather_tiles
from chainermn_lite.functions import halo_max_pooling_2d
from chainermn_lite.functions import split_tiles
from chainermn_lite.links import HaloConvolution2D

GRIDS = {1: (1, 1), 2: (1, 2), 4: (2, 2), 6: (2, 3), 9: (3, 3)}


def _close(actual, expected, what):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5,
                               err_msg=what)


@pytest.mark.mpi(sizes=tuple(GRIDS))
def test_conv_pool_trains_like_chainer(mpi_comm):
    grid = GRIDS[mpi_comm.Get_size()]
    rs = np.random.RandomState(11)
    W1 = (rs.randn(4, 2, 3, 3) * 0.3).astype(np.float32)
    b1 = rs.randn(4).astype(np.float32)
    W2 = (rs.randn(3, 4, 5, 5) * 0.2).astype(np.float32)
    x = rs.randn(3, 2, 15, 13).astype(np.float32)
    target = rs.randn(3, 3, 8, 7).astype(np.float32)
    full = chainer.ChainList(
        L.Convolution2D(2, 4, 3, stride=1, pad=1, initialW=W1,
                        initial_bias=b1),
        L.Convolution2D(4, 3, 5, stride=1, pad=2, initialW=W2, nobias=True))
    dist = chainer.ChainList(
        HaloConvolution2D(mpi_comm, grid, 2, 4, 3, stride=1, pad=1,
                          initialW=W1, initial_bias=b1),
        HaloConvolution2D(mpi_comm, grid, 4, 3, 5, stride=1, pad=2,
                          initialW=W2, nobias=True))

    def full_forward(x):
        return full[1](F.max_pooling_2d(F.relu(full[0](x)), 2))

    def dist_forward(x):
        h = F.relu(dist[0](split_tiles(x, mpi_comm, grid)))
        h = halo_max_pooling_2d(h, mpi_comm, grid, 2)
        return gather_tiles(dist[1](h), mpi_comm, grid)

    opts = [chainer.optimizers.MomentumSGD(0.01).setup(m)
            for m in (full, dist)]
    for step in range(3):
        losses = [F.mean_squared_error(fwd(x), target)
                  for fwd in (full_forward, dist_forward)]
        _close(losses[1].array, losses[0].array, 'loss {}'.format(step))
        for model, loss, opt in zip((full, dist), losses, opts):
            model.cleargrads()
            loss.backward()
            opt.update()
        _close(dist[0].W.grad, full[0].W.grad, 'gW {}'.format(step))
        _close(dist[0].b.grad, full[0].b.grad, 'gb {}'.format(step))
    for mine, theirs in zip(dist.params(), full.params()):
        _close(mine.array, theirs.array, 'weights after training')


@pytest.mark.mpi(sizes=(2,))
def test_bad_input_names_values(mpi_comm):
    with pytest.raises(ValueError, match='grid 2x2 has 4 cells but the '
                       'communicator has 2 ranks'):
        HaloConvolution2D(mpi_comm, (2, 2), 1, 1, 3)
    with pytest.raises(ValueError, match=r'whole shape \(2, 1, 3, 3\), got '
                       r'\(2, 1, 5, 5\)'):
        HaloConvolution2D(mpi_comm, (1, 2), 1, 2, 3,
                          initialW=np.zeros((2, 1, 5, 5), np.float32))
    conv = HaloConvolution2D(mpi_comm, (1, 2), 3, 2, 3)
    with pytest.raises(ValueError, match=r'expects 3 input channels, got x '
                       r'of shape \(1, 2, 4, 4\)'):
        conv(np.zeros((1, 2, 4, 4), np.float32))
