"""simulator.engine.clock: virtual time in ranks, worked by hand."""
import os
import pickle
import threading
import time

import numpy as np
import pytest

import simulator
import simulator.mpi as MPI
from simulator.engine.clock import ESTIMATES, SegmentEstimate, VirtualTime
from simulator.engine.netmodel import Link, Machine
from simulator.mpi.timing import boundary_cost

UNSAFE = 'virtual time is the simulator\'s model of a machine'
pytestmark = pytest.mark.simulator_only(UNSAFE)

# Slow links, so the model's times dwarf the little CPU the test spends
# (and compute is scaled to almost nothing).
LATENCY, BANDWIDTH, NBYTES = 1e-3, 1e6, 8000
HOP = LATENCY + NBYTES / BANDWIDTH          # 9 ms a message
TINY = 1e-9


def _clock(scale=TINY, estimate='median', **kw):
    return VirtualTime(Machine('slow', Link('intra', LATENCY, BANDWIDTH),
                               **kw), compute_scale=scale, estimate=estimate)


def _spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize('estimate', ESTIMATES)
@pytest.mark.parametrize('send_mode', ['eager', 'openmpi'])
def test_a_pipeline_of_sends(estimate, send_mode):
    # 0 -> 1 -> 2: the receiver waits for arrival (latency + size /
    # bandwidth after the send); an eager send costs the sender the
    # injection (size / bandwidth), one above Open MPI's eager limit
    # (8000 bytes, the default send mode) the whole transfer.
    def body(comm):
        rank = comm.Get_rank()
        buf = np.zeros(NBYTES, np.uint8)
        if rank > 0:
            comm.Recv(buf, rank - 1)
        if rank < 2:
            comm.Send(buf, rank + 1)
        return MPI.Wtime(), time.perf_counter()
    clock = _clock(estimate=estimate)
    results = simulator.run(body, 3, clock=clock, send_mode=send_mode)
    send = NBYTES / BANDWIDTH if send_mode == 'eager' else HOP
    c = clock.clocks
    assert c[0].now == pytest.approx(send, abs=1e-6)
    assert c[1].now == pytest.approx(HOP + send, abs=1e-6)
    assert c[2].now == pytest.approx(2 * HOP, abs=1e-6)
    # rank 2 waited one hop for rank 1's send, then one transfer
    assert c[2].comm == pytest.approx(HOP, abs=1e-6)
    assert c[2].wait == pytest.approx(HOP, abs=1e-6)
    # inside a rank, Wtime and perf_counter read the rank's clock (Wtime
    # from 0, as Open MPI's counts from MPI_Init)
    base = clock.base('perf_counter')
    for rank, (wtime, perf) in enumerate(results):
        assert wtime == pytest.approx(c[rank].now, abs=1e-6)
        assert perf - base == pytest.approx(c[rank].now, abs=1e-6)
    assert not hasattr(time.perf_counter, 'simulator_virtual')


@pytest.mark.parametrize('send_mode', ['eager', 'openmpi'])
@pytest.mark.parametrize('call', ['Send', 'Isend', 'send', 'Ssend'])
def test_a_rendezvous_send_waits_for_its_receive(send_mode, call):
    # Rank 1 works 20 ms before it posts its receive. A message above the
    # eager limit (the default send mode's) or a synchronous send moves
    # only then: both ranks end at 20 ms + one hop, the sender having
    # waited 20 ms. An eager message arrived during the work (9 ms): the
    # sender paid the injection, the receiver nothing.
    obj = bytes(NBYTES - 40)
    nbytes = len(pickle.dumps(obj)) if call == 'send' else NBYTES
    hop = LATENCY + nbytes / BANDWIDTH

    def body(comm):
        buf = np.zeros(NBYTES, np.uint8)
        if comm.Get_rank() == 0:
            if call == 'Isend':
                comm.Isend(buf, 1).Wait()
            elif call == 'send':
                comm.send(obj, 1)
            else:
                getattr(comm, call)(buf, 1)
        else:
            time.sleep(0.02)
            if call == 'send':
                comm.recv(source=0)
            else:
                comm.Recv(buf, 0)
    clock = _clock()
    simulator.run(body, 2, clock=clock, send_mode=send_mode)
    c = clock.clocks
    if send_mode == 'openmpi' or call == 'Ssend':
        for rank in (0, 1):
            assert c[rank].now == pytest.approx(0.02 + hop, abs=1e-5)
            assert c[rank].comm == pytest.approx(hop, abs=1e-5)
        assert c[0].wait == pytest.approx(0.02, abs=1e-5)
    else:
        assert c[0].now == pytest.approx(nbytes / BANDWIDTH, abs=1e-5)
        assert c[1].now == pytest.approx(0.02, abs=1e-5)
        assert c[1].comm == c[1].wait == 0


