"""simulator.engine.reports: reports, explainers, grouping; trace records."""
import time
import traceback

import pytest

import simulator
from simulator.engine import reports as checks
from simulator.errors import DeadlockError, UnmatchedMessageError
from simulator.engine.trace import CallRecord, capture, resolve, user_frame

UNSAFE = 'deliberately broken program (deadlock / lost message)'


def _ring_deadlock(comm):
    comm.recv(source=(comm.Get_rank() + 1) % comm.Get_size(), tag=9)


@pytest.mark.simulator_only(UNSAFE)
def test_explainer_sees_pending_calls_with_stacks_and_adds_a_hint():
    seen = []

    def explain(report):
        seen.append(report)
        record = report.pending[0]
        assert all(isinstance(f, traceback.FrameSummary)
                   for f in record.stack)
        names = [f.name for f in record.stack]
        return 'ring of {} recvs; innermost user frame {}'.format(
            len(report.pending), '_ring_deadlock' in names)

    checks.register_explainer(explain)
    checks.register_explainer(explain)      # idempotent
    try:
        with pytest.raises(DeadlockError) as info:
            simulator.run(_ring_deadlock, 3, timeout=30)
    finally:
        checks.unregister_explainer(explain)
    assert len(seen) == 1
    assert 'hint: ring of 3 recvs; innermost user frame True' in str(
        info.value)
    report = info.value.report
    assert set(report.pending) == {0, 1, 2}
    assert {(r.op, r.peer, r.tag) for r in report.pending.values()} == {
        ('recv', 1, 9), ('recv', 2, 9), ('recv', 0, 9)}
    assert explain not in checks.explainers()


@pytest.mark.simulator_only(UNSAFE)
def test_a_failing_explainer_does_not_hide_the_report():
    def broken(report):
        raise ValueError('explainer bug')
    checks.register_explainer(broken)
    try:
        with pytest.raises(DeadlockError) as info:
            simulator.run(_ring_deadlock, 2, timeout=30)
    finally:
        checks.unregister_explainer(broken)
    text = str(info.value)
    assert 'rank 0: blocked in recv(peer=1, tag=9' in text
    assert 'explainer bug' in text


@pytest.mark.simulator_only(UNSAFE)
def test_many_ranks_waiting_on_the_same_call_share_one_line():
    def body(comm):
        if comm.Get_rank() != 0:
            comm.Barrier()
        else:
            comm.recv(source=1, tag=2)

    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 64, timeout=30)
    text = str(info.value)
    assert 'rank 0: blocked in recv(peer=1, tag=2' in text
    assert 'ranks 1-63: blocked in Barrier(comm=MPI_COMM_WORLD' in text
    assert 'ranks 0 of MPI_COMM_WORLD never joined' in text
    assert len(text.splitlines()) < 10


@pytest.mark.simulator_only(UNSAFE)
def test_waiting_on_a_finished_rank_is_reported_while_others_still_run():
    def body(comm):
        rank = comm.Get_rank()
        if rank == 0:
            comm.recv(source=1, tag=3)
        elif rank == 2:
            # Still busy when the deadlock becomes certain; it learns of
            # it at its next MPI call.
            time.sleep(0.5)
            comm.Barrier()

    start = time.monotonic()
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 3, timeout=30)
    assert time.monotonic() - start < 5
    text = str(info.value)
    assert 'waits for ranks that have finished' in text
    assert 'rank 0: blocked in recv(peer=1, tag=3' in text


@pytest.mark.simulator_only(UNSAFE)
def test_unmatched_report_names_sender_receiver_tag_and_line():
    def body(comm):
        if comm.Get_rank() == 1:
            comm.send('lost', dest=0, tag=4)  # LOST SEND

    with pytest.raises(UnmatchedMessageError) as info:
        simulator.run(body, 2)
    text = str(info.value)
    assert 'message from rank 1 to rank 0 never received' in text
    assert 'send(peer=0, tag=4, comm=MPI_COMM_WORLD)' in text
    assert 'test_reports.py:' in text
    assert len(info.value.report.unmatched) == 1


