"""simulator.engine.schedule: programs whose bug shows only under some
message orders are found by exploration and replayed exactly; correct
wildcard programs are never reported, under any schedule.

The buggy programs hang or change their result under ``mpiexec`` from run
to run, so they are simulator-only; the correct ones run both ways.
"""
import re

import numpy as np
import pytest

import simulator
from simulator.errors import DeadlockError
from simulator.tools.explore import explore, parse_schedule

TIMING = ('deliberately timing-dependent program: under real MPI it hangs '
          'or changes its result in some runs only')
# Each bug is found within this many seeded schedules (seeds 0..N-1):
# the documented budget; the tests check the first N seeds find it.
FOUND_WITHIN = 10


def _explore(fn, runs=FOUND_WITHIN, **options):
    return explore(fn, 3, runs, timeout=60, **options)


def _replay(fn, spec, times=3):
    """The errors (type and text, objects' addresses masked: a Status
    prints as mpi4py's, <... object at 0x...>) or results of ``times``
    replays."""
    seen = []
    for _ in range(times):
        try:
            seen.append(('ok', simulator.run(fn, 3, timeout=60,
                                             schedule=parse_schedule(spec))))
        except Exception as error:  # noqa: B902 -- compared below
            seen.append((type(error).__name__,
                         re.sub(r' at 0x[0-9a-f]+>', '>', str(error))))
    return seen


# -- buggy programs -------------------------------------------------------
def wildcard_either_sender(comm):
    """Rank 0 assumes rank 1's message comes first."""
    MPI = simulator.mpi
    rank = comm.Get_rank()
    if rank == 0:
        first = comm.recv(source=MPI.ANY_SOURCE, tag=0)
        comm.recv(source=2 if first == 1 else 1, tag=0)
        if first == 2:
            comm.recv(source=1, tag=1)      # never sent: hangs
    else:
        comm.send(rank, dest=0, tag=0)


def any_tag_takes_next_phase(comm):
    """Phase 1 expects tag 1 from both peers; ANY_TAG may take a peer's
    phase-2 message instead."""
    MPI = simulator.mpi
    rank = comm.Get_rank()
    if rank == 0:
        status = MPI.Status()
        for _ in range(2):
            comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
            assert status.Get_tag() == 1, 'phase 2 message in phase 1'
        for _ in range(2):
            comm.recv(source=MPI.ANY_SOURCE, tag=2)
    else:
        comm.send('phase1', dest=0, tag=1)
        comm.send('phase2', dest=0, tag=2)


def waitany_decides_protocol(comm):
    """Rank 0 answers only the peer whose message Waitany reports first;
    the protocol assumed it is always rank 1."""
    MPI = simulator.mpi
    rank = comm.Get_rank()
    if rank == 0:
        reqs = [comm.irecv(source=1, tag=0), comm.irecv(source=2, tag=0)]
        index, _ = MPI.Request.waitany(reqs)
        comm.send('go', dest=1 + index, tag=1)
        reqs[1 - index].wait()
    elif rank == 1:
        comm.send('ready', dest=0, tag=0)
        comm.recv(source=0, tag=1)          # hangs if rank 2 went first
    else:
        comm.send('ready', dest=0, tag=0)


def noncommutative_fold(comm):
    """acc = acc / 2 + x over ANY_SOURCE receives: the order changes the
    result (2.25 or 2.75 for inputs 1 and 3... here 1 and 2)."""
    MPI = simulator.mpi
    rank = comm.Get_rank()
    if rank == 0:
        acc = 0.0
        for _ in range(2):
            acc = acc / 2 + comm.recv(source=MPI.ANY_SOURCE)
        return acc
    comm.send(float(rank), dest=0)
    return None


@pytest.mark.parametrize('program, error', [
    (wildcard_either_sender, DeadlockError),
    (any_tag_takes_next_phase, AssertionError),
    (waitany_decides_protocol, DeadlockError),
])
def test_exploration_finds_the_bug_and_replay_reproduces_it(program, error):
    report = _explore(program)
    assert report.failure is not None, report
    spec, found = report.failure
    assert isinstance(found, error)
    assert report.runs <= FOUND_WITHIN
    assert 'replay with schedule={!r}'.format(spec) in found.__notes__[-1]
    replays = _replay(program, spec)
    assert replays[0][0] == error.__name__
    assert replays == [replays[0]] * 3


