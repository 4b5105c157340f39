"""simulator.engine.world: run(), topology, per-rank state, failure,
blocking."""
import socket
import threading
import time

import numpy as np
import pytest

import simulator
import simulator.mpi as MPI
from simulator.errors import DeadlockError, RankFailedError
from simulator.engine.trace import CallRecord
from simulator.engine.actors import current

UNSAFE = 'exercises the simulator itself (not an MPI program)'


@pytest.mark.simulator_only(UNSAFE)
def test_run_returns_results_in_rank_order():
    assert simulator.run(lambda comm: comm.Get_rank() * 10, 5) == [
        0, 10, 20, 30, 40]


@pytest.mark.simulator_only(UNSAFE)
def test_comm_world_resolves_to_the_calling_rank():
    def body(comm):
        assert MPI.COMM_WORLD == comm
        assert current().rank == comm.Get_rank()
        assert MPI.COMM_SELF.Get_size() == 1
        return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    assert simulator.run(body, 3) == [(0, 3), (1, 3), (2, 3)]
    assert current() is None
    with pytest.raises(RuntimeError, match='outside a simulated rank'):
        MPI.COMM_WORLD.Get_rank()


@pytest.mark.simulator_only(UNSAFE)
@pytest.mark.parametrize('size,nodes,expected', [
    (4, 2, ['node0', 'node0', 'node1', 'node1']),
    (5, 2, ['node0', 'node0', 'node0', 'node1', 'node1']),
    (3, 3, ['node0', 'node1', 'node2']),
])
def test_nodes_set_processor_names_block_wise(size, nodes, expected):
    # and socket.gethostname() agrees, so code grouping by host sees them
    names = simulator.run(lambda comm: (MPI.Get_processor_name(),
                                        socket.gethostname()), size,
                          nodes=nodes)
    assert names == [(name, name) for name in expected]


@pytest.mark.mpi(sizes=(1, 2))
def test_one_node_is_this_host(mpi_comm, MPI):
    # Open MPI's name: the host name without its domain
    expected = socket.gethostname()
    if not expected.replace('.', '').isdigit():
        expected = expected.split('.')[0]
    assert MPI.Get_processor_name() == expected
    assert mpi_comm.allgather(socket.gethostname()) == [
        socket.gethostname()] * mpi_comm.size


@pytest.mark.simulator_only(UNSAFE)
@pytest.mark.parametrize('kwargs,word', [
    (dict(size=0), 'size'), (dict(size=2, nodes=3), 'nodes'),
    (dict(size=2, send_mode='lazy'), 'send_mode')])
def test_bad_world_arguments_are_named(kwargs, word):
    size = kwargs.pop('size')
    with pytest.raises(ValueError, match=word):
        simulator.run(lambda comm: None, size, **kwargs)


@pytest.mark.simulator_only(UNSAFE)
def test_per_rank_random_state_differs_and_follows_the_seed():
    def draw(comm):
        return current().random.randint(0, 1 << 30, size=4).tolist()
    first = simulator.run(draw, 3, seed=7)
    assert first == simulator.run(draw, 3, seed=7)
    assert len({tuple(x) for x in first}) == 3
    assert first != simulator.run(draw, 3, seed=8)


@pytest.mark.simulator_only(UNSAFE)
def test_failure_reraises_original_and_releases_blocked_ranks_at_once():
    seen = {}

    def body(comm):
        if comm.Get_rank() == 2:
            time.sleep(0.05)
            raise KeyError('boom in two')
        start = time.monotonic()
        try:
            comm.recv(source=2)
        except RankFailedError as e:
            seen[comm.Get_rank()] = (e.failed_rank, str(e),
                                     time.monotonic() - start)
            raise

    with pytest.raises(KeyError, match='boom in two') as info:
        simulator.run(body, 3)
    assert any('rank 2' in note for note in info.value.__notes__)
    assert sorted(seen) == [0, 1]
    for failed, text, waited in seen.values():
        assert failed == 2 and 'rank 2' in text and 'KeyError' in text
        assert waited < 2.0


@pytest.mark.simulator_only(UNSAFE)
def test_pytest_outcomes_propagate_unchanged():
    def body(comm):
        pytest.skip('skipped inside rank {}'.format(comm.Get_rank()))
    with pytest.raises(pytest.skip.Exception) as info:
        simulator.run(body, 2)
    assert not getattr(info.value, '__notes__', None)


