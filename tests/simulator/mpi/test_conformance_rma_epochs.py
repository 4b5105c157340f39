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


def _report(body, size=3, schedule=None):
    """The RMAConflictError message a simulated run of ``body`` raises."""
    with pytest.raises(simulator.RMAConflictError) as info:
        simulator.run(body, size, schedule=schedule)
    return str(info.value)


def _race_on_rank0(first, second, lock, last):
    """A program where rank 0 waits in a receive from rank ``last``
    while ranks 1.. run ``first(win, comm)`` then (on rank ``last``)
    ``second(win, comm)`` in shared lock epochs (``lock``: 'Lock' on rank
    0 or 'Lock_all') on its window of 4 ints; rank 1 tells rank ``last``
    when it is done, and keeps its epoch open until ``last`` is.

    Run under a schedule: rank 1's Iprobe is answered only once every
    thread is blocked, so rank 0 is in its receive before the first
    access (a target that runs may have seen the first access land and
    passed that on: then the pair is not reported)."""
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        if comm.rank == 0:
            comm.recv(source=last)
        else:
            win.Lock(0, MPI.LOCK_SHARED) if lock == 'Lock' else \
                win.Lock_all()
            if comm.rank == 1:
                comm.Iprobe(source=0)
                first(win, comm)
                if last != 1:
                    comm.send(None, last)
                    comm.recv(source=last)
            if comm.rank == last:
                if last != 1:
                    comm.recv(source=1)
                second(win, comm)
                if last != 1:
                    comm.send(None, 1)
                comm.send(None, 0)
            win.Unlock(0) if lock == 'Lock' else win.Unlock_all()
        win.Free()
    return body


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
    body = _race_on_rank0(
        lambda win, comm: win.Put(np.full(2, 7, dtype='i'), 0,
                                  (1, 2, MPI.INT)),
        lambda win, comm: _second_access(win, MPI, second), lock, 2)
    message = _report(body, schedule=0)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert 'and rank 2 Win.{}(peer=0, '.format(
        'Get' if second == 'Rget' else second) in message
    assert "same {} byte(s) of rank 0's window (bytes {}) in concurrent " \
        'passive target epochs (shared locks): the first was not ' \
        'completed yet by a Flush or Unlock of rank 1, nor its bytes ' \
        'read, and rank 0 was blocked in one call all along'.format(
            *((8, '4..11') if second == 'Get' else (4, '8..11'))) \
        in message
    assert 'test_conformance_rma_epochs.py:' in message


@RACY
def test_flush_of_another_target_leaves_the_access_open():
    # Rank 1 flushes rank 2, not rank 0: its Put to rank 0 is still
    # incomplete when rank 2, told so, reads it.
    def first(win, comm):
        win.Put(np.full(2, 1, dtype='i'), 0)
        win.Put(np.full(2, 1, dtype='i'), 2)
        win.Flush(2)
        win.Flush_local(0)      # local completion only

    body = _race_on_rank0(
        first, lambda win, comm: win.Get(np.empty(2, dtype='i'), 0),
        'Lock_all', 2)
    message = _report(body, schedule=0)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert 'rank 2 Win.Get(peer=0, ' in message


@RACY
@pytest.mark.parametrize('lock', ['Lock', 'Lock_all'])
def test_one_origins_accesses_before_its_flush_are_unordered(lock):
    MPI = simulator.mpi

    def accesses(win, comm):
        win.Put(np.full(2, 1, dtype='i'), 0)
        win.Flush(0)                # orders the Put before the next two
        win.Put(np.full(2, 2, dtype='i'), 0)
        win.Accumulate(np.full(1, 3, dtype='i'), 0, 1, MPI.REPLACE)

    body = _race_on_rank0(accesses, lambda win, comm: None, lock, 1)
    message = _report(body, 2, schedule=0)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert "and rank 1 Win.Accumulate(peer=0, " in message
    assert "same 4 byte(s) of rank 0's window (bytes 4..7)" in message


@RACY
@pytest.mark.parametrize('seen', ['target runs', 'read back',
                                  'read back by a derived type'])
def test_an_access_someone_may_have_seen_land_is_not_reported(seen):
    # Rank 0 may poll its memory, see rank 1's update land and tell rank
    # 2 (the unified model allows it), or rank 2 read it back first with
    # an atomic read: either orders rank 2's Put after it. Not reported.
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(2, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        if comm.rank == 0:
            if seen == 'target runs':
                comm.recv(source=1)
                while mem[0] != 7:      # polls its own memory
                    pass
                comm.send(None, 2)
            comm.recv(source=2)
        else:
            win.Lock(0, MPI.LOCK_SHARED)
            if comm.rank == 1:
                comm.Iprobe(source=0)
                win.Accumulate(np.full(2, 7, dtype='i'), 0,
                               op=MPI.REPLACE)
                comm.send(None, 0 if seen == 'target runs' else 2)
                comm.recv(source=2)
            else:
                if seen == 'target runs':
                    comm.recv(source=0)
                else:
                    comm.recv(source=1)
                    got = np.zeros(2, dtype='i')
                    pair = MPI.INT.Create_vector(2, 1, 1).Commit()
                    win.Get_accumulate(np.zeros(2, dtype='i'), got, 0,
                                       (0, 1, pair) if 'derived' in seen
                                       else None, MPI.NO_OP)
                    win.Flush(0)
                    pair.Free()
                    assert got.tolist() == [7, 7]
                win.Put(np.full(2, 8, dtype='i'), 0)
                comm.send(None, 1)
                comm.send(None, 0)
            win.Unlock(0)
        win.Free()
    simulator.run(body, 3, schedule=0)


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
