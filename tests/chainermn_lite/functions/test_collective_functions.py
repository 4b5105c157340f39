"""Differentiable collectives: values and gradients on every rank.

Rank k's loss weights what it received; the expected gradient of each
input is the sum over ranks of those weights (derived per test).
"""
import chainer
import chainer.functions as F
import numpy as np
import pytest

import chainermn_lite

SIZES = (1, 2, 3, 4)



def _x(rank, shape=(2, 3), dtype=np.float32):
    rs = np.random.RandomState(100 + rank)
    return chainer.Variable(rs.randn(*shape).astype(dtype))


def _triangle(n):
    return n * (n + 1) / 2


@pytest.mark.mpi(sizes=SIZES)
def test_allgather(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    x = _x(r)
    ys = chainermn_lite.functions.allgather(comm, x)
    assert isinstance(ys, tuple) and len(ys) == n
    for j, y in enumerate(ys):
        np.testing.assert_array_equal(y.array, _x(j).array)
    loss = sum(F.sum(y) * (r + 1) * (j + 2) for j, y in enumerate(ys))
    loss.backward()
    np.testing.assert_allclose(x.grad, np.full((2, 3), (r + 2) *
                                               _triangle(n)))


@pytest.mark.mpi(sizes=SIZES)
def test_alltoall(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    xs = [_x(r * 10 + j, shape=(j + 1,)) for j in range(n)]
    ys = chainermn_lite.functions.alltoall(comm, xs)
    for i, y in enumerate(ys):
        np.testing.assert_array_equal(y.array, _x(i * 10 + r,
                                                  shape=(r + 1,)).array)
    sum(F.sum(y) * (r + 1) * (i + 1) for i, y in enumerate(ys)).backward()
    for j, x in enumerate(xs):
        np.testing.assert_allclose(x.grad, np.full(j + 1, (j + 1) * (r + 1)))
    with pytest.raises(ValueError, match='expecting {} variables'.format(n)):
        chainermn_lite.functions.alltoall(comm, xs + [xs[0]])


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('root_of', [lambda n: 0, lambda n: n - 1])
def test_bcast_non_root_keeps_its_backward_path(
        mpi_comm, root_of, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    root = root_of(n)
    x = _x(root) if r == root else None
    y = chainermn_lite.functions.bcast(comm, x, root=root)
    np.testing.assert_array_equal(y.array, _x(root).array)
    F.sum(y * (r + 1)).backward()     # chainer#5512: non-roots backprop too
    if r == root:
        np.testing.assert_allclose(x.grad, np.full((2, 3), _triangle(n)))


@pytest.mark.mpi(sizes=SIZES)
def test_gather(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    x = _x(r)
    out = chainermn_lite.functions.gather(comm, x, root=0)
    if r == 0:
        assert len(out) == n
        for j, y in enumerate(out):
            np.testing.assert_array_equal(y.array, _x(j).array)
        sum(F.sum(y) * (j + 1) for j, y in enumerate(out)).backward()
    else:
        assert out.shape == (0,)          # a delegate to backprop from
        out.backward()
    np.testing.assert_allclose(x.grad, np.full((2, 3), r + 1))


@pytest.mark.mpi(sizes=SIZES)
def test_scatter(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    root = n - 1
    xs = [_x(j, shape=(j + 1, 2)) for j in range(n)] if r == root else None
    y = chainermn_lite.functions.scatter(comm, xs, root=root)
    np.testing.assert_array_equal(y.array, _x(r, shape=(r + 1, 2)).array)
    F.sum(y * (r + 1)).backward()
    if r == root:
        for j, x in enumerate(xs):
            np.testing.assert_allclose(x.grad, np.full((j + 1, 2), j + 1))


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
def test_allreduce(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    x = _x(r, dtype=dtype)
    y = chainermn_lite.functions.allreduce(comm, x)
    assert y.dtype == dtype
    expected = sum(_x(j, dtype=np.float64).array for j in range(n))
    tol = 1e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(y.array, expected, rtol=tol, atol=tol)
    F.sum(y * (r + 1)).backward()
    np.testing.assert_allclose(x.grad, np.full((2, 3), _triangle(n)))


@pytest.mark.mpi(sizes=(2,))
def test_collective_on_input_without_grad_still_backprops(
        mpi_comm, make_communicator):
    # Rank 0's input is a constant; its backward must still join the
    # collective, or rank 1's backward would wait forever.
    comm = make_communicator(mpi_comm)
    if comm.rank == 0:
        y = chainermn_lite.functions.allreduce(comm, np.ones(3, np.float32))
        F.sum(y).backward()
    else:
        x = _x(1, shape=(3,))
        y = chainermn_lite.functions.allreduce(comm, x)
        F.sum(y).backward()
        np.testing.assert_allclose(x.grad, np.full(3, 2.0))
