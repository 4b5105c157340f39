"""simulator.mpi.request: a non-blocking request the program leaves
neither completed nor freed is named when its rank's program ends (a
warning: real MPIs carry on), and a pending collective's send buffer
written before its completion is an error, as is a communicator from
Idup used before its request completes (Open MPI does not check them:
the tests run in-process)."""

import re
import sys
import time
import warnings

import numpy as np
import pytest

import nonblocking_reductions
import simulator
from simulator.errors import IncompleteRequestWarning

pytestmark = pytest.mark.simulator_only(
    'checks a rule Open MPI does not check: every request completed')




def test_requests_left_incomplete_are_named_with_rank_and_line(warnings_of):
    def body(comm):
        if comm.rank == 0:
            comm.Isend(np.arange(4.0), dest=1, tag=3)       # left
            comm.isend('x', dest=1, tag=4)                  # left
        else:
            comm.Recv(np.zeros(4), source=0, tag=3)
            comm.irecv(source=0, tag=4)                     # left
        comm.Iallreduce(np.ones(2), np.zeros(2))            # left
    messages = warnings_of(body, IncompleteRequestWarning)
    lines = [n for n, line in enumerate(open(__file__), 1)
             if line.rstrip().endswith('# left')]
    expected = [
        "rank 0's Isend(peer=1, tag=3, comm=MPI_COMM_WORLD) at {}:{}".format(
            __file__, lines[0]),
        "rank 0's isend(peer=1, tag=4", "rank 1's irecv(peer=0, tag=4",
        "rank 0's Iallreduce(comm=MPI_COMM_WORLD",
        "rank 1's Iallreduce(comm=MPI_COMM_WORLD"]
    for start in expected:
        assert sum(m.startswith(start) for m in messages) == 1, (start,
                                                                 messages)
    assert len(messages) == 5
    assert all('was never completed' in m for m in messages)


def test_completed_tested_and_freed_requests_are_not(warnings_of):
    def body(comm):
        peer = 1 - comm.rank
        a = comm.Isend(np.ones(2), dest=peer, tag=1)
        b = comm.Irecv(np.zeros(2), source=peer, tag=1)
        a.Wait()
        while not b.Test():
            pass
        c = comm.Isend(np.ones(2), dest=peer, tag=2)
        c.Free()
        comm.Recv(np.zeros(2), source=peer, tag=2)
        r = comm.Ibarrier()
        simulator.mpi.Request.Waitall([r])
        for i in range(100):        # many: the kept list is pruned
            comm.Isend(np.ones(1), dest=comm.rank, tag=i).Wait()
            comm.Recv(np.zeros(1), source=comm.rank, tag=i)
    assert warnings_of(body, IncompleteRequestWarning) == []


def test_persistent_and_paired_requests_left_incomplete_are_named(
        warnings_of):
    def body(comm):
        peer = 1 - comm.rank
        send = comm.Send_init(np.ones(2), dest=peer, tag=1)
        recv = comm.Recv_init(np.zeros(2), source=peer, tag=1)
        simulator.mpi.Prequest.Startall([send, recv])
        simulator.mpi.Request.Waitall([send, recv])     # a round done
        send.Start()                                    # left
        recv.Start()                                    # left
        comm.Isendrecv(np.ones(1), peer, 2, np.zeros(1), peer, 2)  # left
        comm.Barrier()      # (both ranks' messages posted)
    messages = warnings_of(body, IncompleteRequestWarning)
    lines = [n for n, line in enumerate(open(__file__), 1)
             if line.rstrip().endswith('# left')][-3:]
    for rank in (0, 1):
        for op, line in zip(('Send_init', 'Recv_init', 'Isendrecv'), lines):
            start = "rank {}'s {}(peer={}".format(rank, op, 1 - rank)
            found = [m for m in messages if m.startswith(start)]
            where = ' at {}:{} '.format(__file__, line)
            assert len(found) == 1 and where in found[0], (start, messages)
    assert len(messages) == 6


