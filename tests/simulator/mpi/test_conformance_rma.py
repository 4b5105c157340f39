"""Conformance: RMA windows (``MPI.Win``) give Open MPI's results.

Each test runs in-process on the simulator and under ``mpiexec`` on Open
MPI with the same assertions: active target (Fence) and passive target
(Lock, Lock_all) epochs, Put / Get / Accumulate / Get_accumulate /
Fetch_and_op / Compare_and_swap, request-based operations, attributes,
and the errors of operations outside an epoch or outside the window.
"""
import array

import numpy as np
import pytest

SIZES = (1, 2, 3)


def _report(body, size, error):
    """The message of the ``error`` a simulated run of ``body`` raises."""
    import simulator
    with pytest.raises(error) as info:
        simulator.run(body, size)
    return str(info.value)


@pytest.mark.mpi(sizes=SIZES)
def test_fence_put_get_ring(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right = (rank + 1) % size
    mem = np.full(4, -1, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        win.Fence()
        win.Put(np.arange(4, dtype='i') + 10 * rank, right)
        win.Fence()
        left = (rank - 1) % size
        assert mem.tolist() == [10 * left + i for i in range(4)]
        got = np.zeros(2, dtype='i')
        win.Get(got, right, (2, 2, MPI.INT))
        win.Fence(MPI.MODE_NOSUCCEED)
        assert got.tolist() == [10 * rank + 2, 10 * rank + 3]
    finally:
        win.Free()
    assert win == MPI.WIN_NULL


@pytest.mark.mpi(sizes=SIZES)
def test_accumulate_sums_every_rank(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    count = 3 if rank == 0 else 0
    win = MPI.Win.Allocate(count * 8, 8, comm=mpi_comm)
    try:
        # MPI leaves allocated window memory uninitialised.
        np.frombuffer(win.tomemory(), dtype='d')[:] = 0
        win.Fence()
        win.Accumulate(np.array([rank, 1, 2 * rank], dtype='d'), 0,
                       op=MPI.SUM)
        win.Fence()
        if rank == 0:
            local = np.frombuffer(win.tomemory(), dtype='d')
            total = size * (size - 1) / 2
            assert local.tolist() == [total, size, 2 * total]
        mpi_comm.Barrier()
        win.Fence()
        result = np.zeros(3, dtype='d')
        win.Get_accumulate(np.ones(3, dtype='d'), result, 0, op=MPI.MAX)
        win.Fence()
        assert result[1] in (size, 1.0)
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_lock_fetch_and_op_counter(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    win = MPI.Win.Allocate(4 if rank == 0 else 0, 4, comm=mpi_comm)
    try:
        if rank == 0:
            win.Lock(0)
            win.Put(array.array('i', [100]), 0)
            win.Unlock(0)
        mpi_comm.Barrier()
        one, prev = array.array('i', [1]), array.array('i', [0])
        win.Lock(0, MPI.LOCK_SHARED)
        win.Fetch_and_op(one, prev, 0, 0, MPI.SUM)
        win.Unlock(0)
        tickets = mpi_comm.allgather(prev[0])
        assert sorted(tickets) == list(range(100, 100 + size))
        mpi_comm.Barrier()
        final = array.array('i', [0])
        win.Lock(0, MPI.LOCK_SHARED)
        win.Fetch_and_op(one, final, 0, 0, MPI.NO_OP)
        win.Unlock(0)
        assert final[0] == 100 + size
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_compare_and_swap_elects_one_rank(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    win = MPI.Win.Allocate(8, 8, comm=mpi_comm)
    try:
        win.Lock_all()
        win.Accumulate(np.array([-1], 'q'), rank, op=MPI.REPLACE)
        win.Flush(rank)
        win.Unlock_all()
        mpi_comm.Barrier()
        old = np.zeros(1, 'q')
        win.Lock_all()
        win.Compare_and_swap(np.array([rank], 'q'), np.array([-1], 'q'),
                             old, 0, 0)
        win.Flush_all()
        win.Unlock_all()
        winners = mpi_comm.allgather(int(old[0]) == -1)
        assert winners.count(True) == 1
        mpi_comm.Barrier()
        value = np.zeros(1, 'q')
        win.Lock(0, MPI.LOCK_SHARED)
        request = win.Rget(value, 0)
        request.Wait()
        win.Unlock(0)
        assert value[0] == winners.index(True)
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_window_attributes(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    win = MPI.Win.Allocate(16, 4, comm=mpi_comm)
    try:
        assert win.Get_attr(MPI.WIN_SIZE) == 16
        assert win.Get_attr(MPI.WIN_DISP_UNIT) == 4
        assert win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_ALLOCATE
        assert win.Get_attr(MPI.WIN_MODEL) == MPI.WIN_UNIFIED
        assert win.group_size == size and win.group_rank == rank
        assert win.Get_group().Get_size() == size
        assert memoryview(win).nbytes == 16
        assert win and MPI.WIN_NULL != win and not MPI.WIN_NULL
    finally:
        win.Free()
    MPI.WIN_NULL.free()     # lowercase free leaves a null window alone


@pytest.mark.mpi(sizes=SIZES)
def test_synchronisation_errors(mpi_comm, MPI):
    win = MPI.Win.Allocate(8, 1, comm=mpi_comm)
    try:
        for call in (lambda: win.Unlock(0), win.Unlock_all):
            with pytest.raises(MPI.Exception) as err:
                call()
            assert err.value.Get_error_class() == MPI.ERR_RMA_SYNC
        win.Lock(0, MPI.LOCK_SHARED)
        with pytest.raises(MPI.Exception) as err:
            win.Lock(0, MPI.LOCK_SHARED)
        assert err.value.Get_error_class() == MPI.ERR_RMA_SYNC
        with pytest.raises(TypeError):
            win.Put(None, 0)
        with pytest.raises(TypeError):
            win.Fetch_and_op(None, np.zeros(1, 'i'), 0, 0, MPI.NO_OP)
        win.Unlock(0)
    finally:
        win.Free()
    for call in (MPI.WIN_NULL.Fence, MPI.WIN_NULL.Free):
        with pytest.raises(MPI.Exception) as err:
            call()
        assert err.value.Get_error_class() == MPI.ERR_WIN


# Simulator only: Open MPI lets these erroneous programs through (a Put
# outside any epoch, or past the end of the target's window, silently
# writes memory), the simulator reports them.
@pytest.mark.mpi(sizes=SIZES)
def test_erroneous_access_is_reported(mpi_comm, MPI, simulated):
    if not simulated:
        pytest.skip('Open MPI does not check RMA epochs or window bounds')
    win = MPI.Win.Allocate(8, 1, comm=mpi_comm)
    try:
        with pytest.raises(MPI.Exception, match='outside an access '
                           'epoch') as err:
            win.Put(np.zeros(1, 'i'), 0)
        assert err.value.Get_error_class() == MPI.ERR_RMA_SYNC
        win.Lock(0, MPI.LOCK_SHARED)
        for count, disp in ((4, 0), (1, 6)):
            with pytest.raises(MPI.Exception, match='outside the 8 bytes') \
                    as err:
                win.Put(np.zeros(count, 'i'), 0, disp)
            assert err.value.Get_error_class() == MPI.ERR_RMA_RANGE
        win.Unlock(0)
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_post_start_complete_wait(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    mem = np.zeros(2, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    group = mpi_comm.Get_group()
    try:
        from_left = group.Incl([left])
        to_right = group.Incl([right])
        win.Post(from_left)
        win.Start(to_right)
        win.Put(np.array([rank, 7], 'i'), right)
        win.Complete()
        win.Wait()
        assert mem.tolist() == [left, 7]
        win.Post(from_left)
        win.Start(to_right)
        win.Accumulate(np.array([1, 1], 'i'), right, op=MPI.SUM)
        win.Complete()
        while not win.Test():
            pass
        assert mem.tolist() == [left + 1, 8]
        from_left.Free()
        to_right.Free()
    finally:
        group.Free()
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_window_memory_is_an_mpi_buffer(mpi_comm, MPI):
    win = MPI.Win.Allocate(8, 1, comm=mpi_comm)
    try:
        memory = win.tomemory()
        assert type(memory) is MPI.buffer and len(memory) == 8
        with pytest.raises(ValueError):
            import pickle
            pickle.loads(pickle.dumps(win))
    finally:
        win.Free()
    with pytest.raises(TypeError):
        MPI.Win((1, 2, 3))
    assert MPI.WIN_NULL.Get_name() == 'MPI_WIN_NULL'


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', ['d', 'g'])
def test_fence_epochs_without_order_dependent_accesses_run_both_ways(
        mpi_comm, MPI, dtype):
    # What the race check lets through: every rank putting the same
    # values (long doubles too, whose padding NumPy leaves undefined),
    # accumulates with one op, gets beside puts that change nothing,
    # and puts and gets split by a Fence.
    size = mpi_comm.Get_size()
    mem = np.zeros(4, dtype=dtype)
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        win.Fence()
        win.Put(np.arange(4, dtype=dtype), 0)
        win.Fence()
        win.Accumulate(np.ones(4, dtype=dtype), 0, op=MPI.SUM)
        win.Fence()
        added = size
        got = np.empty(4, dtype=dtype)
        win.Get(got, 0)
        # Rewrites what is there (not what Get fetches: that is only
        # there after the Fence).
        win.Put(np.arange(4, dtype=dtype) + added, 0)
        win.Fence()
        assert got.tolist() == [added + i for i in range(4)]
    finally:
        win.Free()


@pytest.mark.simulator_only(
    'Open MPI applies the two accesses in some order without a word: '
    'only the simulator can say that the order decides the result')
@pytest.mark.parametrize('second', ['put', 'get', 'accumulate'])
def test_order_dependent_accesses_in_one_fence_epoch_are_reported(second):
    import simulator
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        win.Fence()
        if comm.rank == 1:
            win.Put(np.full(2, 7, dtype='i'), 0, (1, 2, MPI.INT))
        comm.Barrier()
        if comm.rank == 2:
            if second == 'put':
                win.Put(np.full(1, 9, dtype='i'), 0, (2, 1, MPI.INT))
            elif second == 'get':
                win.Get(np.empty(4, dtype='i'), 0)
            else:
                win.Accumulate(np.ones(1, dtype='i'), 0, (2, 1, MPI.INT),
                               op=MPI.SUM)
        win.Fence()
        win.Free()
    message = _report(body, 3, simulator.RMAConflictError)
    assert message.startswith('rank 1 Win.Put(peer=0, ')
    assert 'and rank 2 Win.{}(peer=0, '.format(
        {'put': 'Put', 'get': 'Get', 'accumulate': 'Accumulate'}[second]) \
        in message
    assert 'same {} byte(s)'.format(8 if second == 'get' else 4) in message


@pytest.mark.mpi(sizes=SIZES)
def test_results_are_in_origin_buffers_once_their_epoch_ends(mpi_comm, MPI):
    # Get, Get_accumulate, Fetch_and_op and Compare_and_swap write their
    # origin/result buffers by the synchronisation that completes them
    # (Fence, Unlock, Flush, an R-call's request); read them after it.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right = (rank + 1) % size
    mem = np.arange(4, dtype='i') + 100 * rank
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        got = np.zeros(4, dtype='i')
        win.Fence()
        win.Get(got, right)
        win.Fence()
        assert got.tolist() == [100 * right + i for i in range(4)]
        mpi_comm.Barrier()
        fetched, old, swapped = (np.zeros(1, dtype='i') for _ in range(3))
        win.Lock(right, MPI.LOCK_SHARED)
        win.Fetch_and_op(np.zeros(1, dtype='i'), fetched, right, 3,
                         MPI.NO_OP)
        win.Flush(right)
        assert fetched.tolist() == [100 * right + 3]
        win.Get_accumulate(np.zeros(2, dtype='i'), got[:2], right,
                           (0, 2, MPI.INT), MPI.NO_OP)
        win.Compare_and_swap(np.full(1, -5, dtype='i'),
                             np.full(1, -1, dtype='i'), old, right, 1)
        win.Unlock(right)
        assert got[:2].tolist() == [100 * right, 100 * right + 1]
        assert old.tolist() == [100 * right + 1]
        win.Lock(right, MPI.LOCK_SHARED)
        win.Rget(swapped, right, (2, 1, MPI.INT)).Wait()
        assert swapped.tolist() == [100 * right + 2]
        win.Unlock(right)
    finally:
        win.Free()


@pytest.mark.simulator_only(
    'MPI forbids touching these buffers before the operation completes '
    'and Open MPI says nothing: a write goes out, or is overwritten, '
    'by timing; only the simulator can name the call')
@pytest.mark.parametrize('call', ['Put', 'Accumulate', 'Get',
                                  'Fetch_and_op'])
def test_a_buffer_written_before_its_operation_completes_is_reported(call):
    import simulator
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        mine = np.ones(4, dtype='i')
        win.Fence()
        if comm.rank == 0:
            if call == 'Fetch_and_op':
                win.Fetch_and_op(mine[:1], mine[1:2], 1, 0, MPI.SUM)
            else:
                getattr(win, call)(mine, 1)
            mine[1] = 5         # before the Fence that completes it
        win.Fence()
        win.Free()
    message = _report(body, 2, simulator.BufferModifiedError)
    assert message.startswith('rank 0 wrote to the {} buffer of Win.{}('
                              'peer=1, '.format(
                                  'result' if call == 'Fetch_and_op'
                                  else 'origin', call))
    assert 'before Win.Fence completed it' in message


@pytest.mark.simulator_only(
    'reading it early is erroneous, and what Open MPI shows there depends '
    'on its transport and timing (old contents or garbage)')
def test_a_get_buffer_read_before_the_epoch_ends_still_holds_its_old_data():
    import simulator
    MPI = simulator.mpi

    def body(comm):
        mem = np.full(2, comm.rank + 1, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        got = np.zeros(2, dtype='i')
        win.Fence()
        win.Get(got, (comm.rank + 1) % comm.size)
        early = got.tolist()
        win.Fence()
        win.Free()
        return early, got.tolist()
    assert simulator.run(body, 2) == [([0, 0], [2, 2]), ([0, 0], [1, 1])]


@pytest.mark.simulator_only(
    'Open MPI lets the store and the access land in either order without '
    'a word: only the simulator can name them')
@pytest.mark.parametrize('when', ['before', 'after'])
def test_a_store_to_window_bytes_an_access_reached_in_the_epoch_is_reported(
        when):
    import simulator
    MPI = simulator.mpi

    def body(comm):
        mem = np.zeros(4, dtype='i')
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        win.Fence()
        mem[3] = 9              # not reached by any access: fine
        if when == 'before' and comm.rank == 0:
            mem[1] = 5
        comm.Barrier()
        if comm.rank == 1:
            win.Get(np.zeros(2, dtype='i'), 0, (0, 2, MPI.INT))
        comm.Barrier()
        if when == 'after' and comm.rank == 0:
            mem[0] = 5
        win.Fence()
        mem[:2] = 1             # after the Fence: fine
        win.Fence()
        win.Free()
    message = _report(body, 2, simulator.RMAConflictError)
    assert message.startswith("rank 0's window memory was written by a "
                              'store (not an RMA call) in the fence epoch '
                              'in which rank 1 Win.Get(peer=0, ')
    assert 'reached the same bytes ({} it)'.format(when) in message


@pytest.mark.mpi(sizes=SIZES)
def test_stores_between_fences_and_to_bytes_no_access_reached_are_fine(
        mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mem = np.zeros(4, dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        win.Fence()
        mem[2:] = rank          # bytes no access reaches this epoch
        win.Put(np.full(2, rank, dtype='i'), (rank + 1) % size,
                (0, 2, MPI.INT))
        win.Fence()
        mem[:2] += 10           # the Puts landed: the Fence separates
        win.Fence()
        got = np.zeros(4, dtype='i')
        win.Get(got, (rank + 1) % size)
        win.Fence()
        right = (rank + 1) % size
        assert got.tolist() == [rank + 10] * 2 + [right] * 2
    finally:
        win.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_derived_datatypes_place_elements_at_origin_and_target(mpi_comm,
                                                               MPI):
    # A column of a 4x4 matrix on each side (vector types), a block
    # pattern (indexed) accumulated into, and a packed origin read into.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    column = MPI.INT.Create_vector(4, 1, 4).Commit()
    pattern = MPI.INT.Create_indexed([2, 1], [0, 5]).Commit()
    mem = np.zeros((4, 4), dtype='i')
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    try:
        win.Fence()
        # my column 1 (origin vector) into the right rank's column 2
        mine = (np.arange(16, dtype='i') + 100 * rank).reshape(4, 4)
        win.Put([mine.reshape(-1)[1:], 1, column], right, (2, 1, column))
        win.Fence()
        assert mem[:, 2].tolist() == [100 * left + 1 + 4 * i
                                      for i in range(4)]
        assert not mem[:, [0, 1, 3]].any()
        mpi_comm.Barrier()      # read before the neighbour accumulates
        win.Accumulate(np.array([1, 2, 3], dtype='i'), right,
                       (0, 1, pattern), MPI.SUM)
        win.Fence()
        assert mem.reshape(-1)[[0, 1, 5]].tolist() == [1, 2, 3]
        got = np.zeros(4, dtype='i')
        win.Get(got, left, (2, 1, column))
        spread = np.full((4, 4), -1, dtype='i')
        win.Get([spread, 1, column], right, (0, 4, MPI.INT))
        win.Fence()
        assert got.tolist() == [100 * ((left - 1) % size) + 1 + 4 * i
                                for i in range(4)]
        assert spread[:, 0].tolist() == [1, 2, 100 * rank + 1, 0]
        assert (spread[:, 1:] == -1).all()
    finally:
        win.Free()
        column.Free()
        pattern.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_get_accumulate_takes_derived_datatypes(mpi_comm, MPI):
    # A column of the right rank's 4x4 window as target, origin or
    # result type (vector types of one basic type), as Open MPI places
    # them: fetched into the result, then combined with the origin.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right = (rank + 1) % size
    column = MPI.INT.Create_vector(4, 1, 4).Commit()
    mem = np.arange(16, dtype='i') * 10 + 1000 * rank
    win = MPI.Win.Create(mem, mem.itemsize, comm=mpi_comm)
    base = np.arange(16, dtype='i') * 10 + 1000 * right
    try:
        win.Lock(right, MPI.LOCK_EXCLUSIVE)
        fetched = np.zeros(4, dtype='i')
        win.Get_accumulate(np.ones(4, dtype='i'), fetched, right,
                           (1, 1, column), MPI.SUM)
        origin = np.arange(16, dtype='i')
        first = np.zeros(4, dtype='i')
        win.Get_accumulate([origin, 1, column], first, right,
                           (0, 4, MPI.INT), MPI.SUM)
        spread = np.full(16, -1, dtype='i')
        win.Get_accumulate(np.zeros(4, dtype='i'), [spread, 1, column],
                           right, (8, 4, MPI.INT), MPI.NO_OP)
        replaced = np.zeros(4, dtype='i')
        win.Rget_accumulate([origin + 100, 1, column], replaced, right,
                            (3, 1, column), MPI.REPLACE).Wait()
        win.Unlock(right)
        assert fetched.tolist() == base[1::4].tolist()
        assert first.tolist() == (base[:4] + [0, 1, 0, 0]).tolist()
        assert spread[::4].tolist() == (base[8:12] + [0, 1, 0, 0]).tolist()
        assert (np.delete(spread, range(0, 16, 4)) == -1).all()
        assert replaced.tolist() == (base[3::4] + [12, 0, 0, 0]).tolist()
        mpi_comm.Barrier()
        win.Lock(rank, MPI.LOCK_SHARED)
        win.Unlock(rank)
        mine = np.arange(16, dtype='i') * 10 + 1000 * rank
        mine[1::4] += 1
        mine[:4] += origin[::4]
        mine[3::4] = origin[::4] + 100
        assert mem.tolist() == mine.tolist()
    finally:
        win.Free()
        column.Free()


@pytest.mark.simulator_only(
    'MPI requires a predefined datatype there; Open MPI takes derived '
    'ones (its Compare_and_swap ignores their displacements)')
@pytest.mark.parametrize('call', ['Fetch_and_op', 'Compare_and_swap'])
def test_fetch_and_op_and_compare_and_swap_refuse_derived_datatypes(call):
    import simulator
    MPI = simulator.mpi

    def body(comm):
        one = MPI.INT.Create_indexed([1], [2]).Commit()
        win = MPI.Win.Allocate(16, 4, comm=comm)
        win.Lock(0, MPI.LOCK_SHARED)
        spec = [np.zeros(4, dtype='i'), 1, one]
        with pytest.raises(MPI.Exception) as err:
            if call == 'Fetch_and_op':
                win.Fetch_and_op(spec, [np.zeros(4, dtype='i'), 1, one], 0)
            else:
                win.Compare_and_swap(spec, [np.zeros(4, dtype='i'), 1, one],
                                     [np.zeros(4, dtype='i'), 1, one], 0)
        win.Unlock(0)
        win.Free()
        one.Free()
        # the simulator's detail is a note (str is mpi4py's)
        return err.value.Get_error_class(), err.value.__notes__[0]
    error, message = simulator.run(body, 1)[0]
    assert error == MPI.ERR_TYPE
    assert 'Win.{}: origin datatype'.format(call) in message
    assert 'is derived; MPI requires a predefined datatype' in message
