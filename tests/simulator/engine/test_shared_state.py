"""Process-wide changes a rank makes are reported, naming the call, the
rank and the user's line (simulator.engine.shared_state). Only the
simulator shares these between ranks, so these tests are in-process."""
import io
import os
import re
import signal
import sys
import warnings

import pytest

import simulator
from simulator.engine.shared_state import SharedStateWarning




def test_recursion_limit_is_reported_with_rank_and_line(warnings_of):
    limit = sys.getrecursionlimit()

    def body(comm):
        if comm.rank == 1:
            sys.setrecursionlimit(limit)
    messages = warnings_of(body, SharedStateWarning)
    assert len(messages) == 1
    assert messages[0].startswith(
        'rank 1 called sys.setrecursionlimit({}) at {}:'.format(
            limit, __file__))
    assert 'all ranks see this change' in messages[0]


def test_a_ranks_chdir_and_umask_are_its_own_so_not_reported(warnings_of):
    # Each rank thread has its own working directory (test_process.py),
    # where the platform lets a thread have one; else they are reported.
    here = os.getcwd()
    own = []

    def body(comm):
        own.append(simulator.current().own_directory)
        os.chdir(here)
        os.umask(os.umask(0o022))
    messages = warnings_of(body, SharedStateWarning)
    if all(own):
        assert messages == []
    else:
        assert sum("os.chdir({!r})".format(here) in m
                   for m in messages) == 2


def test_the_users_collector_and_c_environment_changes_are_reported(
        warnings_of):
    import gc
    import timeit
    threshold = gc.get_threshold()

    def body(comm):
        timeit.timeit('pass', number=1)     # the library's own: not said
        if comm.rank == 1:
            gc.disable()
            gc.enable()
            gc.set_threshold(*threshold)
            os.putenv('SIMULATOR_TEST_PUTENV', '1')
            os.unsetenv('SIMULATOR_TEST_PUTENV')
    messages = warnings_of(body, SharedStateWarning)
    assert [m.split(' at ')[0] for m in messages] == [
        'rank 1 called gc.disable()', 'rank 1 called gc.enable()',
        'rank 1 called gc.set_threshold({})'.format(
            ', '.join(map(str, threshold))),
        "rank 1 called os.putenv('SIMULATOR_TEST_PUTENV', '1')",
        "rank 1 called os.unsetenv('SIMULATOR_TEST_PUTENV')"]
    assert all(' at {}:'.format(__file__) in m for m in messages)


def test_int_digits_socket_timeout_and_locale_changes_are_reported(
        warnings_of):
    import calendar
    import locale
    import socket
    digits, timeout = sys.get_int_max_str_digits(), socket.getdefaulttimeout()
    current = locale.setlocale(locale.LC_NUMERIC)

    def body(comm):
        # a query, and a library's own setting and restoring: not said
        locale.setlocale(locale.LC_ALL)
        with calendar.different_locale(current):
            pass
        if comm.rank == 1:
            sys.set_int_max_str_digits(digits)
            socket.setdefaulttimeout(timeout)
            locale.setlocale(locale.LC_NUMERIC, current)
    messages = warnings_of(body, SharedStateWarning)
    assert [m.split(' at ')[0] for m in messages] == [
        'rank 1 called sys.set_int_max_str_digits({})'.format(digits),
        'rank 1 called socket.setdefaulttimeout({!r})'.format(timeout),
        'rank 1 called locale.setlocale(locale.LC_NUMERIC, {!r})'.format(
            current)]


def test_replacing_a_standard_stream_in_a_rank_is_not_reported(warnings_of):
    # Each rank has its own (test_process.py): nothing is shared to report.
    def body(comm):
        saved = sys.stdout
        sys.stdout = io.StringIO()
        sys.stdout = saved
    assert warnings_of(body, SharedStateWarning) == []


def test_signal_handler_in_a_rank_is_its_own_so_not_reported(warnings_of):
    # Per rank (tests/simulator/engine/test_rank_signals.py): the
    # process's handler is left alone.
    before = signal.getsignal(signal.SIGUSR1)

    def body(comm):
        return signal.signal(signal.SIGUSR1, lambda *args: None)
    assert warnings_of(body, SharedStateWarning) == []
    assert signal.getsignal(signal.SIGUSR1) is before


def test_outside_a_run_nothing_is_reported():
    with warnings.catch_warnings():
        warnings.simplefilter('error', SharedStateWarning)
        os.chdir(os.getcwd())
        os.getpid()
        sys.stdout = sys.stdout


