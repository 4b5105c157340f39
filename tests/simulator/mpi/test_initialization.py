"""simulator.mpi.initialization: a rank's thread level used as MPI allows.

Calls against the level are undefined in MPI and Open MPI does not check
them (a funneled program's worker thread usually gets through), so these
run in-process; what a rank sees of its level and start is compared with
mpiexec in tests/simulator/tools/test_launcher_scripts.py."""
import os
import threading
import time

import pytest

import simulator
from simulator.errors import ThreadLevelError

pytestmark = [
    pytest.mark.simulator_only(
        'Open MPI does not check calls against the thread level'),
    # the worker's error is printed by threading's hook too, as in a process
    pytest.mark.filterwarnings(
        'ignore::pytest.PytestUnhandledThreadExceptionWarning')]


def _at(level, body):
    """``body(comm)`` in each of 2 ranks started at ``level`` (as
    ``MPI4PY_RC_THREAD_LEVEL``, read at the rank's first use of MPI)."""
    def main(comm):
        os.environ['MPI4PY_RC_THREAD_LEVEL'] = level
        return body(comm)
    return simulator.run(main, 2)


def _in_worker(comm):
    """Rank 0 sends from a thread of its own, rank 1 receives."""
    if comm.rank == 1:
        return comm.recv(source=0, tag=1)
    thread = threading.Thread(target=lambda: comm.send('hi', 1, 1),
                              name='sender')
    thread.start()
    thread.join()
    return None


@pytest.mark.parametrize('level', ['single', 'funneled'])
def test_a_worker_thread_calling_mpi_below_serialized_is_reported(level):
    with pytest.raises(ThreadLevelError) as info:
        _at(level, _in_worker)
    text = str(info.value)
    assert text.startswith("rank 0 used MPI_COMM_WORLD at {}:".format(
        __file__))
    assert "from its thread 'sender'" in text
    assert 'MPI_THREAD_{}'.format(level.upper()) in text
    assert 'MPI4PY_RC_THREAD_LEVEL={}'.format(level) in text


@pytest.mark.parametrize('level', ['serialized', 'multiple'])
def test_a_worker_thread_alone_in_mpi_is_fine_from_serialized(level):
    assert _at(level, _in_worker) == [None, 'hi']


def test_two_threads_in_mpi_at_once_at_serialized_is_reported():
    def body(comm):
        if comm.rank == 1:
            comm.send(comm.recv(source=0, tag=1), dest=0, tag=2)
            return None
        # the main thread waits in recv while the worker sends
        thread = threading.Thread(
            target=lambda: (time.sleep(0.1), comm.send('x', 1, 1)),
            name='sender')
        thread.start()
        got = comm.recv(source=1, tag=2)
        thread.join()
        return got
    assert _at('multiple', body) == ['x', None]
    with pytest.raises(ThreadLevelError) as info:
        _at('serialized', body)
    text = str(info.value)
    assert "from its thread 'sender' while its thread 'MainThread' is in " \
        "recv(peer=1, tag=2" in text
    assert 'MPI_THREAD_SERIALIZED' in text


def test_a_worker_thread_waiting_below_serialized_is_reported():
    # No communicator call of its own: the worker only waits on a request
    # the main thread started.
    def body(comm):
        if comm.rank == 1:
            time.sleep(0.1)
            comm.send('late', dest=0, tag=1)
            return None
        request = comm.irecv(source=1, tag=1)
        got = []
        thread = threading.Thread(target=lambda: got.append(request.wait()),
                                  name='waiter')
        thread.start()
        thread.join()
        return got
    assert _at('multiple', body) == [['late'], None]
    with pytest.raises(ThreadLevelError) as info:
        _at('funneled', body)
    assert "rank 0 used a wait on its irecv at {}:".format(__file__) in \
        str(info.value)
    assert "from its thread 'waiter'" in str(info.value)


def test_a_worker_thread_testing_below_serialized_is_reported():
    # Test never blocks, but it is a call into MPI all the same: a worker
    # polling a request the main thread started, at FUNNELED.
    def body(comm):
        if comm.rank == 1:
            comm.send('late', dest=0, tag=1)
            return None
        request = comm.irecv(source=1, tag=1)
        polled = []
        thread = threading.Thread(
            target=lambda: polled.append(request.Test()), name='poller')
        thread.start()
        thread.join()
        request.wait()
        return len(polled)
    assert _at('multiple', body) == [1, None]
    with pytest.raises(ThreadLevelError) as info:
        _at('funneled', body)
    assert "rank 0 used a test of its irecv at {}:".format(__file__) in \
        str(info.value)
    assert "from its thread 'poller'" in str(info.value)
