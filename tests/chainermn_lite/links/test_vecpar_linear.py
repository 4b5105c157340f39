"""VecparLinear: a stack of them equals Chainer's Linear stack."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

from chainermn_lite.functions import gather_features
from chainermn_lite.functions import split_features
from chainermn_lite.links import VecparLinear


def _close(actual, expected, what):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5,
                               err_msg=what)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_stack_trains_like_linear_stack(mpi_comm, make_communicator):
    """Two stacked layers, SGD steps: loss and weights match Chainer's."""
    comm = make_communicator(mpi_comm)
    rs = np.random.RandomState(5)
    W1, b1 = rs.randn(10, 9).astype(np.float32), rs.randn(10)
    W2, b2 = rs.randn(7, 10).astype(np.float32), rs.randn(7)
    x = rs.randn(6, 9).astype(np.float32)
    t = rs.randint(0, 7, size=6).astype(np.int32)
    full = chainer.Sequential(L.Linear(9, 10, initialW=W1, initial_bias=b1),
                              F.relu,
                              L.Linear(10, 7, initialW=W2, initial_bias=b2))
    dist = chainer.ChainList(
        VecparLinear(comm, 9, 10, initialW=W1, initial_bias=b1),
        VecparLinear(mpi_comm, 10, 7, initialW=W2, initial_bias=b2))

    def dist_forward(x):
        h = F.relu(dist[0](split_features(x, comm)))
        return gather_features(dist[1](h), comm)

    opt_full = chainer.optimizers.SGD(0.1).setup(full)
    opt_dist = chainer.optimizers.SGD(0.1).setup(dist)
    for step in range(3):
        loss_full = F.softmax_cross_entropy(full(x), t)
        loss_dist = F.softmax_cross_entropy(dist_forward(x), t)
        _close(loss_dist.array, loss_full.array, 'loss {}'.format(step))
        for model, loss, opt in ((full, loss_full, opt_full),
                                 (dist, loss_dist, opt_dist)):
            model.cleargrads()
            loss.backward()
            opt.update()
    layer = dist[1]
    (i0, i1), (o0, o1) = layer.in_bounds, layer.out_bounds
    _close(layer.W.array, full[2].W.array[:, i0:i1], 'W after training')
    _close(layer.b.array, full[2].b.array[o0:o1], 'b after training')


@pytest.mark.mpi(sizes=(2, 3))
def test_initializer_draws_one_whole_matrix(mpi_comm):
    """Without initialW, the ranks' slices come from rank 0's matrix."""
    layer = VecparLinear(mpi_comm, 5, 4, nobias=True)
    whole = gather_features(layer.W.array.copy(), mpi_comm)
    assert whole.shape == (4, 5)
    assert np.count_nonzero(whole.array) == whole.size
    assert layer.b is None


@pytest.mark.mpi(sizes=(2,))
def test_bad_input_names_values(mpi_comm):
    with pytest.raises(ValueError, match=r'whole shape \(4, 5\), got '
                       r'\(5, 4\)'):
        VecparLinear(mpi_comm, 5, 4, initialW=np.zeros((5, 4), np.float32))
    layer = VecparLinear(mpi_comm, 6, 4, initialW=np.ones((4, 6)))
    with pytest.raises(ValueError, match=r'holds 3 input features'):
        layer(np.zeros((2, 6), np.float32))