@pytest.mark.parametrize('program', [
    wildcard_either_sender, any_tag_takes_next_phase,
    waitany_decides_protocol])
def test_systematic_search_finds_the_bug(program):
    report = _explore(program, runs='all')
    assert report.failure is not None, report
    assert _replay(program, report.failure[0], 1)[0][0] != 'ok'


def test_nondeterministic_result_is_reported_with_both_schedules():
    report = _explore(noncommutative_fold)
    assert report.failure is None
    assert report.diverged is not None, report
    spec_a, spec_b, line_a, line_b = report.diverged
    assert {line_a, line_b} == {'rank 0: 2.5', 'rank 0: 2.0'}
    for spec, line in ((spec_a, line_a), (spec_b, line_b)):
        for _ in range(3):
            got = simulator.run(noncommutative_fold, 3,
                                schedule=parse_schedule(spec))
            assert 'rank 0: {!r}'.format(got[0]) == line
    every = _explore(noncommutative_fold, runs='all')
    assert every.diverged is not None and every.runs == 2


def test_same_seed_same_choices_every_run():
    traces = set()
    for _ in range(3):
        schedule = parse_schedule('7')
        simulator.run(noncommutative_fold, 3, schedule=schedule)
        traces.add(tuple(schedule.trace))
    assert len(traces) == 1


def test_a_schedule_object_drives_one_run_only():
    schedule = parse_schedule('4')
    simulator.run(noncommutative_fold, 3, schedule=schedule)
    with pytest.raises(ValueError, match=r'Schedule\(4\) already drove'):
        simulator.run(noncommutative_fold, 3, schedule=schedule)


def test_default_run_makes_no_scheduled_choice():
    # No schedule: today's behaviour, the first message to arrive wins.
    assert simulator.run(noncommutative_fold, 3)[0] in (2.0, 2.5)


def test_bad_schedule_spellings_are_named():
    with pytest.raises(ValueError, match="'x1'"):
        parse_schedule('x1')
    with pytest.raises(ValueError, match='choices:1,-1'):
        parse_schedule('choices:1,-1')
    with pytest.raises(ValueError, match="'all!'"):
        explore(noncommutative_fold, 3, 'all!')


# -- correct wildcard programs: never reported --------------------------
@pytest.mark.mpi(sizes=(3,), explore='all')
def test_server_answers_whoever_asks(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    if rank == 0:
        status = MPI.Status()
        for _ in range(2 * (mpi_comm.Get_size() - 1)):
            n = mpi_comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG,
                              status=status)
            mpi_comm.send(n * 10, dest=status.Get_source(),
                          tag=status.Get_tag())
    else:
        for tag in (1, 2):
            mpi_comm.send(rank + tag, dest=0, tag=tag)
            assert mpi_comm.recv(source=0, tag=tag) == (rank + tag) * 10


