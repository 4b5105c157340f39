"""The communication watchdog: a rank blocked too long prints its call."""
import sys
import threading
import time

import numpy as np
import pytest

from chainermn_lite.communicators import _watchdog

LIMIT = 0.3


def _wait_for_report(read, needle, seconds=5.0):
    deadline = time.monotonic() + seconds
    text = ''
    while time.monotonic() < deadline:
        text += read()
        if needle in text:
            break
        time.sleep(0.05)
    return text


@pytest.mark.mpi(sizes=(2,))
def test_recv_blocked_longer_than_limit_prints_call_and_stack(
        mpi_comm, capfd, make_communicator, simulated):
    comm = make_communicator(mpi_comm, 'flat', watchdog=LIMIT)
    if comm.rank == 1:
        time.sleep(LIMIT * 5)
        comm.send(np.arange(3, dtype=np.float32), dest=0, tag=7)
        comm.allreduce_obj(0)
        return
    recv_line = sys._getframe().f_lineno + 1
    got = comm.recv(source=1, tag=7)
    np.testing.assert_array_equal(got, np.arange(3, dtype=np.float32))
    comm.allreduce_obj(0)
    if simulated:
        # Simulated ranks share this process's stderr: wait for the daemon
        # to have written before reading.
        text = _wait_for_report(lambda: capfd.readouterr().err,
                                'recv(source=1, tag=7)')
    else:
        text = capfd.readouterr().err
    assert '[chainermn_lite watchdog] rank 0 ' in text
    assert "'flat' communicator (size 2)" in text
    assert 'recv(source=1, tag=7)' in text
    assert '{}", line {}'.format(__file__, recv_line) in text
    assert 'test_recv_blocked_longer_than_limit' in text
    # Once per stuck call, and nothing once it returned.
    assert text.count('[chainermn_lite watchdog]') == 1
    assert not _watchdog.pending_calls().get(threading.get_ident())


@pytest.mark.mpi(sizes=(2,))
def test_method_blocked_longer_than_limit_prints_call(
        mpi_comm, capfd, make_communicator, simulated):
    # A class method (not a plain-path function): the daemon finds its
    # communicator as the frame's self.
    comm = make_communicator(mpi_comm, 'naive', watchdog=LIMIT)
    if comm.rank == 1:
        time.sleep(LIMIT * 5)
    got = comm.bcast_obj(('from', comm.rank), root=1)
    assert got == ('from', 1)
    comm.allreduce_obj(0)
    if comm.rank == 1:
        return

    def read():
        return capfd.readouterr().err
    text = _wait_for_report(read, 'bcast_obj(') if simulated else read()
    assert "[chainermn_lite watchdog] rank 0 of the 'naive' communicator" \
        in text
    assert 'bcast_obj(obj=(\'from\', 0), max_buf_len=None, root=1)' in text
    assert text.count('[chainermn_lite watchdog]') == 1


@pytest.mark.mpi(sizes=(2,))
def test_calls_within_limit_print_nothing(mpi_comm, capfd, make_communicator):
    comm = make_communicator(mpi_comm, 'flat', watchdog=5.0)
    peer = 1 - comm.rank
    comm.send(np.ones(4), dest=peer, tag=3) if comm.rank == 0 else None
    got = comm.recv(source=peer, tag=3) if comm.rank == 1 else None
    total = comm.allreduce_obj(comm.rank)
    sub = comm.split(0, comm.rank)
    assert sub.__dict__.get('_watchdog_limit') == 5.0
    assert total == 1
    if got is not None:
        np.testing.assert_array_equal(got, np.ones(4))
    assert 'watchdog' not in capfd.readouterr().err


@pytest.mark.simulator_only(reason='environment and argument parsing only')
def test_limit_from_argument_or_environment(monkeypatch):
    monkeypatch.delenv(_watchdog.WATCHDOG_ENV, raising=False)
    assert _watchdog.watchdog_limit() is None
    assert _watchdog.watchdog_limit(2) == 2.0
    assert _watchdog.watchdog_limit(0) is None
    monkeypatch.setenv(_watchdog.WATCHDOG_ENV, '1.5')
    assert _watchdog.watchdog_limit() == 1.5
    assert _watchdog.watchdog_limit(0) is None
    monkeypatch.setenv(_watchdog.WATCHDOG_ENV, 'soon')
    with pytest.raises(ValueError, match="CHAINERMN_LITE_WATCHDOG='soon'"):
        _watchdog.watchdog_limit()
    with pytest.raises(TypeError, match="'3'"):
        _watchdog.watchdog_limit('3')


