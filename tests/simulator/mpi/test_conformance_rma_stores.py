"""Conformance: the program's own stores to window memory (NumPy writes,
not RMA calls) in exposure (``Post`` .. ``Wait``) and passive target
epochs, where an access of another rank reaches the same bytes, are
reported; correct programs that store to their windows run both ways
unreported.

Racy programs are simulator-only (Open MPI lets the store and the access
land in either order); the correct ones run in-process and under
``mpiexec`` with the same assertions.
"""
import numpy as np
import pytest

import simulator

RACY = pytest.mark.simulator_only(
    'Open MPI lets the store and the RMA access land in either order '
    'without a word: only the simulator can name them')


def _report(body, size=2):
    """The RMAConflictError message a simulated run of ``body`` raises."""
    with pytest.raises(simulator.RMAConflictError) as info:
        simulator.run(body, size)
    return str(info.value)


def _window(MPI, comm, memory, count=4):
    """A window of ``count`` ints and its memory as an int array: the
    program's (``Create``) or MPI's (``Allocate``)."""
    if memory == 'Create':
        mem = np.zeros(count, dtype='i')
        return MPI.Win.Create(mem, mem.itemsize, comm=comm), mem
    win = MPI.Win.Allocate(count * 4, 4, comm=comm)
    mem = np.frombuffer(win, dtype='i')
    mem[:] = 0
    # (Stored before any access can reach it: the store check saw
    # others put to a window while its owner was still zeroing it.)
    comm.Barrier()
    return win, mem


def _access(win, MPI, op, target):
    """Rank ``target``'s ints 1..2 reached by ``op``."""
    if op == 'Put':
        win.Put(np.full(2, 7, dtype='i'), target, (1, 2, MPI.INT))
    elif op == 'Get':
        win.Get(np.empty(2, dtype='i'), target, (1, 2, MPI.INT))
    else:
        win.Accumulate(np.ones(2, dtype='i'), target, (1, 2, MPI.INT),
                       MPI.SUM)


@RACY
@pytest.mark.parametrize('memory', ['Create', 'Allocate'])
@pytest.mark.parametrize('op', ['Put', 'Get', 'Accumulate'])
@pytest.mark.parametrize('when', ['before', 'after'])
def test_a_store_in_the_exposure_epoch_an_access_reached_is_reported(
        memory, op, when):
    # Rank 0 exposes its window and stores to int 2 before or after rank
    # 1's access of ints 1..2 (messages order them here; MPI does not
    # complete the access before rank 0's Wait).
    MPI = simulator.mpi

    def body(comm):
        win, mem = _window(MPI, comm, memory)
        group = comm.Get_group()
        if comm.rank == 0:
            origin = group.Incl([1])
            win.Post(origin)
            mem[3] = 5          # no access reaches int 3: fine
            if when == 'before':
                mem[2] = 5
                comm.send(None, 1)
            else:
                comm.recv(source=1)
                mem[2] = 5
            win.Wait()
            origin.Free()
        else:
            target = group.Incl([0])
            win.Start(target)
            if when == 'before':
                comm.recv(source=0)
            _access(win, MPI, op, 0)
            if when == 'after':
                comm.send(None, 0)
            win.Complete()
            target.Free()
        group.Free()
        win.Free()
    message = _report(body)
    assert message.startswith(
        "rank 0's window memory was written by a store (not an RMA call) "
        'in its exposure epoch (Post .. Wait) in which rank 1 Win.{}('
        'peer=0, '.format(op))
    assert 'reached the same bytes ({} it)'.format(when) in message
    assert 'Store before the Post or after the Wait' in message
    assert 'test_conformance_rma_stores.py:' in message


@RACY
@pytest.mark.parametrize('memory', ['Create', 'Allocate'])
@pytest.mark.parametrize('op', ['Put', 'Get', 'Accumulate'])
@pytest.mark.parametrize('lock,closing', [
    ('exclusive', 'Unlock'), ('shared', 'Unlock'), ('shared', 'Flush'),
    ('all', 'Unlock_all'), ('all', 'Flush_all')])