@pytest.mark.parametrize('estimate', ESTIMATES)
def test_collective_starts_with_the_last_rank(estimate):
    # rank 1 computes ~0.05 s (scaled by 1); the allreduce of 4 bytes
    # over 2 ranks costs one latency (recursive doubling), for both.
    def body(comm):
        if comm.Get_rank() == 1:
            _spin(0.05)
        comm.allreduce(1)
    clock = _clock(scale=1.0, estimate=estimate)
    simulator.run(body, 2, clock=clock)
    c0, c1 = clock.clocks
    assert c0.now == pytest.approx(c1.now, abs=1e-3)
    assert c1.compute >= 0.05
    assert c0.wait == pytest.approx(c1.compute - c0.compute, abs=1e-3)
    assert c1.comm >= LATENCY


def _spin_ranks(size):
    # Repeated steps: the median estimate keeps a step that other jobs
    # on the machine disturbed from moving the figure.
    def body(comm):
        for _ in range(6):
            x = 0
            for i in range(50000):
                x += i
            comm.Barrier()
    clock = _clock(scale=1.0)
    simulator.run(body, size, clock=clock)
    return max(c.compute for c in clock.clocks)


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'),
                    reason='needs CPU affinity (Linux)')
def test_prediction_does_not_depend_on_the_cores_the_simulation_had():
    # Four ranks on one core take four times the wall time of one rank;
    # their clocks count CPU time, so the prediction stays put. In turns,
    # medians of three: on a shared machine the CPU time of the same
    # loop moves by up to 2x for seconds at a time.
    cores = os.sched_getaffinity(0)
    alone, crowded = [], []
    for _ in range(3):
        alone.append(_spin_ranks(1))
        os.sched_setaffinity(0, {min(cores)})
        try:
            crowded.append(_spin_ranks(4))
        finally:
            os.sched_setaffinity(0, cores)
    ratio = sorted(crowded)[1] / sorted(alone)[1]
    assert 0.5 < ratio < 2.0, (alone, crowded)


def _kernel_affinity():
    # The calling thread's cores as the kernel has them (a rank's
    # os.sched_getaffinity answers as its process would: see below).
    with open('/proc/thread-self/status') as f:
        for line in f:
            if line.startswith('Cpus_allowed_list:'):
                cores = set()
                for part in line.split(':')[1].strip().split(','):
                    first, _, last = part.partition('-')
                    cores.update(range(int(first), int(last or first) + 1))
                return cores
    raise AssertionError('no Cpus_allowed_list')


def _affinities(one_core):
    # Each rank's own affinity, and that of a thread the rank starts.
    def body(comm):
        seen = []
        child = threading.Thread(
            target=lambda: seen.append(_kernel_affinity()))
        child.start()
        child.join()
        return _kernel_affinity(), seen[0]
    clock = VirtualTime(Machine('slow', Link('intra', LATENCY, BANDWIDTH)),
                        compute_scale=TINY, one_core=one_core)
    return clock, simulator.run(body, 3, clock=clock)


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'),
                    reason='needs CPU affinity (Linux)')
def test_rank_threads_share_one_core_unless_told_otherwise():
    cores = os.sched_getaffinity(0)
    clock, seen = _affinities(True)
    assert clock.core in cores
    assert seen == [({clock.core}, {clock.core})] * 3
    # the caller keeps its cores; the ranks get all of them when asked
    assert os.sched_getaffinity(0) == cores
    clock, seen = _affinities(False)
    assert clock.core is None and seen == [(cores, cores)] * 3
    # a process limited to some cores runs its ranks on one of those
    os.sched_setaffinity(0, {max(cores)})
    try:
        clock, seen = _affinities(True)
    finally:
        os.sched_setaffinity(0, cores)
    assert clock.core == max(cores)
    assert seen == [({max(cores)}, {max(cores)})] * 3