@pytest.mark.mpi(sizes=(2,))
def test_a_program_that_sets_a_handler_runs_in_both_worlds(mpi_comm):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', SharedStateWarning)
        previous = signal.signal(signal.SIGUSR2, signal.SIG_DFL)
    assert previous in (signal.SIG_DFL, signal.SIG_IGN) or callable(previous)
    assert mpi_comm.allreduce(1) == 2


def test_the_users_writes_to_library_modules_are_reported(warnings_of):
    # Reported when ranks set different values, or one rank sets what
    # another never does; every rank setting one value (a flag each
    # process sets at start) is as under mpiexec, so not reported.
    import json
    import types

    def body(comm):
        import wave     # imported inside the run: adopted as it loads
        json.simulator_test_same = 'every rank'
        if comm.rank == 1:
            json.simulator_test_setting = 1
        wave.simulator_test_flag = comm.rank
        json.dumps = json.dumps     # no change: nothing to say
        types.SimpleNamespace()     # a library's own writes: not said
        comm.Barrier()
    try:
        messages = warnings_of(body, SharedStateWarning)
    finally:
        import wave
        del wave.simulator_test_flag
        del json.simulator_test_setting, json.simulator_test_same
    assert len(messages) == 2, messages
    conflict, = [m for m in messages if 'simulator_test_flag' in m]
    assert re.match(r'rank [01] ran wave.simulator_test_flag = [01] at {}:'
                    r'\d+: rank [01] ran wave.simulator_test_flag = [01] at '
                    .format(re.escape(__file__)), conflict), conflict
    alone, = [m for m in messages if 'simulator_test_setting' in m]
    assert alone.startswith('rank 1 ran json.simulator_test_setting = 1 at '
                            '{}:'.format(__file__))
    assert 'which rank 0 never did' in alone
    assert type(json) is types.ModuleType       # as it was, after the run


def test_redirecting_a_standard_descriptor_in_a_rank_is_reported(
        warnings_of, tmp_path):
    # Silencing a rank at the descriptor silences every rank here.
    target = os.open(str(tmp_path / 'out'), os.O_WRONLY | os.O_CREAT)
    saved = os.dup(2)

    def body(comm):
        if comm.rank == 1:
            os.dup2(target, 2)
            os.dup2(saved, 2)
        os.dup2(target, target + 100)     # not a standard one: not said
    try:
        messages = warnings_of(body, SharedStateWarning)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
        os.close(target + 100)
    assert [m.split(' at ')[0] for m in messages] == [
        'rank 1 called os.dup2({}, 2)'.format(target),
        'rank 1 called os.dup2({}, 2)'.format(saved)]
    assert all('descriptors 0-2 belong to the one process' in m
               for m in messages)


def test_a_ranks_timer_signal_is_reported(warnings_of):
    # SIGALRM goes to the process: the rank's handler would not run.
    def body(comm):
        if comm.rank == 1:
            signal.setitimer(signal.ITIMER_REAL, 100.0)
            signal.setitimer(signal.ITIMER_REAL, 0)     # cancelled: not said
            signal.alarm(100)
            signal.alarm(0)
    messages = warnings_of(body, SharedStateWarning)
    assert [m.split(' at ')[0] for m in messages] == [
        'rank 1 called signal.setitimer({}, 100.0)'.format(
            signal.ITIMER_REAL),
        'rank 1 called signal.alarm(100)']
    assert all("not to this rank's handler" in m for m in messages)


@pytest.mark.mpi(sizes=(2,))
def test_a_ranks_time_zone_is_the_one_it_set(mpi_comm, simulated):
    # time.tzset() reads the C environment; the rank sets os.environ,
    # which is its own on the simulator. Rank 1 gets its zone both ways;
    # on the simulator every rank does, and that is reported.
    import time
    before = os.environ.get('TZ')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        if mpi_comm.rank == 1:
            os.environ['TZ'] = 'Asia/Tokyo'
            time.tzset()
            assert time.tzname == ('JST', 'JST')
            assert time.strftime('%z', time.localtime(0)) == '+0900'
        mpi_comm.Barrier()
        if mpi_comm.rank == 1:
            if before is None:
                del os.environ['TZ']
            else:
                os.environ['TZ'] = before
            time.tzset()
    said = [str(w.message) for w in caught
            if issubclass(w.category, SharedStateWarning)]
    if simulated and mpi_comm.rank == 1:
        assert [m.split(' at ')[0] for m in said] == [
            "rank 1 called time.tzset() with TZ='Asia/Tokyo'",
            'rank 1 called time.tzset() with TZ={!r}'.format(before)]
        assert 'the time zone is the one process' in said[0]
    else:
        assert said == []
