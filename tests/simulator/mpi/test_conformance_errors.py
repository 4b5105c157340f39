"""Conformance: errors real MPI raises too, with the same exception kind.

mpi4py sets ``ERRORS_RETURN`` on its communicators, so a broken call raises
``MPI.Exception`` whose ``Get_error_class()`` names the rule; the simulator
raises the same.
"""
import warnings

import numpy as np
import pytest

import simulator

SIZES = (1, 2, 3, 4, 8)


def _neighbours(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    return (rank + 1) % size, (rank - 1) % size


@pytest.mark.mpi(sizes=SIZES)
def test_receive_buffer_too_small_raises_err_truncate(mpi_comm, MPI):
    right, left = _neighbours(mpi_comm)
    request = mpi_comm.Isend(np.arange(8, dtype=np.float64), right, tag=21)
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Recv(np.zeros(3), source=left, tag=21)
    assert info.value.Get_error_class() == MPI.ERR_TRUNCATE
    request.Wait()
    # The communicator stays usable after the error.
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_send_to_rank_out_of_range_raises_err_rank(mpi_comm, MPI):
    size = mpi_comm.Get_size()
    for dest in (size, -5):
        with pytest.raises(MPI.Exception) as info:
            mpi_comm.Send(np.zeros(2), dest=dest, tag=0)
        assert info.value.Get_error_class() == MPI.ERR_RANK


@pytest.mark.mpi(sizes=SIZES)
def test_recv_from_rank_out_of_range_raises_err_rank(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Recv(np.zeros(2), source=mpi_comm.Get_size(), tag=0)
    assert info.value.Get_error_class() == MPI.ERR_RANK


@pytest.mark.mpi(sizes=SIZES)
def test_negative_tag_raises_err_tag(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Send(np.zeros(2), dest=mpi_comm.Get_rank(), tag=-3)
    assert info.value.Get_error_class() == MPI.ERR_TAG


@pytest.mark.mpi(sizes=SIZES)
def test_bad_root_raises_err_root(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Bcast(np.zeros(2), root=mpi_comm.Get_size())
    assert info.value.Get_error_class() == MPI.ERR_ROOT
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.bcast('x', root=-4)
    assert info.value.Get_error_class() == MPI.ERR_ROOT


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype,op_name', [
    ('bool', 'SUM'), ('bool', 'MAX'), ('complex64', 'MAX'),
    ('complex128', 'MIN'), ('float32', 'BAND'), ('float64', 'LAND'),
    ('complex64', 'BOR')])
def test_op_not_defined_for_dtype_raises_err_op(mpi_comm, MPI, dtype,
                                                op_name):
    # Every rank raises locally before communicating, so none is left
    # waiting in the collective.
    buf = np.ones(4, dtype=dtype)
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Allreduce(buf, np.zeros_like(buf), op=getattr(MPI, op_name))
    assert info.value.Get_error_class() == MPI.ERR_OP
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_mpi_exception_is_a_runtime_error_with_a_message(mpi_comm, MPI):
    with pytest.raises(RuntimeError) as info:
        mpi_comm.Send(np.zeros(1), dest=mpi_comm.Get_size(), tag=0)
    assert isinstance(info.value, MPI.Exception)
    assert str(info.value)
    assert isinstance(info.value.Get_error_class(), int)


@pytest.mark.mpi(sizes=SIZES)
def test_mpi_exception_str_repr_and_args_are_mpi4pys(mpi_comm, MPI):
    # A program prints and compares them: the error's text alone.
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.send(1, dest=mpi_comm.Get_size() + 98)
    error = info.value
    assert str(error) == 'MPI_ERR_RANK: invalid rank'
    assert repr(error) == 'MPI.Exception({})'.format(MPI.ERR_RANK)
    assert error.args == (MPI.ERR_RANK,)
    assert error.Get_error_string() == str(error)
    assert type(error).__module__ == 'mpi4py.MPI'


@pytest.mark.simulator_only(
    'the detail (which value was wrong) is what the simulator knows '
    'beyond the MPI error class; Open MPI gives none')
def test_mpi_exception_detail_is_a_note_that_tracebacks_show():
    import traceback

    def body(comm):
        with pytest.raises(simulator.mpi.Exception) as info:
            comm.send(1, dest=99)
        error = info.value
        assert str(error) == 'MPI_ERR_RANK: invalid rank'
        assert len(error.__notes__) == 1
        assert 'destination rank 99' in error.__notes__[0]
        assert error.__notes__[0] in ''.join(
            traceback.format_exception(error))
        # a copy keeps it
        import pickle
        assert pickle.loads(pickle.dumps(error)).__notes__ == \
            error.__notes__
    simulator.run(body, 2)


@pytest.mark.simulator_only(
    'the message to the other ranks is the simulator\'s')
def test_a_rank_failing_with_an_mpi_error_tells_the_others_its_detail():
    told = []

    def body(comm):
        if comm.rank == 0:
            comm.send(1, dest=99)
        with pytest.raises(simulator.RankFailedError) as info:
            comm.recv(source=0)
        told.append(str(info.value))
    with pytest.raises(simulator.mpi.Exception) as info:
        simulator.run(body, 2)
    assert 'destination rank 99' in info.value.__notes__[0]
    assert told and 'MPI_ERR_RANK: invalid rank (destination rank 99' in \
        told[0], told


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_uncommitted_datatype_raises_err_type_where_mpi_checks(
        mpi_comm, MPI):
    # A derived datatype must be committed before it communicates; Open
    # MPI checks it in p2p, persistent, collective calls, Pack and
    # Status.Get_elements, and not for a PROC_NULL peer (mpi4py reads no
    # buffer for one).
    rank = mpi_comm.Get_rank()
    pair = MPI.DOUBLE.Create_contiguous(2)
    buf = np.zeros(4)
    calls = [
        lambda: mpi_comm.Isend([buf, 1, pair], dest=rank),
        lambda: mpi_comm.Sendrecv([buf, 1, pair], dest=rank,
                                  recvbuf=[np.zeros(4), 1, pair],
                                  source=rank),
        lambda: mpi_comm.Send_init([buf, 1, pair], dest=rank),
        lambda: mpi_comm.Recv_init([buf, 1, pair], source=rank),
        lambda: mpi_comm.Bcast([buf, 1, pair], root=0),
        lambda: pair.Pack(buf, bytearray(64), 0, mpi_comm),
        lambda: MPI.Status().Get_elements(pair),
    ]
    for call in calls:
        with pytest.raises(MPI.Exception) as info:
            call()
        assert info.value.Get_error_class() == MPI.ERR_TYPE
    mpi_comm.Send([buf, 1, pair], dest=MPI.PROC_NULL)
    pair.Commit()
    got = np.zeros(4)
    mpi_comm.Sendrecv([np.arange(4.0), 1, pair], dest=rank,
                      recvbuf=[got, 1, pair], source=rank)
    assert got.tolist() == [0.0, 1.0, 0.0, 0.0]
    pair.Free()
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_p2p_buffer_none_is_refused_unless_the_peer_is_proc_null(
        mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    for call in (lambda: mpi_comm.Send(None, dest=rank),
                 lambda: mpi_comm.Irecv(None, source=rank),
                 lambda: mpi_comm.Send_init(None, dest=rank)):
        with pytest.raises(TypeError, match='expecting buffer or list'):
            call()
    # For PROC_NULL mpi4py reads nothing, not even a bad buffer.
    mpi_comm.Send(None, dest=MPI.PROC_NULL)
    mpi_comm.Recv('not a buffer', source=MPI.PROC_NULL)
    mpi_comm.Sendrecv(None, dest=MPI.PROC_NULL, recvbuf=None,
                      source=MPI.PROC_NULL)
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_reduction_count_mismatch_is_mpi4pys_value_error(mpi_comm, MPI):
    for call in (lambda: mpi_comm.Allreduce(np.zeros(3), np.zeros(2)),
                 lambda: mpi_comm.Allreduce(np.zeros(2), np.zeros(3)),
                 lambda: mpi_comm.Scan(np.zeros(3), np.zeros(4)),
                 lambda: mpi_comm.Exscan(np.zeros(3), np.zeros(2))):
        with pytest.raises(ValueError, match='mismatch in send count'):
            call()
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_predefined_op_on_a_derived_datatype_raises_err_op(mpi_comm, MPI):
    # Open MPI defines its predefined operations on predefined datatypes
    # only, even a contiguous run of doubles; a user operation is fine.
    pair = MPI.DOUBLE.Create_contiguous(2).Commit()
    data = np.arange(4.0)
    for call in (
            lambda: mpi_comm.Allreduce([data, 2, pair], [np.zeros(4), 2,
                                                         pair]),
            lambda: mpi_comm.Reduce([data, 2, pair], [np.zeros(4), 2, pair],
                                    op=MPI.MAX, root=0),
            lambda: MPI.SUM.Reduce_local([data, 2, pair],
                                         [np.zeros(4), 2, pair])):
        with pytest.raises(MPI.Exception) as info:
            call()
        assert info.value.Get_error_class() == MPI.ERR_OP

    def add(a, b, datatype):
        np.frombuffer(b, np.float64)[:] += np.frombuffer(a, np.float64)
    user = MPI.Op.Create(add, commute=True)
    out = np.zeros(4)
    mpi_comm.Allreduce([data, 2, pair], [out, 2, pair], op=user)
    assert out.tolist() == (data * mpi_comm.Get_size()).tolist()
    user.Free()
    pair.Free()


@pytest.mark.mpi(sizes=(2,))
def test_object_recv_into_a_buffer_holds_the_pickle(mpi_comm, MPI):
    # recv(buf) (deprecated) receives the pickle into buf, as mpi4py does.
    big = list(range(20000))
    if mpi_comm.Get_rank() == 0:
        mpi_comm.send(big, dest=1, tag=6)
    else:
        room = bytearray(10 ** 6)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)
            assert mpi_comm.recv(room, source=0, tag=6) == big
        assert room[:1] == b'\x80'         # a pickle's first byte
    # From PROC_NULL nothing arrives, whatever the room.
    assert mpi_comm.irecv(0, MPI.PROC_NULL).wait() is None
    assert mpi_comm.allreduce(1) == 2


@pytest.mark.simulator_only(
    'Open MPI 5.0.11 writes past the receive buffer instead: the process '
    'dies ("free(): invalid next size", or a segmentation fault), so only '
    'the simulator can say what went wrong')
def test_object_receives_too_small_for_the_pickle_are_reported():
    import mpi4py

    def body(comm):
        if comm.rank == 0:
            comm.send(list(range(20000)), dest=1, tag=1)
            comm.send([1, 2], dest=1, tag=2)
            comm.send(list(range(20000)), dest=1, tag=3)
            comm.send(list(range(20000)), dest=1, tag=4)
            return None
        with pytest.raises(simulator.mpi.Exception) as info:
            comm.irecv(source=0, tag=1).wait()
        assert info.value.Get_error_class() == simulator.mpi.ERR_TRUNCATE
        assert 'mpi4py.rc.irecv_bufsz' in info.value.__notes__[0]
        assert 'irecv of {} bytes'.format(mpi4py.rc.irecv_bufsz) in \
            info.value.__notes__[0]
        assert comm.irecv(source=0, tag=2).wait() == [1, 2]
        fitted = len(comm.irecv(10 ** 6, source=0, tag=3).wait())
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)
            with pytest.raises(simulator.mpi.Exception) as info:
                comm.recv(bytearray(100), source=0, tag=4)
        assert info.value.Get_error_class() == simulator.mpi.ERR_TRUNCATE
        return fitted
    assert simulator.run(body, 2) == [None, 20000]


@pytest.mark.mpi(sizes=(2,))
def test_buffered_sends_above_the_eager_limit_use_the_attached_buffer(
        mpi_comm, MPI):
    # Open MPI sends an eager-sized Bsend at once, with no buffer; a
    # bigger one is copied into the attached buffer and sent from there.
    peer = 1 - mpi_comm.Get_rank()
    mpi_comm.Bsend(np.zeros(900, np.uint8), dest=peer, tag=1)
    MPI.Attach_buffer(bytearray(12000))
    with pytest.raises(MPI.Exception) as info:
        MPI.Attach_buffer(bytearray(10))
    assert info.value.Get_error_class() == MPI.ERR_UNKNOWN
    for tag in (3, 4):
        mpi_comm.Bsend(np.zeros(5000, np.uint8), dest=peer, tag=tag)
    for nbytes, tag in ((900, 1), (5000, 3), (5000, 4)):
        mpi_comm.Recv(np.empty(nbytes, np.uint8), source=peer, tag=tag)
    mpi_comm.Barrier()
    assert len(MPI.Detach_buffer()) == 12000


def bsend(comm, nbytes, dest, tag):
    comm.Bsend(np.zeros(nbytes, np.uint8), dest=dest, tag=tag)


@pytest.mark.simulator_only(
    'after an MPI_ERR_BUFFER Open MPI 5.0.11 never delivers the process\'s '
    'later buffered sends (a Recv of one hung), so later tests would hang')
def test_buffered_sends_without_room_raise_err_buffer():
    # A buffered send above the eager limit holds its size (+
    # BSEND_OVERHEAD) of the attached buffer until it is received.
    MPI = simulator.mpi

    def body(comm):
        peer = 1 - comm.rank

        def bsend(nbytes, tag):
            comm.Bsend(np.zeros(nbytes, np.uint8), dest=peer, tag=tag)

        def refused(nbytes, tag, says):
            with pytest.raises(MPI.Exception, match=says) as info:
                bsend(nbytes, tag)
            assert info.value.Get_error_class() == MPI.ERR_BUFFER

        bsend(900, 1)                   # eager: no buffer needed
        refused(5000, 2, 'none is attached')
        MPI.Attach_buffer(bytearray(12000))
        bsend(5000, 3)
        bsend(5000, 4)
        refused(5000, 5, '10256 of its 12000 bytes are held by 2 message')
        comm.Barrier()                  # no receive before both checked
        for nbytes, tag in ((900, 1), (5000, 3), (5000, 4)):
            comm.Recv(np.empty(nbytes, np.uint8), source=peer, tag=tag)
        comm.Barrier()
        bsend(5000, 6)                  # received: their room is free
        comm.Recv(np.empty(5000, np.uint8), source=peer, tag=6)
        return len(MPI.Detach_buffer())
    assert simulator.run(body, 2) == [12000, 12000]

    def detached_too_soon(comm):
        # Detach_buffer returns once the buffered messages are received:
        # rank 0 waits there while rank 1 waits in a Send that rank 0's
        # later Recv would match (mpiexec hangs).
        other = 1 - comm.rank
        if comm.rank == 0:
            MPI.Attach_buffer(bytearray(20000))
            bsend(comm, 10000, other, 1)
            MPI.Detach_buffer()
            comm.Recv(np.empty(10000, np.uint8), source=other, tag=2)
        else:
            comm.Send(np.zeros(10000, np.uint8), dest=other, tag=2)
            comm.Recv(np.empty(10000, np.uint8), source=other, tag=1)
    with pytest.raises(simulator.DeadlockError,
                       match=r'rank 0: blocked in Detach_buffer\(waits until '
                             r'its 1 buffered message'):
        simulator.run(detached_too_soon, 2)

    def small(comm):
        # Open MPI's limits decide, whatever --send-mode makes of
        # standard sends.
        comm.Bsend(np.zeros(900, np.uint8), dest=1 - comm.rank)
        comm.Recv(np.empty(900, np.uint8), source=1 - comm.rank)
    assert simulator.run(small, 2, send_mode='rendezvous') == [None] * 2
