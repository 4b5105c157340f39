"""vecpar functions: feature split/gather and vecpar_linear vs Chainer."""
import chainer
import chainer.functions as F
import numpy as np
import pytest

from chainermn_lite.functions import vecpar
from chainermn_lite.parallel.grid import axis_bounds


def _close(actual, expected, what):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5,
                               err_msg=what)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_split_then_gather_round_trip_and_gradient(mpi_comm):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    rs = np.random.RandomState(3)
    x = rs.randn(4, 11).astype(np.float32)  # 11 features: uneven slices
    weights = rs.randn(4, 11).astype(np.float32)
    x_var = chainer.Variable(x)
    mine = vecpar.split_features(x_var, mpi_comm)
    start, stop = axis_bounds(11, size)[rank]
    np.testing.assert_array_equal(mine.array, x[:, start:stop])
    # A rank-dependent scale in between: the whole gradient must combine
    # every rank's slice, not repeat this rank's.
    scaled = mine * float(rank + 1)
    whole = vecpar.gather_features(scaled, mpi_comm)
    scale = np.concatenate([np.full(b - a, r + 1.0) for r, (a, b) in
                            enumerate(axis_bounds(11, size))])
    _close(whole.array, x * scale, 'gathered')
    F.sum(whole * weights).backward()
    _close(x_var.grad, weights * scale, 'gradient of the whole input')


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_vecpar_linear_equals_linear(mpi_comm):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for in_size, out_size, use_bias in ((7, 5, True), (9, 13, False)):
        rs = np.random.RandomState(in_size)
        x = rs.randn(3, in_size).astype(np.float32)
        W = rs.randn(out_size, in_size).astype(np.float32)
        b = rs.randn(out_size).astype(np.float32)
        gy = rs.randn(3, out_size).astype(np.float32)
        x_full, W_full = chainer.Variable(x), chainer.Variable(W)
        b_full = chainer.Variable(b) if use_bias else None
        y_full = F.linear(x_full, W_full, b_full)
        y_full.grad = gy
        y_full.backward()
        i0, i1 = axis_bounds(in_size, size)[rank]
        o0, o1 = axis_bounds(out_size, size)[rank]
        x_r = chainer.Variable(np.ascontiguousarray(x[:, i0:i1]))
        W_r = chainer.Variable(np.ascontiguousarray(W[:, i0:i1]))
        b_r = chainer.Variable(b[o0:o1].copy()) if use_bias else None
        y_r = vecpar.vecpar_linear(x_r, W_r, b_r, mpi_comm, out_size)
        what = 'in {} out {} rank {}'.format(in_size, out_size, rank)
        _close(y_r.array, y_full.array[:, o0:o1], what + ' y')
        y_r.grad = np.ascontiguousarray(gy[:, o0:o1])
        y_r.backward()
        _close(x_r.grad, x_full.grad[:, i0:i1], what + ' gx')
        _close(W_r.grad, W_full.grad[:, i0:i1], what + ' gW')
        if use_bias:
            _close(b_r.grad, b_full.grad[o0:o1], what + ' gb')


@pytest.mark.mpi(sizes=(2, 3))
def test_bad_slices_name_ranks_and_shapes(mpi_comm):
    rank = mpi_comm.Get_rank()
    # Rank 0 holds one feature too many for any array_split layout.
    x = np.zeros((2, 3 + (rank == 0) * 2), np.float32)
    with pytest.raises(ValueError, match=r'shapes by rank \[\(2, 5\)'):
        vecpar.gather_features(x, mpi_comm)
    # A 1-d slice on the last rank: it raises on its shape, the others
    # learn that it did instead of waiting for it.
    last = mpi_comm.Get_size() - 1
    with pytest.raises(ValueError, match=r'expects \(batch, features\)'
                       if rank == last else 'gather_features .rank {}.: '
                       'rank {} could not send'.format(rank, last)):
        vecpar.gather_features(x[0] if rank == last else x, mpi_comm)
    W = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r'rank {} holds 3 input features '
                       r'.* x of shape \(2, 2\)'.format(rank)):
        vecpar.vecpar_linear(np.zeros((2, 2), np.float32), W, None,
                             mpi_comm, 4)
