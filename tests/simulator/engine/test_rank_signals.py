"""A rank's signal handlers are its own, and a signal it sends itself
runs them, as in a process (simulator.engine.rank_signals). Each test
restores the handlers it sets: under mpiexec they are the process's."""
import os
import signal
import threading

import pytest


@pytest.fixture
def restored():
    saved = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGINT)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


@pytest.mark.mpi(sizes=(1, 3))
def test_a_rank_signalling_itself_runs_its_own_handler(mpi_comm, restored):
    seen = []

    def handler(number, frame):
        seen.append((number, frame.f_code.co_name, mpi_comm.rank))
    signal.signal(signal.SIGUSR1, handler)
    mpi_comm.Barrier()      # every rank has set its own
    assert signal.getsignal(signal.SIGUSR1) is handler
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.raise_signal(signal.SIGUSR1)
    name = test_a_rank_signalling_itself_runs_its_own_handler.__name__
    assert seen == [(signal.SIGUSR1, name, mpi_comm.rank)] * 2
    assert signal.signal(signal.SIGUSR1, signal.SIG_IGN) is handler
    os.kill(os.getpid(), signal.SIGUSR1)     # ignored
    assert len(seen) == 2


@pytest.mark.mpi(sizes=(1, 2))
def test_sigint_default_raises_keyboard_interrupt_in_the_rank(mpi_comm,
                                                             restored):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    mpi_comm.Barrier()


@pytest.mark.mpi(sizes=(1, 2))
def test_handlers_are_set_by_the_main_thread_only(mpi_comm):
    failed = []

    def worker():
        try:
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        except ValueError as error:
            failed.append(str(error))
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert failed == ['signal only works in main thread of the main '
                      'interpreter']
    with pytest.raises(OSError):
        signal.signal(signal.SIGKILL, signal.SIG_IGN)
    with pytest.raises(TypeError):
        signal.signal(signal.SIGUSR1, 'not a handler')
