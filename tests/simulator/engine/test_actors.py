"""Threads a rank starts belong to that rank: they may call MPI (the
program runs under THREAD_MULTIPLE), the rank lives while its non-daemon
threads do, and what they wait on is part of the deadlock check."""
import threading
import time

import pytest

import simulator
import simulator.mpi as MPI
from simulator.engine.actors import current

UNSAFE = 'exercises the simulator itself (not an MPI program)'


def _in_thread(fn, daemon=False):
    box = {}

    def main():
        try:
            box['value'] = fn()
        except BaseException as error:
            box['error'] = error
    thread = threading.Thread(target=main, daemon=daemon, name='helper')
    thread.start()
    return thread, box


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_a_helper_thread_communicates_while_the_main_thread_does(mpi_comm):
    dup = mpi_comm.Dup()
    try:
        thread, box = _in_thread(lambda: dup.allreduce(mpi_comm.rank + 1))
        main_sum = mpi_comm.allreduce(10 * mpi_comm.rank)
        thread.join()
        assert 'error' not in box, box.get('error')
        size = mpi_comm.Get_size()
        assert box['value'] == size * (size + 1) // 2
        assert main_sum == 10 * size * (size - 1) // 2
    finally:
        dup.Free()


@pytest.mark.simulator_only(UNSAFE)
def test_a_helper_thread_inherits_its_rank():
    def body(comm):
        seen = {}

        def helper():
            seen['rank'] = current().rank
            seen['world'] = MPI.COMM_WORLD.Get_rank()
            seen['main'] = MPI.Is_thread_main()
        thread = threading.Thread(target=helper)
        thread.start()
        thread.join()
        return seen, MPI.Is_thread_main(), MPI.Query_thread()
    for rank, (seen, main, level) in enumerate(simulator.run(body, 3)):
        assert seen == {'rank': rank, 'world': rank, 'main': False}
        assert main and level == MPI.THREAD_MULTIPLE


@pytest.mark.simulator_only('deliberate deadlock')
def test_a_blocked_helper_thread_keeps_its_rank_alive_and_is_reported():
    def body(comm):
        if comm.Get_rank() == 0:
            thread = threading.Thread(
                target=lambda: comm.recv(source=1, tag=3), name='waiter')
            thread.start()
        # rank 0's main thread returns; its non-daemon thread still waits

    with pytest.raises(simulator.DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    text = str(info.value)
    assert "rank 0" in text and 'recv(peer=1, tag=3' in text
    assert 'finished: 1' in text


@pytest.mark.simulator_only(UNSAFE)
def test_a_daemon_thread_ends_with_its_rank():
    def body(comm):
        threading.Thread(target=lambda: time.sleep(5), daemon=True).start()
        return comm.allreduce(1)
    start = time.monotonic()
    assert simulator.run(body, 2, timeout=30) == [2, 2]
    assert time.monotonic() - start < 2


@pytest.mark.simulator_only('Abort stops the job')
def test_abort_from_a_helper_thread_stops_every_rank():
    def body(comm):
        if comm.Get_rank() == 1:
            thread = threading.Thread(target=lambda: comm.Abort(4))
            thread.start()
            thread.join()
        comm.recv(source=1, tag=9)

    start = time.monotonic()
    with pytest.raises(simulator.AbortError) as info:
        simulator.run(body, 2, timeout=30)
    assert info.value.errorcode == 4
    assert time.monotonic() - start < 5


@pytest.mark.simulator_only(UNSAFE)
@pytest.mark.filterwarnings(
    'ignore::pytest.PytestUnhandledThreadExceptionWarning')
def test_an_exception_in_a_helper_thread_does_not_fail_the_rank():
    # As in a process: Python reports it (threading.excepthook) and the
    # main thread goes on.
    def body(comm):
        thread = threading.Thread(target=lambda: 1 / 0)
        thread.start()
        thread.join()
        return comm.allreduce(1)
    assert simulator.run(body, 2) == [2, 2]


@pytest.mark.simulator_only(UNSAFE)
@pytest.mark.mpi(sizes=(1, 3))
def test_threading_answers_about_the_ranks_own_process(mpi_comm, simulated):
    me = threading.current_thread()
    assert threading.main_thread() is me
    assert me.name == 'MainThread'
    seen = {}
    go = threading.Event()

    def helper():
        seen['main'] = threading.main_thread()
        seen['listed'] = threading.enumerate()
        go.wait()
    thread = threading.Thread(target=helper, name='helper')
    thread.start()
    while 'listed' not in seen:
        time.sleep(0.001)
    listed = threading.enumerate()
    assert thread in listed and me in listed
    assert threading.active_count() == len(listed)
    go.set()
    thread.join()
    assert seen['main'] is me and thread in seen['listed']
    assert thread not in threading.enumerate()
    if simulated:
        # none of the other ranks' threads, nor the simulator's own
        assert threading.enumerate() == [me]
    assert mpi_comm.allreduce(1) == mpi_comm.size


def test_threads_outside_a_run_start_as_usual():
    from simulator.engine import actors
    simulator.run(lambda comm: None, 2)
    # The wrapper is gone once no world runs.
    assert threading.Thread.start is actors._original_start
    assert current() is None
    thread, box = _in_thread(lambda: current())
    thread.join()
    assert box == {'value': None}