def test_a_store_while_a_passive_target_access_is_incomplete_is_reported(
        memory, op, lock, closing):
    # Rank 1's access to rank 0 is not complete before its Flush or
    # Unlock: rank 0's store to int 2 in between (told by a message,
    # which orders nothing of the access) races it.
    MPI = simulator.mpi

    def body(comm):
        win, mem = _window(MPI, comm, memory)
        if comm.rank == 0:
            comm.recv(source=1)
            mem[0] = 5          # no access reaches int 0: fine
            mem[2] = 5
            comm.send(None, 1)
        else:
            if lock == 'all':
                win.Lock_all()
            else:
                win.Lock(0, MPI.LOCK_EXCLUSIVE if lock == 'exclusive'
                         else MPI.LOCK_SHARED)
            _access(win, MPI, op, 0)
            comm.send(None, 0)
            comm.recv(source=0)
            if closing == 'Flush':
                win.Flush(0)
            elif closing == 'Flush_all':
                win.Flush_all()
            if lock == 'all':
                win.Unlock_all()
            else:
                win.Unlock(0)
        win.Free()
    message = _report(body)
    assert message.startswith(
        "rank 0's window memory was written by a store (not an RMA call) "
        'at bytes 8..11, which rank 1 Win.{}(peer=0, '.format(op))
    assert 'before its Win.{} completed it (in a passive target ' \
        'epoch)'.format(closing) in message
    assert 'test_conformance_rma_stores.py:' in message


@RACY
def test_a_store_overwritten_by_a_later_access_is_still_reported():
    # Rank 0 stores to int 1 while rank 1's Put there is incomplete;
    # rank 2's Get then reads what the store left. Rank 1's Unlock
    # reports it, though a Put of rank 2 may have hidden the value.
    MPI = simulator.mpi

    def body(comm):
        win, mem = _window(MPI, comm, 'Create')
        if comm.rank == 0:
            comm.recv(source=1)
            mem[1] = 5
            comm.send(None, 2)
            comm.recv(source=2)
        elif comm.rank == 1:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Put(np.full(2, 7, dtype='i'), 0)
            comm.send(None, 0)
            comm.recv(source=2)
            win.Unlock(0)
        else:
            comm.recv(source=0)
            win.Lock(0, MPI.LOCK_SHARED)
            win.Accumulate(np.full(2, 9, dtype='i'), 0, op=MPI.REPLACE)
            win.Unlock(0)
            comm.send(None, 0)
            comm.send(None, 1)
        win.Free()
    message = _report(body, 3)
    assert message.startswith(
        "rank 0's window memory was written by a store (not an RMA call) "
        'at bytes 4..7, which rank 1 Win.Put(peer=0, ')