@pytest.mark.simulator_only(reason='checks what the watchdog changes')
def test_off_wraps_nothing_and_on_wraps_the_blocking_methods(
        monkeypatch, make_communicator):
    # Off, the communicator keeps its plain-path send/recv and nothing
    # else is set on it. On, every blocking method is wrapped on the
    # instance, the plain path included, and still answers the same.
    import simulator
    monkeypatch.delenv(_watchdog.WATCHDOG_ENV, raising=False)

    def body(mpi_comm):
        off = make_communicator(mpi_comm)
        on = make_communicator(mpi_comm, watchdog=60)
        peer = 1 - on.rank
        on.send(np.full(2, on.rank, np.int32), dest=peer, tag=1)
        got = on.recv(source=peer, tag=1)
        return ([(sorted(set(c.__dict__) & set(_watchdog.WATCHED_METHODS)),
                  c.__dict__.get('_watchdog_limit')) for c in (off, on)],
                hasattr(on.send, '__wrapped__') and
                not hasattr(off.send, '__wrapped__'),
                got.tolist(), on.allreduce_obj(on.rank))

    watched = sorted(_watchdog.WATCHED_METHODS)
    for rank, got in enumerate(simulator.run(body, 2)):
        assert got == ([(['recv', 'send'], None), (watched, 60.0)], True,
                       [1 - rank] * 2, 1)


@pytest.mark.mpi(sizes=(2,))
def test_reports_without_reading_other_threads_frames(
        mpi_comm, capfd, make_communicator, simulated, monkeypatch):
    # Walking another thread's frames while it runs can crash CPython
    # 3.11 (a segfault seen in CI): the daemon must not call
    # sys._current_frames, and it still prints the blocked call's stack.
    def forbidden():
        raise AssertionError('the watchdog walked the threads\' frames')
    monkeypatch.setattr(sys, '_current_frames', forbidden)
    comm = make_communicator(mpi_comm, 'naive', watchdog=LIMIT)
    if comm.rank == 1:
        time.sleep(LIMIT * 5)
    line = sys._getframe().f_lineno + 1
    total = comm.allreduce_obj(comm.rank)
    comm.allreduce_obj(0)
    assert total == 1
    if comm.rank == 1:
        return

    def read():
        return capfd.readouterr().err
    text = _wait_for_report(read, 'allreduce_obj(') if simulated else read()
    assert 'rank 0 of the \'naive\' communicator' in text
    assert '{}", line {}'.format(__file__, line) in text
    assert 'walked' not in text


@pytest.mark.mpi(sizes=(2,))
def test_daemon_ends_when_no_call_is_pending(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'naive', watchdog=0.1)
    comm.allreduce_obj(comm.rank)
    assert _watchdog._MONITOR.thread is not None
    comm.allreduce_obj(0)
    deadline = time.monotonic() + 10
    while _watchdog._MONITOR.thread is not None and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert _watchdog._MONITOR.thread is None
    assert not any(t.name == 'chainermn_lite-watchdog'
                   for t in threading.enumerate())


@pytest.mark.simulator_only(reason='under mpiexec a deadlock hangs; the '
                            'simulator reports it')
def test_simulated_deadlock_is_still_reported_with_the_watchdog_on(
        make_communicator):
    # The daemon is no thread of a rank: a rank whose only other thread is
    # the watchdog is blocked, and the deadlock is reported at once.
    import simulator
    from simulator.errors import DeadlockError

    def body(mpi_comm):
        comm = make_communicator(mpi_comm, 'naive', watchdog=30)
        comm.recv(source=1 - comm.rank, tag=3)

    start = time.monotonic()
    with pytest.raises(DeadlockError, match='rank 0: blocked in Recv'):
        simulator.run(body, 2)
    assert time.monotonic() - start < 10
