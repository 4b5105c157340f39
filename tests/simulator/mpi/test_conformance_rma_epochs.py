"""Conformance: order-dependent RMA accesses in passive target (shared
lock) and Post/Start/Complete/Wait epochs are reported; correct programs
using those epochs run both ways unreported.

Racy programs are simulator-only (Open MPI just gives one of the
answers); the correct ones run in-process and under ``mpiexec`` with the
same assertions.
"""
import numpy as np
import pytest

import simulator

RACY = pytest.mark.simulator_only(
    'Open MPI applies the two accesses in some order without a word: '
    'only the simulator can say that the order decides the result')


def _report(body, size=3):
    """The RMAConflictError message a simulated run of ``body`` raises."""
    with pytest.raises(simulator.RMAConflictError) as info:
        simulator.run(body, size)
    return str(info.value)


def _second_access(win, MPI, second):
    """Rank 2's access to rank 0's window, overlapping rank 1's Put of
    ints 1..2 in int 2."""
    if second == 'Put':
        win.Put(np.full(1, 9, dtype='i'), 0, (2, 1, MPI.INT))
    elif second == 'Get':
        win.Get(np.empty(4, dtype='i'), 0)
    elif second == 'Accumulate':
        win.Accumulate(np.ones(1, dtype='i'), 0, (2, 1, MPI.INT),
                       op=MPI.SUM)
    elif second == 'Rget':
        win.Rget(np.empty(1, dtype='i'), 0, (2, 1, MPI.INT)).Wait()
    else:
        win.Fetch_and_op(np.ones(1, dtype='i'), np.empty(1, dtype='i'), 0,
                         2, MPI.MAX)


@RACY
@pytest.mark.parametrize('lock', ['Lock', 'Lock_all'])
@pytest.mark.parametrize('second', ['Put', 'Get', 'Accumulate', 'Rget',
                                    'Fetch_and_op'])
def test_conflicting_accesses_in_concurrent_shared_lock_epochs_are_reported(
        lock, second):
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        if comm.rank:
            if lock == 'Lock':
                win.Lock(0, MPI.LOCK_SHARED)
            else:
                win.Lock_all()
        if comm.rank == 1:
            win.Put(np.full(2, 7, dtype='i'), 0, (1, 2, MPI.INT))
        comm.Barrier()      # rank 1's epoch is still open
        if comm.rank == 2:
            _second_access(win, MPI, second)
        comm.Barrier()
        if comm.rank:
            win.Unlock(0) if lock == 'Lock' else win.Unlock_all()
        win.Free()
    message = _report(body)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert 'and rank 2 Win.{}(peer=0, '.format(
        'Get' if second == 'Rget' else second) in message
    assert "same {} byte(s) of rank 0's window (bytes {}) in concurrent " \
        'passive target epochs (shared locks), the first not completed ' \
        'yet by a Flush or Unlock of rank 1'.format(
            *((8, '4..11') if second == 'Get' else (4, '8..11'))) \
        in message
    assert 'test_conformance_rma_epochs.py:' in message


@RACY
def test_flush_of_another_target_leaves_the_access_open():
    # Rank 1 flushes rank 2, not rank 0: its Put to rank 0 is still
    # incomplete when rank 2, told so, reads it.
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(2, dtype='d')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        win.Lock_all()
        if comm.rank == 1:
            win.Put(np.ones(2), 0)
            win.Put(np.ones(2), 2)
            win.Flush(2)
            win.Flush_local(0)      # local completion only
            comm.send(None, 2)
        if comm.rank == 2:
            comm.recv(source=1)
            win.Get(np.empty(2), 0)
        comm.Barrier()      # rank 1 completes its Put only now
        win.Flush_all()
        win.Unlock_all()
        win.Free()
    message = _report(body)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert 'rank 2 Win.Get(peer=0, ' in message


@RACY
@pytest.mark.parametrize('lock', ['LOCK_SHARED', 'Lock_all'])
def test_one_origins_accesses_before_its_flush_are_unordered(lock):
    MPI = simulator.mpi

    def body(comm):
        win = MPI.Win.Allocate(8, 4, comm=comm)
        if lock == 'Lock_all':
            win.Lock_all()
        else:
            win.Lock(0, MPI.LOCK_SHARED)
        win.Put(np.full(2, 1, dtype='i'), 0)
        win.Flush(0)                # orders the Put before the next two
        win.Put(np.full(2, 2, dtype='i'), 0)
        win.Accumulate(np.full(1, 3, dtype='i'), 0, 1, MPI.REPLACE)
        win.Unlock_all() if lock == 'Lock_all' else win.Unlock(0)
        win.Free()
    message = _report(body, 1)
    assert message.startswith('rank 0 Win.Put(peer=0, ')
    assert "and rank 0 Win.Accumulate(peer=0, " in message
    assert "same 4 byte(s) of rank 0's window (bytes 4..7)" in message