SIZES = (2, 3)


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('memory', ['Create', 'Allocate'])
def test_stores_ordered_by_exposure_epochs_or_elsewhere_run_both_ways(
        mpi_comm, MPI, memory):
    # Rank 0 stores before its Post and after its Wait to the ints the
    # origins put to, and in the epoch to an int no origin reaches.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    win, mem = _window(MPI, mpi_comm, memory)
    group = mpi_comm.Get_group()
    try:
        for _ in range(2):
            if rank == 0:
                origins = group.Excl([0])
                mem[:3] = -1
                win.Post(origins)
                mem[3] = 5
                win.Wait()
                origins.Free()
                assert mem[:3].tolist() == [-1, size - 2, size - 2]
                mem[1:3] += 10
            else:
                target = group.Incl([0])
                win.Start(target)
                win.Accumulate(np.ones(2, dtype='i'), 0, (1, 2, MPI.INT),
                               MPI.SUM)
                win.Complete()
                target.Free()
            mpi_comm.Barrier()
        # Sanity: the correct program computed its answer.
        if rank == 0:
            assert mem.tolist() == [-1, 8 + size, 8 + size, 5]
    finally:
        group.Free()
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('memory', ['Create', 'Allocate'])
def test_stores_ordered_after_passive_target_accesses_run_both_ways(
        mpi_comm, MPI, memory):
    # Stores after the origin's Unlock and a barrier, after its Flush
    # and a message, under the target's exclusive lock of its own window
    # (concurrent with the others' epochs: the lock serializes them),
    # and to bytes no access reaches: none is reported.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    last = size - 1
    win, mem = _window(MPI, mpi_comm, memory)
    try:
        if rank:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Accumulate(np.full(2, rank, dtype='i'), 0, (0, 2, MPI.INT),
                           MPI.SUM)
            win.Unlock(0)
        else:
            mem[3] = 4          # no access reaches int 3
        mpi_comm.Barrier()
        if rank == 0:
            mem[:2] += 10
        mpi_comm.Barrier()

        win.Lock_all()
        if rank == last:
            win.Get_accumulate(np.full(1, 1, dtype='i'),
                               np.zeros(1, dtype='i'), 0, (2, 1, MPI.INT),
                               MPI.SUM)
            win.Flush(0)
            mpi_comm.send(None, 0)
        if rank == 0:
            mpi_comm.recv(source=last)
            mem[2] *= 3
        win.Unlock_all()
        mpi_comm.Barrier()

        if rank == 0:
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            mem[1] = 50
            win.Unlock(0)
        else:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Accumulate(np.ones(1, dtype='i'), 0, (1, 1, MPI.INT),
                           MPI.SUM)
            win.Unlock(0)
        mpi_comm.Barrier()
        if rank == 0:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Unlock(0)
            assert mem[0] == 10 + size * (size - 1) // 2
            assert mem[2] == 3 and mem[3] == 4
            assert 50 <= mem[1] <= 50 + last
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_a_target_that_syncs_and_sees_a_flag_land_may_reset_it(
        mpi_comm, MPI):
    # The unified model's flag handover (mpi4py.util.sync's Condition
    # does it): rank 0 polls its window with Win.Sync until each other
    # rank's REPLACE lands, and resets it at once, before the origin's
    # Unlock_all completes it (it waits for rank 0 to say so, to make
    # sure). Not reported.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    win = MPI.Win.Allocate(4, 4, comm=mpi_comm)
    flag = np.frombuffer(win, dtype='i')
    flag[0] = 0
    mpi_comm.Barrier()
    try:
        for origin in range(1, size):
            if rank == 0:
                win.Lock_all()
                win.Sync()
                mpi_comm.send(None, origin)     # its turn
                while flag[0] == 0:
                    win.Flush(0)
                    win.Sync()
                flag[0] = 0
                mpi_comm.send(None, origin)     # reset
                win.Unlock_all()
            elif rank == origin:
                mpi_comm.recv(source=0)
                win.Lock_all()
                win.Accumulate(np.ones(1, dtype='i'), 0, op=MPI.REPLACE)
                mpi_comm.recv(source=0)
                win.Unlock_all()
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_accesses_over_several_blocks_of_the_window_run_both_ways(
        mpi_comm, MPI):
    # A 128-byte accumulate, then more over it from the same origin and
    # the others while it is open: each updates what it left once (the
    # simulator finds accesses by 64-byte blocks; one in two was counted
    # twice and its bytes taken for a store).
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    win, mem = _window(MPI, mpi_comm, 'Create', 40)
    try:
        win.Lock_all()
        if rank == 1:
            win.Put(np.arange(32, dtype='i'), 0, (4, 32, MPI.INT))
            win.Flush(0)
            win.Accumulate(np.ones(32, dtype='i'), 0, (4, 32, MPI.INT),
                           MPI.SUM)
        mpi_comm.Barrier()
        if rank:
            win.Accumulate(np.ones(34, dtype='i'), 0, (3, 34, MPI.INT),
                           MPI.SUM)
        win.Unlock_all()
        mpi_comm.Barrier()
        if rank == 0:
            win.Lock(0, MPI.LOCK_SHARED)
            win.Unlock(0)
            assert mem[4:36].tolist() == list(range(size, 32 + size))
    finally:
        win.Free()