@pytest.mark.mpi(sizes=(3,), explore='all')
def test_waitany_loop_sums_every_message(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if rank == 0:
        reqs = [mpi_comm.irecv(source=r, tag=5) for r in range(1, size)]
        total = 0
        for _ in range(size - 1):
            index, value = MPI.Request.waitany(reqs)
            total += value
        assert total == sum(range(1, size))
    else:
        mpi_comm.send(rank, dest=0, tag=5)


@pytest.mark.mpi(sizes=(3,), explore='all')
def test_probe_any_source_then_receive_that_message(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if rank == 0:
        got = []
        status = MPI.Status()
        for _ in range(size - 1):
            mpi_comm.Probe(source=MPI.ANY_SOURCE, tag=3, status=status)
            got.append(mpi_comm.recv(source=status.Get_source(), tag=3))
            assert got[-1] == status.Get_source()
        assert sorted(got) == list(range(1, size))
    else:
        mpi_comm.send(rank, dest=0, tag=3)


@pytest.mark.mpi(sizes=(3,), explore=20)
def test_polling_with_iprobe_and_test(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if rank == 0:
        seen = 0
        while seen < size - 1:
            if mpi_comm.iprobe(source=MPI.ANY_SOURCE, tag=4):
                mpi_comm.recv(source=MPI.ANY_SOURCE, tag=4)
                seen += 1
        req = mpi_comm.irecv(source=1, tag=6)
        while True:
            done, value = req.test()
            if done:
                break
        assert value == 'last'
    else:
        mpi_comm.send(rank, dest=0, tag=4)
        if rank == 1:
            mpi_comm.send('last', dest=0, tag=6)


@pytest.mark.mpi(sizes=(3,), explore=10)
def test_polling_a_nonblocking_collective(mpi_comm, MPI):
    data = np.full(4, mpi_comm.Get_rank(), dtype=np.float64)
    out = np.empty_like(data)
    req = mpi_comm.Iallreduce(data, out, op=MPI.SUM)
    polls = 0
    while not req.Test():
        polls += 1
    assert out.tolist() == [3.0] * 4
    mpi_comm.Barrier()


@pytest.mark.mpi(sizes=(3,), explore='all')
def test_waitsome_and_testsome_report_every_request_once(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if rank == 0:
        for some in (MPI.Request.waitsome, MPI.Request.testsome):
            reqs = [mpi_comm.irecv(source=r, tag=7) for r in range(1, size)]
            got = {}
            while len(got) < size - 1:
                indices, values = some(reqs)
                for i, v in zip(indices, values):
                    assert i not in got
                    got[i] = v
            assert got == {r - 1: r for r in range(1, size)}
            assert some(reqs) == (None, None)
            mpi_comm.barrier()
    else:
        for _ in range(2):
            mpi_comm.send(rank, dest=0, tag=7)
            mpi_comm.barrier()


@pytest.mark.simulator_only(TIMING)
def test_a_poll_that_can_never_succeed_is_a_deadlock_under_a_schedule():
    def spin(comm):
        if comm.Get_rank() == 0:
            req = comm.irecv(source=1, tag=9)
            while not req.Test():
                pass
        else:
            comm.Barrier()
    with pytest.raises(DeadlockError, match=r'(?s)irecv\(peer=1, tag=9.*'
                       r'Barrier'):
        simulator.run(spin, 2, schedule=3, timeout=30)


def late_sender_overtakes(comm):
    """Rank 0 assumes rank 2's message comes first; rank 1's comes only
    after rank 1's own wildcard receive, yet may still arrive first."""
    MPI = simulator.mpi
    rank = comm.Get_rank()
    if rank == 0:
        first = comm.recv(source=MPI.ANY_SOURCE, tag=0)
        comm.recv(source=MPI.ANY_SOURCE, tag=0)
        assert first == 'early', 'the late message came first'
    elif rank == 1:
        comm.recv(source=MPI.ANY_SOURCE, tag=5)
        comm.send('late', dest=0, tag=0)
    else:
        comm.send('early', dest=0, tag=0)
        comm.send('go', dest=1, tag=5)


def test_systematic_search_defers_a_choice_a_later_message_could_change():
    # Both wildcards are pending at the first fence; taken in rank order,
    # rank 0 would only ever see 'early' first.
    report = _explore(late_sender_overtakes, runs='all')
    assert isinstance(report.failure[1], AssertionError), report
    assert report.runs <= 3
    replays = _replay(late_sender_overtakes, report.failure[0])
    assert replays == [replays[0]] * 3
    assert replays[0][0] == 'AssertionError'
    assert replays[0][1].startswith('the late message came first')


def head_to_head(comm):
    """Both ranks send before receiving: fine while sends are buffered,
    a deadlock once both wait for their receives (MPI allows either)."""
    peer = 1 - comm.Get_rank()
    comm.send('hello', dest=peer)
    return comm.recv(source=peer)


def test_mixed_send_mode_finds_code_that_needs_buffering():
    assert simulator.run(head_to_head, 2, schedule=0) == ['hello'] * 2
    report = explore(head_to_head, 2, FOUND_WITHIN, send_mode='mixed',
                     timeout=60)
    assert isinstance(report.failure[1], DeadlockError), report
    spec = report.failure[0]
    for _ in range(3):
        with pytest.raises(DeadlockError):
            simulator.run(head_to_head, 2, send_mode='mixed',
                          schedule=parse_schedule(spec))


@pytest.mark.mpi(sizes=(2,), explore=5)
def test_cancel_of_a_receive_nobody_sends_to(mpi_comm, MPI):
    if mpi_comm.Get_rank() == 0:
        buf = np.zeros(1, dtype=np.int64)
        req = mpi_comm.Irecv(buf, source=MPI.ANY_SOURCE, tag=8)
        req.Cancel()
        status = MPI.Status()
        req.Wait(status)
        assert status.Is_cancelled()
    mpi_comm.Barrier()