def test_persistent_and_paired_requests_completed_or_freed_are_not(
        warnings_of):
    def body(comm):
        peer = 1 - comm.rank
        send = comm.Send_init(np.ones(2), dest=peer, tag=1)
        recv = comm.Recv_init(np.zeros(2), source=peer, tag=1)
        for _ in range(3):
            simulator.mpi.Prequest.Startall([send, recv])
            simulator.mpi.Request.Waitall([send, recv])
        send.Start()
        recv.Start()
        send.Free()         # active: it completes on its own
        recv.Wait()
        recv.Free()
        comm.Isendrecv(np.ones(1), peer, 2, np.zeros(1), peer, 2).Wait()
        pair = comm.Isendrecv_replace(np.ones(1), peer, 4, peer, 4)
        while not pair.Test():
            pass
        comm.Isendrecv(np.ones(1), peer, 5, np.zeros(1), peer, 5).Free()
        comm.Barrier()
    assert warnings_of(body, IncompleteRequestWarning) == []


def test_a_receive_nothing_matched_is_an_error_not_also_a_warning():
    # It is reported when the run ends (UnmatchedMessageError: "left
    # posted"); a warning as well would say it twice.
    def body(comm):
        if comm.rank == 0:
            comm.Irecv(np.zeros(1), source=1, tag=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with pytest.raises(simulator.UnmatchedMessageError):
            simulator.run(body, 2)
    assert not [w for w in caught
                if issubclass(w.category, IncompleteRequestWarning)]


def _start_collective(comm, call, send):
    """Start the non-blocking collective ``call`` with ``send`` as this
    rank's send buffer; the request."""
    size = comm.size
    if call == 'Iallreduce':
        return comm.Iallreduce(send, np.zeros_like(send))
    if call == 'Ireduce':
        return comm.Ireduce(send, np.zeros_like(send), root=1)
    if call == 'Iscan':
        return comm.Iscan(send, np.zeros_like(send))
    if call == 'Ibcast':
        return comm.Ibcast(send, root=0)
    if call == 'Igather':
        return comm.Igather(send, np.zeros(send.size * size), root=1)
    if call == 'Iallgather':
        return comm.Iallgather(send, np.zeros(send.size * size))
    if call == 'Ialltoall':
        return comm.Ialltoall(send, np.zeros_like(send))
    if call == 'Ireduce_scatter_block':
        return comm.Ireduce_scatter_block(send, np.zeros(send.size // size))
    raise AssertionError(call)


_COLLECTIVES = ('Iallreduce', 'Ireduce', 'Iscan', 'Ibcast', 'Igather',
                'Iallgather', 'Ialltoall', 'Ireduce_scatter_block')


@pytest.mark.parametrize('call', _COLLECTIVES)
def test_send_buffer_of_a_pending_collective_written_is_reported(call):
    # Open MPI may send either contents (by timing); the simulator reads
    # what the buffer held at the call and says so at completion.
    def body(comm):
        send = np.arange(4.0) + comm.rank
        request = _start_collective(comm, call, send)
        if comm.rank == 0:
            send[1] = -1.0          # written before the Wait
        request.Wait()
    with pytest.raises(simulator.errors.BufferModifiedError,
                       match="rank 0 wrote to the send buffer of {}"
                       .format(call)):
        simulator.run(body, 2)


@pytest.mark.parametrize('call', ['Ibcast', 'Igather', 'Iscatter',
                                  'Iallgather', 'Iallgatherv', 'Ialltoall'])
def test_receive_buffer_of_a_pending_collective_written_is_reported(call):
    # Open MPI may have written the data there already (the write
    # clobbers it) or write it later; the simulator writes at completion,
    # after checking the buffer was left alone.
    def body(comm):
        size, rank = comm.size, comm.rank
        send = np.arange(4.0) + rank
        recv = np.zeros(4 * size)
        if call == 'Ibcast':
            recv = send if rank == 1 else recv[:4]
            request = comm.Ibcast(recv, root=0)
        elif call == 'Igather':
            request = comm.Igather(send, recv, root=1)
        elif call == 'Iscatter':
            recv = recv[:4]
            request = comm.Iscatter(np.arange(4.0 * size), recv, root=0)
        elif call == 'Iallgatherv':
            request = comm.Iallgatherv(send, [recv, [4] * size])
        else:
            request = getattr(comm, call)(send, recv if call ==
                                          'Iallgather' else recv[:4])
        if rank == 1:
            recv[1] = -1.0          # written before the Wait
        request.Wait()
        return recv.tolist()
    with pytest.raises(simulator.errors.BufferModifiedError,
                       match="rank 1 wrote to the receive buffer of {}"
                       .format(call)):
        simulator.run(body, 2)


@pytest.mark.parametrize('in_place', [False, True],
                         ids=['buffers', 'in_place'])
@pytest.mark.parametrize('when', ['before', 'after'])
@pytest.mark.parametrize('call', nonblocking_reductions.CALLS)
def test_receive_buffer_of_a_pending_reduction_written_is_reported(
        call, when, in_place):
    # Open MPI writes the result when its schedule gets there (a write
    # before it is lost, one after it clobbers the result). The
    # simulator writes Iallreduce's and Ireduce's result when the last
    # rank arrives, maybe long before the Wait: it compares the buffer
    # with its contents at the call just before its write, with the
    # result just after, and at completion. 'before': rank 1 writes
    # before rank 0 has started; 'after': once both have.
    def body(comm):
        rank = comm.rank
        if rank == 0 and when == 'before':
            comm.Recv(bytearray(1), source=1, tag=9)
        request, (_, recv), expected, _ = nonblocking_reductions.start(
            comm, simulator.mpi, call, in_place)
        if rank == 0:
            if when == 'after':
                comm.Send(b'x', dest=1, tag=9)
            request.Wait()
            return None
        if when == 'after':
            comm.Recv(bytearray(1), source=0, tag=9)
        recv[1] = -1.0              # written before the Wait
        if when == 'before':
            comm.Send(b'x', dest=0, tag=9)
        with pytest.raises(simulator.errors.BufferModifiedError) as info:
            request.Wait()
        request.Wait()              # completed: nothing more to report
        return str(info.value), recv[:expected.size].tolist(), \
            expected.tolist()
    message, got, expected = simulator.run(body, 2)[1]
    name = 'I' + call[:-5].lower() if call.endswith('_init') else call
    assert message.startswith('rank 1 wrote to the receive buffer of {}('
                              .format(name)), message
    if when == 'after' or not in_place:
        # the result is delivered (written in place, rank 1's input
        # was its write)
        assert got == expected


@pytest.mark.parametrize('when', ['before', 'after'])
def test_large_iallreduce_written_around_its_progress_thread_is_too(when):
    # From 512 KiB a progress thread writes the result: a write before
    # it or after it is reported, and the result delivered. (One while
    # it copies the result in may be lost unseen, as on a real MPI.)
    def body(comm):
        if comm.rank == 0 and when == 'before':
            comm.Recv(bytearray(1), source=1, tag=9)
        request, (_, recv), expected, _ = nonblocking_reductions.start(
            comm, simulator.mpi, 'Iallreduce', False, length=1 << 17)
        if comm.rank == 0:
            if when == 'after':
                comm.Send(b'x', dest=1, tag=9)
            request.Wait()
            return bool((recv == expected).all())
        if when == 'after':
            comm.Recv(bytearray(1), source=0, tag=9)
            while recv[-1] != expected[-1]:     # read only: the result
                time.sleep(0.001)
        recv[-1] = -1.0
        if when == 'before':
            comm.Send(b'x', dest=0, tag=9)
        with pytest.raises(simulator.errors.BufferModifiedError,
                           match='receive buffer of Iallreduce'):
            request.Wait()
        request.Wait()
        return bool((recv == expected).all())
    assert simulator.run(body, 2) == [True, True]


@pytest.mark.parametrize('call', _COLLECTIVES)
def test_send_buffer_written_after_completion_or_in_place_is_not(call):
    def body(comm):
        send = np.arange(4.0) + comm.rank
        request = _start_collective(comm, call, send)
        request.Wait()
        send[1] = -1.0              # after the Wait: allowed
        both = np.arange(4.0)
        request = comm.Iallreduce(simulator.mpi.IN_PLACE, both)
        while not request.Test():
            pass
        assert both.tolist() == [0.0, 2.0, 4.0, 6.0]
    simulator.run(body, 2)



def test_idup_communicator_used_before_its_request_completes_is_an_error():
    # MPI leaves Idup's handle undefined until the request completes (Open
    # MPI 5 segfaulted freeing one early); the simulator names the line.
    def body(comm):
        new, request = comm.Idup()
        line = sys._getframe().f_lineno - 1
        with pytest.raises(simulator.mpi.Exception,
                           match=r'Idup at {}:{} before'.format(
                               re.escape(__file__), line)):
            new.Barrier()
        with pytest.raises(simulator.mpi.Exception, match='Idup at'):
            new.Free()
        assert request.Test()
        new.Barrier()
        new.Free()
        new, request = comm.Idup()
        simulator.mpi.Request.Waitall([request])
        return new.Get_size()
    assert simulator.run(body, 2) == [2, 2]