def test_oversubscribed_node_stretches_compute():
    def body(comm):
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass
    clock = _clock(scale=1.0, cores_per_node=1)
    simulator.run(body, 2, clock=clock)
    # two ranks on one core: each rank's compute counts twice
    assert all(c.compute >= 0.04 for c in clock.clocks)


def test_summary_names_the_slowest_rank_and_time_is_real_outside():
    def body(comm):
        if comm.Get_rank() == 1:
            comm.send(b'x' * NBYTES, 0)
        else:
            comm.recv(source=1)
    clock = _clock()
    before = time.perf_counter()
    simulator.run(body, 2, clock=clock)
    assert time.perf_counter() >= before
    lines = clock.summary().splitlines()
    assert lines[0].startswith('virtual time: 0.009')
    assert 'communication' in lines[0] and 'waiting' in lines[0]
    assert len(lines) == 2 + 2
    with pytest.raises(ValueError, match='compute_scale must be positive'):
        _clock(scale=0)
    with pytest.raises(ValueError, match="median, raw, got 'mean'"):
        _clock(estimate='mean')


def test_a_key_is_charged_the_median_of_its_recent_measurements():
    est = SegmentEstimate(window=5)
    # the first measurement of a key is all there is: charged as is
    assert est.charge('a', 0.010) == 0.010
    # a disturbed repetition is charged what the key usually costs
    assert est.charge('a', 0.011) == 0.010
    assert est.charge('a', 0.050) == 0.011
    assert est.charge('a', 0.009) == 0.010
    # another key has its own measurements
    assert est.charge('b', 0.5) == 0.5
    assert est.charge('a', 0.010) == 0.010
    # the window forgets: when the work changes for good, the charge
    # follows after half the window
    charges = [est.charge('a', 0.020) for _ in range(5)]
    assert charges == [0.011, 0.020, 0.020, 0.020, 0.020]
    assert len(est) == 2
    with pytest.raises(ValueError, match='window must be at least 1, got 0'):
        SegmentEstimate(window=0)


def _disturbed_loop(comm):
    # rank 0 computes 5 ms a step, rank 1 10 ms; one step of each is
    # disturbed (+35 ms), as a preemption or a cache refill would.
    rank = comm.Get_rank()
    work = 0.005 * (rank + 1)
    for step in range(9):
        _spin(work + (0.035 if step == 3 + rank else 0.0))
        comm.Barrier()


def test_the_median_estimate_charges_the_usual_cost_per_rank():
    clock = _clock(scale=1.0)
    simulator.run(_disturbed_loop, 2, clock=clock)
    c0, c1 = (c.compute for c in clock.clocks)
    # 9 steps at the usual cost each (the median is per rank: one table
    # for both would charge rank 0 some of rank 1's 10 ms steps)
    assert 0.045 <= c0 < 0.045 + 0.02, c0
    assert 0.090 <= c1 < 0.090 + 0.02, c1
    raw = _clock(scale=1.0, estimate='raw')
    simulator.run(_disturbed_loop, 2, clock=raw)
    r0, r1 = (c.compute for c in raw.clocks)
    # raw charges what was measured, the disturbance included
    assert r0 >= 0.045 + 0.035 and r1 >= 0.090 + 0.035, (r0, r1)


def test_reading_the_clock_in_a_loop_costs_no_compute():
    # The simulator's work to answer a read is not the program's.
    def body(comm):
        start = time.perf_counter()
        for _ in range(2000):
            time.perf_counter()
        return time.perf_counter() - start
    spent = simulator.run(body, 1, clock=_clock(scale=1.0))
    assert spent[0] < 2000 * 0.5e-6, spent


def test_sleep_moves_the_clock_on():
    def body(comm):
        before = time.perf_counter()
        time.sleep(0.02)
        return time.perf_counter() - before
    clock = _clock()
    slept = simulator.run(body, 2, clock=clock)
    assert all(s == pytest.approx(0.02, abs=1e-6) for s in slept)
    assert time.sleep.__module__ == 'time'


