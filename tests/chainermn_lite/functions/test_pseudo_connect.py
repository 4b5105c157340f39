"""pseudo_connect: both spellings (seed guide and ChainerMN 7.8.1)."""
import chainer
import chainer.functions as F
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.functions import pseudo_connect


def _var(values):
    return chainer.Variable(np.asarray(values, dtype=np.float32))


def test_one_actual_variable_is_a_variable_and_a_one_tuple():
    x = _var([1, 2, 3])
    d = _var([5])
    psi = pseudo_connect(d, x)
    assert isinstance(psi, chainer.Variable)
    np.testing.assert_array_equal(psi.array, [1, 2, 3])
    unpacked, = pseudo_connect(d, x)          # ChainerMN 7.8.1 spelling
    assert isinstance(unpacked, chainer.Variable)
    np.testing.assert_array_equal(unpacked.array, [1, 2, 3])
    assert len(psi) == 3                      # still a Variable's len
    F.sum(psi * 2).backward()
    np.testing.assert_array_equal(x.grad, [2, 2, 2])
    np.testing.assert_array_equal(d.grad, [0])   # reached, zero gradient


def test_several_actual_variables_give_a_tuple():
    a, b, d = _var([1]), _var([2, 3]), _var([0])
    ys = pseudo_connect(d, a, b)
    assert isinstance(ys, tuple) and len(ys) == 2
    (F.sum(ys[0]) * 3 + F.sum(ys[1])).backward()
    np.testing.assert_array_equal(a.grad, [3])
    np.testing.assert_array_equal(b.grad, [1, 1])
    np.testing.assert_array_equal(d.grad, [0])


def test_backward_reaches_the_delegates_creator():
    x = _var([1, 2])
    d = x * 10                                # stands in for a send
    psi = pseudo_connect(d, _var([4.0]))
    psi.backward()
    np.testing.assert_array_equal(x.grad, [0, 0])  # d's creator ran


def test_none_delegate_and_bad_arguments():
    x = _var([1, 2])
    y = pseudo_connect(None, x)
    np.testing.assert_array_equal(y.array, [1, 2])
    with pytest.raises(TypeError, match='at least one actual variable'):
        pseudo_connect(x)
    with pytest.raises(TypeError, match='a tuple of 2'):
        pseudo_connect((x, x), x)


@pytest.mark.mpi(sizes=(2,))
def test_guide_two_sends_joined_by_pseudo_connect(mpi_comm, make_communicator):
    # The seed guide's Model_0 / Model_1: two sends, one returned psi.
    comm = make_communicator(mpi_comm)
    f = chainermn_lite.functions
    if comm.rank == 0:
        x = _var(np.arange(6).reshape(2, 3))
        z1, z2 = x * 2, x * 3
        phi1 = f.send(z1, comm, rank=1)
        phi2 = f.send(z2, comm, rank=1)
        psi = f.pseudo_connect(phi1, phi2)
        psi.backward()
        # g = z1 * z2 summed on rank 1: dL/dx = 2 * z2 + 3 * z1 = 12 x
        np.testing.assert_allclose(x.grad, 12 * x.array)
    else:
        z1 = f.recv(comm, rank=0)
        z2 = f.recv(comm, rank=0)
        F.sum(z1 * z2).backward()