@RACY
def test_complete_does_not_order_accesses_of_one_exposure_epoch():
    # Rank 1 completes its access epoch and tells rank 2, which then
    # puts to the same bytes: both in rank 0's one exposure epoch, where
    # MPI completes them only at the Wait.
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        group = comm.Get_group()
        if comm.rank == 0:
            origins = group.Incl([1, 2])
            win.Post(origins)
            win.Wait()
            origins.Free()
        else:
            target = group.Incl([0])
            if comm.rank == 2:
                comm.recv(source=1)
            win.Start(target)
            win.Put(np.full(2, comm.rank, dtype='i'), 0, (comm.rank, 2,
                                                          MPI.INT))
            win.Complete()
            if comm.rank == 1:
                comm.send(None, 2)
            target.Free()
        group.Free()
        win.Free()
    message = _report(body)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert "rank 2 Win.Put(peer=0, " in message
    assert "same 4 byte(s) of rank 0's window (bytes 8..11) in one " \
        'exposure epoch (Post .. Wait) of rank 0' in message


SIZES = (2, 3)


@pytest.mark.mpi(sizes=SIZES)
def test_exclusive_flushed_and_separated_lock_epochs_run_both_ways(
        mpi_comm, MPI):
    # Conflicting accesses that synchronisation orders: exclusive locks,
    # a Flush (then a message, for another rank), an Unlock then a
    # Barrier, a request-based Get completed then a message, and one
    # origin's accumulates.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    first, second = size - 2, size - 1
    mem = np.zeros(4, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        win.Lock(0, MPI.LOCK_EXCLUSIVE)
        win.Put(np.full(4, rank + 1, dtype='i'), 0)
        win.Unlock(0)
        mpi_comm.Barrier()
        got = np.zeros(4, dtype='i')
        win.Lock(0, MPI.LOCK_SHARED)
        win.Get(got, 0)
        win.Unlock(0)
        assert len(set(got.tolist())) == 1 and 1 <= got[0] <= size
        mpi_comm.Barrier()

        win.Lock_all()
        if rank == first:
            win.Put(np.full(2, 5, dtype='i'), 0)
            win.Flush(0)
            mpi_comm.send(None, second)
        if rank == second:
            mpi_comm.recv(source=first)
            win.Get(got[:2], 0)
            win.Flush(0)
            assert got[:2].tolist() == [5, 5]
            win.Put(np.full(2, 6, dtype='i'), 0)
            win.Flush(0)            # orders the Put before the next ones
            # one origin's accumulates are ordered, whatever their ops
            win.Accumulate(np.full(2, 1, dtype='i'), 0, op=MPI.SUM)
            win.Accumulate(np.full(2, 6, dtype='i'), 0, op=MPI.REPLACE)
        win.Unlock_all()
        mpi_comm.Barrier()

        win.Lock(0, MPI.LOCK_SHARED)
        if rank == first:
            win.Rget(got[2:], 0, (0, 2, MPI.INT)).Wait()
            assert got[2:].tolist() == [6, 6]
        win.Unlock(0)
        if rank == first:
            mpi_comm.send(None, second)
        if rank == second:
            mpi_comm.recv(source=first)
            win.Lock(0, MPI.LOCK_SHARED)
            win.Put(np.full(2, 8, dtype='i'), 0)
            win.Unlock(0)
        mpi_comm.Barrier()
        if rank == 0:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Unlock(0)
            assert mem[:2].tolist() == [8, 8]
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_atomic_accesses_in_concurrent_shared_epochs_run_both_ways(
        mpi_comm, MPI):
    # Accumulates with one op, NO_OP reads beside them, Compare_and_swap
    # beside Fetch_and_op with REPLACE (mpi4py.util.sync's lock does
    # that), and Puts of the same bytes: all concurrent, none reported.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mem = np.zeros(4, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        seen = np.zeros(1, dtype='i')
        win.Lock_all()
        win.Accumulate(np.ones(2, dtype='i'), 0, (0, 2, MPI.INT), MPI.SUM)
        win.Fetch_and_op(np.zeros(1, dtype='i'), seen, 0, 1, MPI.NO_OP)
        win.Put(np.full(1, 3, dtype='i'), 0, (2, 1, MPI.INT))
        mpi_comm.Barrier()
        old = np.zeros(1, dtype='i')
        if rank % 2:
            win.Compare_and_swap(np.full(1, rank, dtype='i'),
                                 np.zeros(1, dtype='i'), old, 0, 3)
        else:
            win.Fetch_and_op(np.full(1, rank + 10, dtype='i'), old, 0, 3,
                             MPI.REPLACE)
        win.Unlock_all()
        assert 0 <= seen[0] <= size
        mpi_comm.Barrier()
        if rank == 0:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Unlock(0)
            assert mem[:3].tolist() == [size, size, 3]
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_accesses_in_successive_exposure_epochs_run_both_ways(mpi_comm,
                                                              MPI):
    # Rank 0 exposes its window to one origin at a time: the Wait and
    # the next Post order their Puts to the same bytes.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mem = np.zeros(2, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    group = mpi_comm.Get_group()
    try:
        for origin in range(1, size):
            if rank == 0:
                one = group.Incl([origin])
                win.Post(one)
                win.Wait()
                one.Free()
                assert mem.tolist() == [origin, origin]
            elif rank == origin:
                target = group.Incl([0])
                win.Start(target)
                win.Put(np.full(2, rank, dtype='i'), 0)
                win.Complete()
                target.Free()
    finally:
        group.Free()
        win.Free()