@pytest.mark.simulator_only(UNSAFE)
def test_external_blocking_protocol_wakes_and_joins_deadlock_detection():
    # What simulator.nccl does: block on its own condition under the world
    # lock and be woken by the party that makes it true.
    box = {}

    def body(comm):
        ctx = current()
        world = ctx.world
        record = CallRecord('customWait', ctx.rank, peer=1 - ctx.rank)
        with world.lock:
            if ctx.rank == 0:
                world.block(lambda: 'value' in box, record)
                return box['value']
            box['value'] = 42
            world.wake(0)
        return None

    assert simulator.run(body, 2) == [42, None]

    def stuck(comm):
        ctx = current()
        with ctx.world.lock:
            ctx.world.block(lambda: False, CallRecord(
                'customWait', ctx.rank, peer=1 - ctx.rank))

    with pytest.raises(DeadlockError, match='customWait'):
        simulator.run(stuck, 2, timeout=30)


@pytest.mark.simulator_only(UNSAFE)
def test_waiting_on_a_finished_rank_is_a_deadlock():
    def body(comm):
        if comm.Get_rank() == 0:
            comm.recv(source=1, tag=5)

    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    text = str(info.value)
    assert 'rank 0: blocked in recv(peer=1, tag=5' in text
    assert 'finished: 1' in text
    assert 'test_world.py' in text


@pytest.mark.simulator_only(UNSAFE)
def test_timeout_backstop_reports_busy_ranks():
    def body(comm):
        if comm.Get_rank() == 0:
            comm.recv(source=1)
        else:
            time.sleep(1.0)
            comm.send('late', dest=0)

    start = time.monotonic()
    with pytest.raises(DeadlockError, match='timeout'):
        simulator.run(body, 2, timeout=0.2)
    assert time.monotonic() - start < 5


@pytest.mark.simulator_only(UNSAFE)
def test_big_world_small_stacks_still_recurse_and_restore_stack_size():
    before = threading.stack_size()

    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)

    def body(comm):
        return depth(300) + comm.allreduce(1)
    assert simulator.run(body, 300) == [600] * 300
    assert threading.stack_size() == before


@pytest.mark.simulator_only(UNSAFE)
def test_world_block_raises_when_already_broken():
    seen = []

    def body(comm):
        world = current().world
        if comm.Get_rank() == 1:
            raise RuntimeError('x')
        while world.failure is None:
            time.sleep(0.001)
        with world.lock:
            try:
                world.block(lambda: False, CallRecord('wait', 0))
            except RankFailedError as error:
                seen.append(error.failed_rank)
                raise

    with pytest.raises(RuntimeError, match='x'):
        simulator.run(body, 2)
    assert seen == [1]


@pytest.mark.simulator_only(UNSAFE)
def test_send_copies_at_call_time_and_objects_are_private():
    def body(comm):
        if comm.Get_rank() == 0:
            data = np.arange(4.0)
            obj = [1, 2]
            comm.Send(data, dest=1)
            comm.send(obj, dest=1)
            data[:] = -1
            obj.append(3)
            comm.Barrier()
            return None
        comm.Barrier()
        got = np.empty(4)
        comm.Recv(got, source=0)
        return got.tolist(), comm.recv(source=0)
    assert simulator.run(body, 2)[1] == ([0.0, 1.0, 2.0, 3.0], [1, 2])


# --- mpi4py calls beyond the conformance subset, run both ways ----------

