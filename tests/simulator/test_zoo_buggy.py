"""The zoo of buggy programs: every check of the simulator must fire.

Each program is deliberately broken (under real MPI it would hang or
silently corrupt data), so these tests are simulator-only. Each asserts the
exception type, that the report names what a person needs to fix the bug
(op, peer, tag, ranks, and the offending line of this file), and that it
came quickly (a check, not the backstop timeout).
"""
import os
import re
import time

import numpy as np
import pytest

import simulator
import simulator.mpi as MPI
from simulator.errors import (AbortError, CollectiveMismatchError,
                              DeadlockError, MessageMismatchError,
                              RankFailedError, UnmatchedMessageError)

BROKEN = ('deliberately broken program: under real MPI it would hang / '
          'corrupt')
# The checks must fire within 2 s of certainty; the slack absorbs thread
# start-up on a loaded 2-core machine.
DETECTION_LIMIT_S = 2.0 + 2.0
BACKSTOP_S = 60.0

_FILE = os.path.basename(__file__)
with open(__file__) as _source:
    _LINES = _source.read().splitlines()


def _where(marker):
    """'test_zoo_buggy.py:N' of the line that ends with '# <marker>'."""
    hits = [n for n, text in enumerate(_LINES, 1)
            if text.rstrip().endswith('# ' + marker)]
    assert len(hits) == 1, marker
    return '{}:{}'.format(_FILE, hits[0])


def _expect(error_type, fn, size, limit=DETECTION_LIMIT_S, **kwargs):
    start = time.monotonic()
    with pytest.raises(error_type) as info:
        simulator.run(fn, size, timeout=BACKSTOP_S, **kwargs)
    elapsed = time.monotonic() - start
    assert elapsed < limit, 'reported after {:.2f} s'.format(elapsed)
    return info.value, str(info.value)


# --- deadlocks ---------------------------------------------------------

@pytest.mark.simulator_only(BROKEN)
def test_head_to_head_blocking_recv_two_ranks():
    def program(comm):
        other = 1 - comm.Get_rank()
        comm.recv(source=other, tag=7)  # BUG: head-to-head recv
        comm.send('never', dest=other, tag=7)

    _, text = _expect(DeadlockError, program, 2)
    assert 'rank 0' in text and 'rank 1' in text
    assert 'recv' in text.lower()
    assert 'peer=1' in text and 'peer=0' in text
    assert 'tag=7' in text
    assert _where('BUG: head-to-head recv') in text


