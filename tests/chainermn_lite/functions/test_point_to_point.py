"""functions.send / functions.recv: values, gradients, tuples, errors."""
import chainer
import chainer.functions as F
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.functions import _wire



def _partner(rank, size):
    """Pairs (0,1), (2,3)...; a last odd rank has no partner."""
    peer = rank ^ 1
    return peer if peer < size else None


@pytest.mark.mpi(sizes=(2, 3, 4))
def test_round_trip_values_and_gradients(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    peer = _partner(comm.rank, comm.size)
    if peer is None:
        return
    rs = np.random.RandomState(7)
    x_data = rs.randn(5, 3).astype(np.float32)
    w = rs.randn(5, 3).astype(np.float32)
    for _ in range(3):  # later iterations must not see stale messages
        if comm.rank % 2 == 0:
            x = chainer.Variable(x_data.copy())
            phi = chainermn_lite.functions.send(x * 2, comm, rank=peer)
            assert phi.shape == (0,) and phi.name == 'delegate_variable'
            y = chainermn_lite.functions.recv(comm, rank=peer,
                                              delegate_variable=phi)
            np.testing.assert_allclose(y.array, x_data * 2 * 3 + 1,
                                       rtol=1e-6)
            F.sum(y * w).backward()
            # y = 6 x + 1, so dL/dx = 6 w
            np.testing.assert_allclose(x.grad, 6 * w, rtol=1e-6)
        else:
            h = chainermn_lite.functions.recv(comm, rank=peer)
            assert h.shape == (5, 3) and h.dtype == np.float32
            phi = chainermn_lite.functions.send(h * 3 + 1, comm, rank=peer)
            phi.backward()


@pytest.mark.mpi(sizes=(2,))
def test_tuples_travel_with_shapes_and_dtypes(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(4, dtype=np.float64)
    if comm.rank == 0:
        va, vb = chainer.Variable(a), chainer.Variable(b)
        phi = chainermn_lite.functions.send((va, vb), comm, rank=1, tag=3)
        phi.backward()
        np.testing.assert_array_equal(va.grad, np.full_like(a, 2))
        np.testing.assert_array_equal(vb.grad, np.full_like(b, 5))
        assert vb.grad.dtype == np.float64
    else:
        ya, yb = chainermn_lite.functions.recv(comm, rank=0, tag=3)
        np.testing.assert_array_equal(ya.array, a)
        np.testing.assert_array_equal(yb.array, b)
        assert yb.dtype == np.float64
        loss = F.sum(ya) * 2 + F.cast(F.sum(yb) * 5, np.float32)
        loss.backward()


@pytest.mark.mpi(sizes=(2,))
def test_force_tuple_and_unused_output_gets_zero_gradient(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    if comm.rank == 0:
        a = chainer.Variable(np.ones(3, np.float32))
        b = chainer.Variable(np.ones(2, np.float32))
        chainermn_lite.functions.send([a, b], comm, rank=1).backward()
        np.testing.assert_array_equal(a.grad, [4, 4, 4])
        np.testing.assert_array_equal(b.grad, [0, 0])
    else:
        ya, _ = chainermn_lite.functions.recv(comm, rank=0, force_tuple=True)
        F.sum(ya * 4).backward()


@pytest.mark.mpi(sizes=(2,))
def test_recv_takes_chainermns_positional_arguments(
        mpi_comm, make_communicator):
    # ChainerMN 7.8.1: recv(communicator, rank, delegate_variable, tag,
    # force_tuple); chainermn_lite's own `device` comes after them.
    comm = make_communicator(mpi_comm)
    if comm.rank == 0:
        x = chainer.Variable(np.arange(3, dtype=np.float32))
        chainermn_lite.functions.send(x, comm, 1, 7).backward()
        np.testing.assert_array_equal(x.grad, [2, 2, 2])
    else:
        ys = chainermn_lite.functions.recv(comm, 0, None, 7, True)
        assert isinstance(ys, tuple) and len(ys) == 1
        np.testing.assert_array_equal(ys[0].array, [0, 1, 2])
        F.sum(ys[0] * 2).backward()


@pytest.mark.mpi(sizes=(2,))
def test_send_of_input_without_grad_still_backprops(
        mpi_comm, make_communicator):
    # chainermn#214: a send whose input needs no gradient must still take
    # the peer's gradient in backward, or the peer waits forever.
    comm = make_communicator(mpi_comm)
    if comm.rank == 0:
        phi = chainermn_lite.functions.send(np.ones((2, 2), np.float32),
                                            comm, rank=1)
        phi.backward()
    else:
        y = chainermn_lite.functions.recv(comm, rank=0)
        F.sum(y).backward()
    comm.mpi_comm.Barrier()


@pytest.mark.mpi(sizes=(2,))
def test_gradient_never_taken_for_an_activation(mpi_comm, make_communicator):
    # A gradient left on the wire (tag t, backward) must not be received
    # as the next activation (tag t, forward).
    comm = make_communicator(mpi_comm)
    if comm.rank == 1:
        comm.send(np.full(4, -1, np.float32), 0, _wire.backward_tag(0))
        chainermn_lite.functions.send(np.arange(4, dtype=np.float32), comm,
                                      rank=0)
    else:
        y = chainermn_lite.functions.recv(comm, rank=1)
        np.testing.assert_array_equal(y.array, np.arange(4))
        stale = comm.recv(1, _wire.backward_tag(0))
        np.testing.assert_array_equal(stale, np.full(4, -1))


@pytest.mark.mpi(sizes=(1, 2))
def test_bad_peers_and_tags_are_refused_with_the_value(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    x = chainer.Variable(np.ones(2, np.float32))
    with pytest.raises(ValueError, match='itself'):
        chainermn_lite.functions.send(x, comm, rank=comm.rank)
    with pytest.raises(ValueError, match='itself'):
        chainermn_lite.functions.recv(comm, rank=comm.rank)
    with pytest.raises(ValueError, match='rank 5 is out of range'):
        chainermn_lite.functions.send(x, comm, rank=5)
    with pytest.raises(ValueError, match="tag must be an int >= 0, got -1"):
        chainermn_lite.functions.recv(comm, rank=(comm.rank + 1) % 2,
                                      tag=-1)


def test_tag_convention_maps_back_and_forth():
    wire_tags = set()
    for tag in (0, 1, 7, 2 ** 20):
        forward, backward = _wire.forward_tag(tag), _wire.backward_tag(tag)
        assert _wire.user_tag(forward) == (tag, _wire.FORWARD)
        assert _wire.user_tag(backward) == (tag, _wire.BACKWARD)
        wire_tags.update((forward, backward))
    assert len(wire_tags) == 8          # no two user tags share a wire tag
    assert _wire.user_tag(np.int32(5)) == (2, 'backward')
    for bad in (-1, True, 1.0):
        with pytest.raises(ValueError, match='user_tag: tag must be an int '
                           '>= 0, got {}'.format(bad)):
            _wire.user_tag(bad)


@pytest.mark.mpi(sizes=(2,))
def test_functions_use_the_forward_and_backward_tags(
        mpi_comm, make_communicator):
    # functions.send / recv are the communicator's plain messages on
    # forward_tag(tag); their gradients, whose layout both sides know, are
    # bare bytes on backward_tag(tag): one MPI message per array, exactly
    # what a hand-written mpi4py program sends.
    comm = make_communicator(mpi_comm)
    data = np.arange(3, dtype=np.float32)
    if comm.rank == 0:
        x = chainer.Variable(data.copy())
        chainermn_lite.functions.send(x, comm, rank=1, tag=4).backward()
        np.testing.assert_array_equal(x.grad, np.full(3, 5))
        y = chainermn_lite.functions.recv(comm, rank=1, tag=9)
        np.testing.assert_array_equal(y.array, data * 2)
        y.grad = np.full(3, 7, np.float32)
        y.backward()
    else:
        np.testing.assert_array_equal(comm.recv(0, _wire.forward_tag(4)),
                                      data)
        mpi_comm.Send(np.full(3, 5, np.float32), 0, _wire.backward_tag(4))
        comm.send(data * 2, 0, _wire.forward_tag(9))
        got = np.zeros(3, np.float32)
        mpi_comm.Recv(got, 0, _wire.backward_tag(9))
        np.testing.assert_array_equal(got, np.full(3, 7))


@pytest.mark.mpi(sizes=(2,))
def test_big_tuple_gradients_come_back_exactly(mpi_comm, make_communicator):
    # Bare-byte gradients bigger than max_buf_len travel in pieces; a
    # tuple's arrays keep their own dtypes and shapes.
    comm = make_communicator(mpi_comm)
    comm.set_config('max_buf_len', 1000)
    a = np.arange(3000, dtype=np.float32).reshape(30, 100)
    b = np.arange(7, dtype=np.float64)
    if comm.rank == 0:
        va, vb = chainer.Variable(a), chainer.Variable(b)
        chainermn_lite.functions.send((va, vb), comm, rank=1).backward()
        np.testing.assert_array_equal(va.grad, a * 3)
        np.testing.assert_array_equal(vb.grad, np.full(7, 2.0))
        assert va.grad.dtype == np.float32 and vb.grad.dtype == np.float64
    else:
        ya, yb = chainermn_lite.functions.recv(comm, rank=0)
        (F.sum(ya * ya) * 1.5 + F.cast(F.sum(yb) * 2, np.float32)).backward()


@pytest.mark.mpi(sizes=(2,))
def test_round_trip_is_four_messages(mpi_comm, make_communicator,
                                     counting_comm):
    # The model-parallel round trip of a big activation moves what a
    # hand-written mpi4py program moves: one message each way forward, one
    # each way backward, each holding the array's bytes only (the first
    # step also sends the layout: one frame more per direction).
    counted = counting_comm(mpi_comm)
    comm = make_communicator(counted)
    rs = np.random.RandomState(11)
    x_data = rs.randn(128, 1000).astype(np.float32)
    w = rs.randn(128, 1000).astype(np.float32)
    nbytes = x_data.nbytes
    for step in range(4):
        before = len(counted.sends)
        if comm.rank == 0:
            x = chainer.Variable(x_data + step)
            phi = chainermn_lite.functions.send(x, comm, rank=1)
            y = chainermn_lite.functions.recv(comm, rank=1,
                                              delegate_variable=phi)
            # bit-identical to the same arithmetic in one process
            assert y.array.tobytes() == ((x_data + step) * 3).tobytes()
            F.sum(y * w).backward()
            assert x.grad.tobytes() == (w * 3).tobytes()
        else:
            h = chainermn_lite.functions.recv(comm, rank=0)
            chainermn_lite.functions.send(h * 3, comm, rank=0).backward()
        sizes = [n for _, _, n in counted.sends[before:]]
        if step == 0:
            assert sizes[1:] == [nbytes, nbytes] and sizes[0] < 1024
        else:
            assert sizes == [nbytes, nbytes]