@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_scan_exscan_and_reduce_scatter(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    assert mpi_comm.scan(rank + 1) == sum(range(1, rank + 2))
    got = mpi_comm.exscan(rank + 1)
    if rank > 0:
        assert got == sum(range(1, rank + 1))
    counts = [r + 1 for r in range(size)]
    send = np.arange(sum(counts), dtype=np.float64) * (rank + 1)
    mine = np.empty(counts[rank])
    mpi_comm.Reduce_scatter(send, mine, counts, op=MPI.SUM)
    start = sum(counts[:rank])
    factor = size * (size + 1) / 2
    np.testing.assert_allclose(
        mine, np.arange(start, start + counts[rank]) * factor)


@pytest.mark.mpi(sizes=(2, 3, 4))
def test_probe_then_receive_exactly_what_arrived(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if rank == 0:
        for _ in range(size - 1):
            status = MPI.Status()
            mpi_comm.Probe(MPI.ANY_SOURCE, 5, status)
            count = status.Get_count(MPI.INT)
            buf = np.empty(count, dtype=np.intc)
            mpi_comm.Recv([buf, MPI.INT], status.Get_source(), 5)
            assert count == status.Get_source() + 1
            assert (buf == status.Get_source()).all()
        assert not mpi_comm.Iprobe(MPI.ANY_SOURCE, 5)
    else:
        mpi_comm.Send([np.full(rank + 1, rank, dtype=np.intc), MPI.INT],
                      dest=0, tag=5)
    mpi_comm.Barrier()


@pytest.mark.mpi(sizes=(2, 4))
def test_synchronous_sends_waitany_and_sendrecv_replace(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    if rank % 2 == 0:
        mpi_comm.ssend(('hi', rank), dest=right, tag=1)
        assert mpi_comm.recv(source=left, tag=1) == ('hi', left)
    else:
        assert mpi_comm.recv(source=left, tag=1) == ('hi', left)
        mpi_comm.ssend(('hi', rank), dest=right, tag=1)
    requests = [mpi_comm.Irecv(np.empty(1), source=left, tag=2),
                mpi_comm.Issend(np.ones(1) * rank, dest=right, tag=2)]
    done = set()
    while len(done) < 2:
        index = MPI.Request.Waitany(requests)
        done.add(index)
    buf = np.full(3, rank, dtype=np.int64)
    mpi_comm.Sendrecv_replace(buf, dest=right, sendtag=3, source=left,
                              recvtag=3)
    assert (buf == left).all()


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_ibcast_and_iallreduce_complete_by_test_loop(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    data = np.arange(6, dtype=np.float32) if rank == 0 else np.zeros(
        6, dtype=np.float32)
    request = mpi_comm.Ibcast(data, root=0)
    while not request.Test():
        pass
    np.testing.assert_array_equal(data, np.arange(6, dtype=np.float32))
    big = np.full(70000, rank + 1, dtype=np.float64)
    out = np.empty_like(big)
    requests = [mpi_comm.Iallreduce(big, out, op=MPI.SUM),
                mpi_comm.Ibarrier()]
    while not MPI.Request.Testall(requests):
        pass
    assert (out == size * (size + 1) / 2).all()


@pytest.mark.simulator_only('progress without MPI calls is the simulator\'s '
                            'choice; Open MPI advances a non-blocking '
                            'collective only inside MPI calls')
def test_big_iallreduce_progresses_while_ranks_compute():
    # A large Iallreduce moves its data on a progress thread once every
    # rank has joined: the result is there although no rank calls MPI.
    n = 1 << 18

    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        data = np.full(n, rank + 1.0)
        request = comm.Iallreduce(MPI.IN_PLACE, data, op=MPI.SUM)
        total = size * (size + 1) / 2
        deadline = time.monotonic() + 30
        while data[-1] != total and time.monotonic() < deadline:
            time.sleep(0.001)       # "compute": no MPI call
        before_wait = bool((data == total).all())
        request.Wait()
        return before_wait
    assert simulator.run(body, 3) == [True, True, True]


@pytest.mark.simulator_only(UNSAFE)
def test_complete_collectives_are_retired_before_their_ranks_leave(
        monkeypatch):
    # A Barrier, an Allreduce the last arrival reduces alone and one
    # whose pieces the ranks share read nobody's buffers once complete:
    # their slot is forgotten then, and no rank counts its departure.
    from simulator.engine import collectives
    seen = []
    real_leave = collectives.leave

    def leave(state, slot):
        with state.world.lock:
            seen.append((slot.op, slot.retired,
                         slot.key in state.world.collectives))
        real_leave(state, slot)
    monkeypatch.setattr(collectives, 'leave', leave)

    def body(comm):
        small = np.full(2, comm.Get_rank() + 1.0)
        big = np.full(1 << 17, comm.Get_rank() + 1.0)     # 1 MiB
        comm.Barrier()
        comm.Allreduce(MPI.IN_PLACE, small)
        comm.Allreduce(MPI.IN_PLACE, big)
        return small[0], big[0], big[-1]
    assert simulator.run(body, 4) == [(10.0, 10.0, 10.0)] * 4
    assert sorted(seen) == sorted(
        [('Barrier', True, False)] * 4 + [('Allreduce', True, False)] * 8)


@pytest.mark.simulator_only(UNSAFE)
def test_deadlock_behind_a_progress_thread_is_still_reported():
    # Rank 1 waits for a message nobody sends while the others' big
    # Iallreduce completes in the background: reported, not hung.
    def body(comm):
        data = np.ones(1 << 17)
        request = comm.Iallreduce(MPI.IN_PLACE, data, op=MPI.SUM)
        if comm.Get_rank() == 1:
            comm.recv(source=0, tag=5)
        request.Wait()
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=60)
    assert 'recv' in str(info.value)