def test_a_message_that_arrived_during_compute_costs_no_wait():
    # rank 1 posts Irecv, then works 20 ms (a sleep): the 9 ms message
    # has arrived by its Wait, which then costs nothing; without the
    # work, the Wait lasts until the arrival.
    def body(comm, work):
        buf = np.zeros(NBYTES, np.uint8)
        if comm.Get_rank() == 0:
            comm.Send(buf, 1)
            return
        req = comm.Irecv(buf, 0)
        time.sleep(work)
        req.Wait()
    for work, expected in ((0.02, 0.02), (0.0, HOP)):
        clock = _clock()
        simulator.run(lambda comm, w=work: body(comm, w), 2, clock=clock)
        assert clock.clocks[1].now == pytest.approx(expected, abs=1e-6)


def test_iallreduce_overlaps_compute():
    def body(comm):
        out = np.empty(1, np.float64)
        req = comm.Iallreduce(np.ones(1), out)
        time.sleep(0.02)
        req.Wait()
        return out[0]
    clock = _clock()
    assert simulator.run(body, 2, clock=clock) == [2.0, 2.0]
    # one latency + 8 bytes (recursive doubling) hides in the 20 ms
    assert [c.now for c in clock.clocks] == [pytest.approx(0.02, abs=1e-6)] * 2


