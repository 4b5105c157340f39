"""A single big array sent again with the same layout is one bare message.

The first array of more than FRAME_BYTES to a (peer, tag) goes in a frame
that both ends remember; the next one of the same dtype and shape is its
bare bytes only. Whatever else travels on the same tag in between (other
layouts, objects, tuples, small arrays, wildcard receives), every message
is read as what it is.
"""
import numpy as np
import pytest

from chainermn_lite import _wire

BIG = _wire.FRAME_BYTES // 4 + 1000         # float32 elements, > FRAME_BYTES


def _sequence():
    """(what is sent, sends it takes) on one tag, in order."""
    rs = np.random.RandomState(3)
    a = rs.randn(BIG).astype(np.float32)
    a2 = a.reshape(-1, 2) * 2           # same bytes, another shape
    b = a.astype(np.int32)              # same bytes, another dtype
    return [
        (a, 2),                 # layout frame + payload
        (a + 1, 1),             # bare
        (a2, 2),                # same size, other shape: framed again
        (a + 2, 2),             # back to a's layout: framed again
        (('obj', 7), 1),        # an object between two bare arrays
        (a + 3, 1),             # still bare
        ((a, np.arange(3)), 3),  # a tuple: frame + two payloads
        (np.arange(4.0), 1),    # a small inline array
        (a + 4, 1),             # still bare
        (b, 2),                 # same size, other dtype: framed
        (b + 1, 1),             # bare
        (a[::-1].copy(), 2),    # a's layout again: framed
    ]


def _check(got, want):
    if isinstance(want, tuple) and isinstance(want[0], str):
        assert got == want
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()        # bit-identical


@pytest.mark.mpi(sizes=(2,))
@pytest.mark.parametrize('wildcard', (False, True))
def test_bare_messages_never_misread(mpi_comm, MPI, make_communicator,
                                     counting_comm, wildcard):
    counted = counting_comm(mpi_comm)
    comm = make_communicator(counted)
    sequence = _sequence()
    for tag in (5, 6):          # a second tag starts with its own layouts
        for want, sends in sequence:
            if comm.rank == 0:
                before = len(counted.sends)
                if isinstance(want[0], str):
                    comm.send_obj(want, 1, tag)
                else:
                    comm.send(want, 1, tag)
                assert len(counted.sends) - before == sends, want
            else:
                source, wtag = (MPI.ANY_SOURCE, MPI.ANY_TAG) if wildcard \
                    else (0, tag)
                if isinstance(want[0], str):
                    got = comm.recv_obj(source, tag=wtag)
                else:
                    got = comm.recv(source, wtag)
                _check(got, want)


@pytest.mark.mpi(sizes=(2,))
def test_big_array_in_chunks_is_never_bare(mpi_comm, make_communicator,
                                           counting_comm):
    # More than max_buf_len: a frame and chunks every time, as before.
    counted = counting_comm(mpi_comm)
    comm = make_communicator(counted)
    comm.set_config('max_buf_len', 10000)
    x = np.arange(BIG, dtype=np.float32)
    for step in range(3):
        if comm.rank == 0:
            before = len(counted.sends)
            comm.send(x + step, 1, 2)
            assert len(counted.sends) - before == 1 + -(-x.nbytes // 10000)
        else:
            _check(comm.recv(0, 2), x + step)


@pytest.mark.mpi(sizes=(2,))
def test_communicators_over_one_mpi_comm_share_layouts(mpi_comm,
                                                       make_communicator):
    # Layouts belong to the MPI communicator's message stream: a second
    # chainermn_lite communicator over it reads the first one's bare
    # messages, wildcard receives included.
    comm = make_communicator(mpi_comm)
    other = make_communicator(mpi_comm)     # creating one is collective
    x = np.arange(BIG, dtype=np.float32)
    if comm.rank == 0:
        for step in range(3):
            comm.send(x + step, 1, 3)
            other.send(x - step, 1, 3)
    else:
        for step in range(3):
            _check(other.recv(0, 3), x + step)
            _check(comm.recv(mpi_comm.Get_rank() - 1, 3), x - step)


@pytest.mark.mpi(sizes=(2,))
@pytest.mark.simulator_only('Open MPI 5 crashes at exit after a truncated '
                            'receive of a big message')
def test_bare_message_without_a_layout_is_an_error(mpi_comm, MPI,
                                                   make_communicator):
    # A second Python object of the same MPI communicator never saw the
    # layout: it must say so, not read 70 KB of floats as a frame.
    comm = make_communicator(mpi_comm)
    other = make_communicator(MPI.Intracomm(mpi_comm))
    x = np.ones(BIG, np.float32)
    if comm.rank == 0:
        for tag in (3, 4):
            comm.send(x, 1, tag)
            comm.send(x, 1, tag)        # bare
    else:
        # in the order sent: a bare message waits for its receive
        _check(comm.recv(0, 3), x)
        with pytest.raises(RuntimeError, match='rank 1 received a bare '
                           'array message of more than {} bytes from '
                           'rank 0 \\(tag 3\\) but knows no layout'.format(
                               _wire.FRAME_BYTES)):
            other.recv(0, 3)
        _check(comm.recv(0, 4), x)
        with pytest.raises(RuntimeError, match='rank 1 received a bare '
                           'array message of more than {} bytes from '
                           'rank 0 \\(tag 4\\)'.format(_wire.FRAME_BYTES)):
            other.recv_obj(0, tag=4)


@pytest.mark.mpi(sizes=(2,))
def test_bare_message_of_another_size_is_an_error(mpi_comm, MPI,
                                                  make_communicator):
    # A receiver that expects a layout probes the size: a big message of
    # another size that is no frame (a raw Send on the same tag) is named.
    comm = make_communicator(mpi_comm)
    x = np.ones(BIG, np.float32)
    if comm.rank == 0:
        comm.send(x, 1, 3)
        mpi_comm.Send(np.ones(BIG + 5, np.float32), 1, 3)
    else:
        _check(comm.recv(0, 3), x)
        with pytest.raises(RuntimeError, match='rank 1 received a bare '
                           'array message of {} bytes from rank 0 \\(tag '
                           '3\\)'.format(4 * (BIG + 5))):
            comm.recv(0, 3)