def test_user_frame_skips_library_folders():
    import chainer
    import numpy
    simulator_file = simulator.engine.trace.__file__
    raw = [(simulator_file, 10, 'Send'),
           (numpy.__file__, 7, 'asarray'),
           (chainer.__file__, 5, 'backward'),
           ('/home/me/train.py', 42, 'main')]
    assert user_frame(raw) == ('/home/me/train.py', 42, 'main')


def test_registered_libraries_and_installed_packages_are_not_user_code():
    from simulator.engine import libraries
    import chainermn_lite
    # Installed in development mode, outside site-packages: found through
    # its distribution's metadata.
    assert libraries.is_library_file(chainermn_lite.__file__)
    assert not libraries.is_library_file(__file__)
    assert libraries.is_library_file('<frozen importlib._bootstrap>')
    assert not libraries.is_library_file('<string>')
    folder = '/x/my_mpi_helpers'
    assert not libraries.is_library_file(folder + '/helpers.py')
    simulator.register_library(folder)
    assert libraries.is_library_file(folder + '/helpers.py')


def test_call_record_describes_itself_with_the_callers_line():
    record = CallRecord('Recv', 3, peer=-1, tag=-1, comm='MPI_COMM_WORLD',
                        raw=capture(1))
    text = record.describe()
    assert text.startswith('Recv(peer=ANY_SOURCE, tag=ANY_TAG, '
                           'comm=MPI_COMM_WORLD) at ')
    assert 'test_reports.py:' in text
    assert record.stack[-1].name == (
        'test_call_record_describes_itself_with_the_callers_line')


def test_capture_pins_each_frames_line_at_capture_time():
    import sys

    def both():
        # Each frame's line as f_lineno says it now, beside the capture.
        frame, now = sys._getframe(1), []
        while frame is not None:
            now.append((frame.f_code.co_filename, frame.f_lineno,
                        frame.f_code.co_name))
            frame = frame.f_back
        return capture(2), now

    raw, now = both()
    moved = 'the frames run on after the capture'
    assert moved and resolve(raw) == now[:64]
    assert resolve(raw)[0][2] == (
        'test_capture_pins_each_frames_line_at_capture_time')


@pytest.mark.simulator_only(UNSAFE)
def test_send_to_a_finished_rank_is_reported_at_the_send():
    def body(comm):
        if comm.Get_rank() == 0:
            comm.Barrier()
            time.sleep(0.2)
            comm.send('too late', dest=1, tag=8)  # LATE SEND
        else:
            comm.Barrier()

    with pytest.raises(UnmatchedMessageError) as info:
        simulator.run(body, 2)
    text = str(info.value)
    assert 'message to rank 1, which has already finished' in text
    assert 'message from rank 0 to rank 1 never received' in text
    assert 'send(peer=1, tag=8' in text
    assert 'test_reports.py:' in text


@pytest.mark.simulator_only(UNSAFE)
def test_a_test_loop_that_can_never_succeed_is_reported():
    def body(comm):
        if comm.Get_rank() == 0:
            request = comm.irecv(source=1, tag=4)  # POLLED RECV
            while not request.Test():
                pass
        else:
            comm.recv(source=0, tag=9)

    start = time.monotonic()
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    assert time.monotonic() - start < 5
    text = str(info.value)
    assert 'polling' in text
    assert 'irecv(peer=1, tag=4' in text
    assert 'recv(peer=0, tag=9' in text


@pytest.mark.simulator_only('timing-dependent: polls while a peer computes')
def test_polling_while_a_peer_computes_is_not_a_deadlock():
    def body(comm):
        if comm.Get_rank() == 0:
            request = comm.irecv(source=1, tag=4)
            while not request.Test():
                pass
            return 'received'
        time.sleep(1.5)             # longer than the polling grace
        comm.send('late but fine', dest=0, tag=4)
        return None
    assert simulator.run(body, 2, timeout=30) == ['received', None]