def test_nccl_collectives_are_timed_like_mpi_ones():
    from simulator import nccl

    def body(comm):
        uid = comm.bcast(nccl.get_unique_id() if comm.Get_rank() == 0
                         else None)
        nc = nccl.NcclCommunicator(comm.Get_size(), uid, comm.Get_rank())
        x = np.ones(NBYTES // 4, np.float32)
        before = time.perf_counter()
        nc.allReduce(x.ctypes.data, x.ctypes.data, x.size,
                     nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
        return time.perf_counter() - before, x[0]
    clock = _clock(collectives={'allreduce': 'ring'})
    results = simulator.run(body, 2, clock=clock)
    # ring over 2 ranks: 2 latencies + the whole buffer once, from the
    # last arrival (whose own wait is just that)
    assert [r[1] for r in results] == [2.0, 2.0]
    assert min(r[0] for r in results) == pytest.approx(
        2 * LATENCY + NBYTES / BANDWIDTH, abs=1e-6)


def test_allgather_is_charged_for_the_gathered_total():
    # ring allgather over 4 ranks of 1,000 bytes each: 3 latencies and
    # 3/4 of the 4,000 gathered bytes through each rank's link
    def body(comm):
        out = np.empty(4000, np.uint8)
        comm.Barrier()
        before = time.perf_counter()
        comm.Allgather(np.zeros(1000, np.uint8), out)
        return time.perf_counter() - before
    clock = _clock(collectives={'allgather': 'ring'})
    spent = simulator.run(body, 4, clock=clock)
    assert min(spent) == pytest.approx(3 * LATENCY + 3000 / BANDWIDTH,
                                       abs=1e-6)


def test_imports_count_for_no_rank(tmp_path, monkeypatch):
    # The ranks share libraries: whichever rank imported one first would
    # pay for all of them, differently from run to run.
    (tmp_path / 'slow_to_import_vt.py').write_text(
        'import time\n'
        'end = time.thread_time() + 0.1\n'
        'while time.thread_time() < end:\n'
        '    pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))

    def body(comm):
        import slow_to_import_vt  # noqa: F401
    clock = _clock(scale=1.0)
    simulator.run(body, 2, clock=clock)
    assert max(c.compute for c in clock.clocks) < 0.05
    assert not hasattr(__import__, 'simulator_virtual')


def test_non_in_place_allreduce_pays_the_copy_of_its_send_buffer():
    # Open MPI's rules over 2 ranks at 4 MiB: Rabenseifner, 2 latencies,
    # the whole buffer once through the link, half of it reduced; a
    # non-in-place call first copies its send buffer.
    n, reduce_bw, copy_bw = 4 << 20, 2e9, 4e9
    machine = Machine('ompi', Link('intra', LATENCY, BANDWIDTH),
                      reduce_bandwidth=reduce_bw, copy_bandwidth=copy_bw,
                      selection='openmpi')

    def body(comm, in_place):
        out = np.ones(n // 4, np.float32)
        comm.Barrier()
        before = time.perf_counter()
        if in_place:
            comm.Allreduce(MPI.IN_PLACE, out)
        else:
            comm.Allreduce(np.ones_like(out), out)
        return time.perf_counter() - before, out[0]
    collective = 2 * LATENCY + n / BANDWIDTH + n / 2 / reduce_bw
    for in_place, expected in ((True, collective),
                               (False, collective + n / copy_bw)):
        clock = VirtualTime(machine, compute_scale=TINY)
        results = simulator.run(lambda c, i=in_place: body(c, i), 2,
                                clock=clock)
        assert [r[1] for r in results] == [2.0, 2.0]
        assert min(r[0] for r in results) == pytest.approx(expected,
                                                           abs=1e-6)


class _FixedBoundary(VirtualTime):
    """A clock whose call path costs ``boundary`` s, whatever was
    measured."""

    def __init__(self, boundary):
        super().__init__(Machine('slow', Link('intra', LATENCY, BANDWIDTH)),
                         compute_scale=1.0)
        self.fixed = boundary

    def attach(self, world, boundary=0.0):
        super().attach(world, self.fixed)


def test_the_call_path_is_not_compute():
    # The simulator's own work around each MPI call is measured once per
    # process and taken off the compute between calls.
    cost = boundary_cost()
    assert 0 < cost < 1e-3
    with pytest.raises(ValueError, match='rounds must be at least 2, got 1'):
        boundary_cost(rounds=1)

    def body(comm):
        for _ in range(200):
            comm.Barrier()
        if comm.Get_rank() == 0:
            end = time.thread_time() + 0.02
            while time.thread_time() < end:
                pass
        comm.Barrier()
    for boundary in (0.0, 1.0):     # 1 s: no gap is left any compute
        clock = _FixedBoundary(boundary)
        simulator.run(body, 2, clock=clock)
        c0, c1 = clock.clocks
        if boundary:
            # the spin before the last call is a gap too: all gone
            assert c0.compute < 1e-3 and c1.compute < 1e-3
        else:
            assert c0.compute >= 0.02
    with pytest.raises(ValueError, match='boundary must be non-negative'):
        _clock().attach(None, -1.0)


def test_garbage_collection_counts_for_no_rank():
    # A collection runs in whichever rank thread allocated last, over
    # every rank's garbage: it must not land on that rank's clock.
    import gc

    class Node:
        pass
    garbage = []
    for _ in range(200000):
        a, b = Node(), Node()
        a.other, b.other = b, a
        garbage.append(a)
    del a, b

    def body(comm):
        if comm.Get_rank() == 0:
            before = time.thread_time()
            gc.collect()
            return time.thread_time() - before

    gc.disable()
    try:
        garbage.clear()
        clock = _clock(scale=1.0)
        spent, _ = simulator.run(body, 2, clock=clock)
    finally:
        gc.enable()
    assert spent > 0.01
    assert clock.clocks[0].compute < spent / 4
    assert _gc_phase_removed()


def _gc_phase_removed():
    import gc
    return not any(getattr(f, '__module__', '') ==
                   'simulator.engine.clock' for f in gc.callbacks)


@pytest.mark.skipif(not hasattr(os, 'sched_getaffinity'),
                    reason='the platform has no thread affinity')
def test_a_rank_kept_on_one_core_sees_the_cores_its_process_would():
    # The rank threads share one core (one_core); a program that sizes
    # its pools by its affinity still sees the launcher's cores, in its
    # threads too.
    def body(comm):
        seen = []
        child = threading.Thread(
            target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
        child.start()
        child.join()
        return sorted(os.sched_getaffinity(0)), sorted(
            os.sched_getaffinity(os.getpid())), seen[0]
    launcher = sorted(os.sched_getaffinity(0))
    clock = _clock()
    assert simulator.run(body, 2, clock=clock) == [(launcher,) * 3] * 2
    assert sorted(os.sched_getaffinity(0)) == launcher