@pytest.mark.simulator_only(BROKEN)
def test_recv_cycle_ring_of_eight():
    def program(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        buf = np.zeros(1)
        comm.Recv(buf, source=(rank - 1) % size, tag=3)  # BUG: ring recv
        comm.Send(buf, dest=(rank + 1) % size, tag=3)

    _, text = _expect(DeadlockError, program, 8)
    for rank in range(8):
        assert 'rank {}'.format(rank) in text
        assert 'peer={}'.format((rank - 1) % 8) in text
    assert _where('BUG: ring recv') in text


@pytest.mark.simulator_only(BROKEN)
def test_waiting_on_a_finished_rank():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.recv(source=1, tag=5)  # BUG: peer already returned

    _, text = _expect(DeadlockError, program, 2)
    assert 'rank 0' in text and 'peer=1' in text and 'tag=5' in text
    assert 'finished' in text
    assert _where('BUG: peer already returned') in text


@pytest.mark.simulator_only(BROKEN)
@pytest.mark.parametrize('size', [2, 4])
def test_collective_one_rank_never_joins(size):
    def program(comm):
        if comm.Get_rank() != size - 1:
            comm.Barrier()  # BUG: last rank skips the barrier

    _, text = _expect(DeadlockError, program, size)
    assert 'barrier' in text.lower()
    assert str(size - 1) in text
    assert _where('BUG: last rank skips the barrier') in text


@pytest.mark.simulator_only(BROKEN)
def test_rendezvous_head_to_head_sends_deadlock():
    def program(comm):
        other = 1 - comm.Get_rank()
        big = np.ones(1 << 18)
        received = np.empty_like(big)
        comm.Send(big, dest=other, tag=1)  # BUG: both send first
        comm.Recv(received, source=other, tag=1)
        return received.sum()

    _, text = _expect(DeadlockError, program, 2, send_mode='rendezvous')
    assert 'send' in text.lower()
    assert 'peer=0' in text and 'peer=1' in text
    assert _where('BUG: both send first') in text
    # Eager buffering hides the same bug: it passes there.
    assert simulator.run(program, 2, send_mode='eager',
                         timeout=BACKSTOP_S) == [float(1 << 18)] * 2


@pytest.mark.simulator_only(BROKEN)
def test_thousand_rank_deadlock_reported_within_two_seconds():
    size = 1024
    blocked_at = [None] * size

    def program(comm):
        rank = comm.Get_rank()
        blocked_at[rank] = time.monotonic()
        comm.recv(source=(rank + 1) % size, tag=9)  # BUG: 1024-rank cycle

    # Starting 1,024 threads on a loaded machine takes its own time; the
    # check is measured from the moment the last rank blocked (certainty).
    _, text = _expect(DeadlockError, program, size, limit=BACKSTOP_S / 2)
    latency = time.monotonic() - max(blocked_at)
    assert latency < DETECTION_LIMIT_S, 'reported {:.2f} s after the ' \
        'last rank blocked'.format(latency)
    assert 'rank 1023' in text
    assert _where('BUG: 1024-rank cycle') in text


# --- collective mismatches ---------------------------------------------

@pytest.mark.simulator_only(BROKEN)
def test_bcast_against_allreduce():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.bcast('x', root=0)  # BUG: rank 0 bcasts
        else:
            comm.allreduce(1)  # BUG: others allreduce

    _, text = _expect(CollectiveMismatchError, program, 3)
    assert 'bcast' in text and 'allreduce' in text
    # The report names the ranks that disagree: rank 1 or 2, whichever
    # arrived first, or both when both arrived before rank 0.
    assert 'rank 0' in text and re.search(
        r'(rank [12]|ranks 1, 2) called allreduce', text)
    assert _where('BUG: rank 0 bcasts') in text
    assert _where('BUG: others allreduce') in text


@pytest.mark.simulator_only(BROKEN)
def test_different_roots():
    def program(comm):
        buf = np.zeros(4)
        comm.Bcast(buf, root=comm.Get_rank() % 2)  # BUG: roots differ

    _, text = _expect(CollectiveMismatchError, program, 4)
    assert 'root' in text
    assert _where('BUG: roots differ') in text


@pytest.mark.simulator_only(BROKEN)
def test_different_ops():
    def program(comm):
        op = MPI.SUM if comm.Get_rank() == 0 else MPI.MAX
        result = np.zeros(2)
        comm.Allreduce(np.ones(2), result, op=op)  # BUG: ops differ

    _, text = _expect(CollectiveMismatchError, program, 2)
    assert 'SUM' in text and 'MAX' in text
    assert _where('BUG: ops differ') in text


@pytest.mark.simulator_only(BROKEN)
def test_different_counts_in_allreduce():
    def program(comm):
        n = 3 if comm.Get_rank() == 0 else 4
        comm.Allreduce(np.ones(n), np.zeros(n), op=MPI.SUM)  # BUG: counts

    _, text = _expect(CollectiveMismatchError, program, 2)
    assert 'count' in text.lower()
    assert '3' in text and '4' in text
    assert _where('BUG: counts') in text


@pytest.mark.simulator_only(BROKEN)
def test_different_dtypes_in_allreduce():
    def program(comm):
        dtype = np.float32 if comm.Get_rank() == 0 else np.float64
        buf = np.ones(4, dtype=dtype)
        comm.Allreduce(buf, np.zeros_like(buf), op=MPI.SUM)  # BUG: dtypes

    _, text = _expect(CollectiveMismatchError, program, 2)
    assert 'float32' in text and 'float64' in text
    assert _where('BUG: dtypes') in text


# --- messages ----------------------------------------------------------

@pytest.mark.simulator_only(BROKEN)
def test_message_never_received():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.send({'lost': True}, dest=1, tag=42)  # BUG: nobody recvs

    _, text = _expect(UnmatchedMessageError, program, 2)
    assert 'rank 1' in text and 'tag=42' in text
    assert _where('BUG: nobody recvs') in text


@pytest.mark.simulator_only(BROKEN)
def test_receive_left_posted_at_the_end():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.Irecv(np.zeros(3), source=1, tag=5)  # BUG: leaked receive
        comm.Barrier()

    _, text = _expect(UnmatchedMessageError, program, 2)
    assert 'receive posted by rank 0 never matched' in text
    assert 'tag=5' in text and _where('BUG: leaked receive') in text


@pytest.mark.simulator_only(BROKEN)
def test_receive_buffer_too_small_is_mpi_truncate():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.Send(np.arange(10.0), dest=1, tag=2)
        else:
            comm.Recv(np.zeros(4), source=0, tag=2)  # BUG: buffer too small

    error, text = _expect(MPI.Exception, program, 2)
    assert error.Get_error_class() == MPI.ERR_TRUNCATE
    assert any('rank 1' in note for note in getattr(error, '__notes__', []))


@pytest.mark.simulator_only(BROKEN)
def test_receive_dtype_differs_from_sent():
    def program(comm):
        if comm.Get_rank() == 0:
            comm.Send(np.arange(4, dtype=np.float64), dest=1, tag=6)
        else:
            # Same byte count: real MPI would silently reinterpret bits.
            buf = np.zeros(8, dtype=np.float32)
            comm.Recv(buf, source=0, tag=6)  # BUG: dtype differs

    _, text = _expect(MessageMismatchError, program, 2)
    assert 'float32' in text and 'float64' in text
    assert 'tag=6' in text
    assert _where('BUG: dtype differs') in text


# --- one rank fails ----------------------------------------------------

@pytest.mark.simulator_only(BROKEN)
def test_exception_in_one_rank_releases_the_others():
    seen = {}

    def program(comm):
        rank = comm.Get_rank()
        try:
            if rank == 0:
                raise ValueError('boom in rank 0')
            if rank == 1:
                comm.recv(source=0, tag=1)
            elif rank == 2:
                comm.Barrier()
            else:
                comm.allreduce(rank)
        except RankFailedError as error:
            seen[rank] = error
            raise

    start = time.monotonic()
    with pytest.raises(ValueError, match='boom in rank 0') as info:
        simulator.run(program, 4, timeout=BACKSTOP_S)
    assert time.monotonic() - start < DETECTION_LIMIT_S
    notes = getattr(info.value, '__notes__', [])
    assert any('rank 0' in note for note in notes)
    assert sorted(seen) == [1, 2, 3]
    for error in seen.values():
        assert error.failed_rank == 0
        assert 'rank 0' in str(error)


@pytest.mark.simulator_only(BROKEN)
def test_abort_in_one_rank_stops_the_world():
    def program(comm):
        if comm.Get_rank() == 1:
            comm.Abort(3)
        comm.recv(source=1, tag=0)

    error, text = _expect(AbortError, program, 3)
    assert error.errorcode == 3
    assert 'rank 1' in text and 'Abort(3)' in text
