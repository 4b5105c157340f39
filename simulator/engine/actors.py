"""Actors: the threads of simulated ranks, and which rank a thread is.

Every thread that runs a rank's code is an :class:`Actor` of that rank: the
rank's main thread, and any ``threading.Thread`` started from one of the
rank's threads while a world runs. A started thread inherits its parent's
rank (its :class:`~simulator.engine.ranks.RankContext`: rank, world,
private process state), so a rank can run a helper thread that calls MPI
exactly as a process can under ``MPI_THREAD_MULTIPLE``.

Inheritance works by wrapping ``threading.Thread.start`` while at least one
world runs (:func:`inherit_threads`); outside a rank, and outside a run,
threads start as usual. Threads the simulator starts for itself set
``simulator_internal = True`` and belong to no rank.

While worlds run, ``threading`` answers a rank's thread about its own
process: ``main_thread()`` is the rank's main thread, ``enumerate()`` and
``active_count()`` list the rank's live threads only (under mpiexec a
process sees neither the other ranks' threads nor the simulator's).
"""
import _thread
import sys
import threading
import time
import types

from simulator.engine.patches import PatchSet, wrap
from simulator.engine.trace import as_processes_traceback
from simulator.errors import RankFailedError, SimulatorError

__all__ = ['Actor', 'RankExit', 'RankCpu', 'current', 'current_actor',
           'thread_actor', 'enter', 'leave', 'inherit_threads']

_local = threading.local()


class RankExit(BaseException):
    """Raised in a thread whose rank has ended (as a daemon thread dies
    with its process); the thread wrapper swallows it."""


class RankCpu:
    """The CPU time of one rank's threads, as a process's CPU time
    (``time.process_time``) would count it: its threads that still run
    plus those that ended. A thread is counted from :func:`enter` until
    :func:`leave`, which it calls itself, so a thread in the set still
    runs and its CPU clock can be read."""

    __slots__ = ('_lock', '_running', '_ended')

    def __init__(self):
        self._lock = threading.Lock()
        self._running = set()
        self._ended = 0.0

    def thread_started(self):
        with self._lock:
            self._running.add(threading.get_ident())

    def thread_ended(self):
        with self._lock:
            self._running.discard(threading.get_ident())
            self._ended += time.thread_time()

    def seconds(self):
        """CPU seconds of the rank's threads so far."""
        me = threading.get_ident()
        with self._lock:
            total = self._ended
            for ident in self._running:
                total += time.thread_time() if ident == me else \
                    time.clock_gettime(time.pthread_getcpuclockid(ident))
        return total


class Actor:
    """One thread of a rank: its main thread or one the rank started.

    ``waiting`` is the CallRecord of the call it is blocked in (None while
    it runs); ``main`` tells the rank's main thread; ``daemon`` threads
    end with their rank, the others keep it alive, as in a process.

    A blocked actor sleeps in :meth:`sleep` until :meth:`wake_up`: a
    binary semaphore (a held lock that the waker releases) rather than a
    ``threading.Condition``, whose wait and notify each run a dozen lines
    of Python and allocate a lock, on every hand-off between ranks.
    """

    __slots__ = ('rank', 'name', 'main', 'daemon', 'lock', 'wakeup',
                 'waiting', 'ready', 'signalled', 'hopeless', 'ended')

    def __init__(self, lock, rank, name, main=False, daemon=False):
        self.rank = rank
        self.name = name
        self.main = main
        self.daemon = daemon
        self.lock = lock            # the world's
        self.wakeup = _thread.allocate_lock()
        self.wakeup.acquire()       # held: sleep() waits until released
        self.waiting = None
        self.ready = None
        self.signalled = False
        self.hopeless = None
        self.ended = False

    def sleep(self):
        """Release the world lock, wait for :meth:`wake_up`, take the lock
        again (called with it held, like ``Condition.wait``). A wake-up
        given while the actor was not asleep returns at once: the caller
        checks what it waits for anyway."""
        lock = self.lock
        lock.release()
        try:
            self.wakeup.acquire()
        finally:
            lock.acquire()

    def wake_up(self):
        """End the actor's :meth:`sleep` (world lock held: wake-ups never
        race each other, so at most one is pending)."""
        if self.wakeup.locked():
            self.wakeup.release()

    def __repr__(self):
        return '<Actor rank {} {!r}>'.format(self.rank, self.name)


def current():
    """The calling thread's RankContext, or None outside a rank."""
    return getattr(_local, 'context', None)


def thread_actor():
    """The calling thread's :class:`Actor`, or None outside a rank."""
    return getattr(_local, 'actor', None)


def current_actor():
    """The calling thread's :class:`Actor`; raises outside a rank."""
    actor = getattr(_local, 'actor', None)
    if actor is None:
        raise RuntimeError(
            'simulator: thread {!r} is not a thread of a simulated rank (it '
            'was started outside the run); start threads from a rank so '
            'they inherit it'.format(threading.current_thread().name))
    return actor


def enter(context, actor):
    """Make the calling thread ``actor`` of ``context``'s rank."""
    _local.context = context
    _local.actor = actor
    context.cpu.thread_started()
    clock = context.world.clock
    if clock is not None:
        clock.thread_started(context.rank)


def leave():
    """The calling thread no longer runs a rank."""
    context = getattr(_local, 'context', None)
    if context is not None:
        context.cpu.thread_ended()
        if context.world.clock is not None:
            context.world.clock.thread_ended(context.rank)
    _local.context = None
    _local.actor = None


_original_start = threading.Thread.start


def _start_in_rank(thread):
    context = current()
    if context is None or getattr(thread, 'simulator_internal', False):
        return _original_start(thread)
    world = context.world
    with world.lock:
        # Registered before it runs, so it counts as live from now on: the
        # deadlock check must not fire while the thread is starting.
        actor = world.add_actor(context.rank, thread.name,
                                daemon=thread.daemon)
        context.threads.append(thread)
    target = thread.run

    def run():
        enter(context, actor)
        broken = None
        try:
            target()
        except RankExit as stop:
            end_rank = getattr(stop, 'end_rank', None)
            if end_rank is not None:    # os._exit() in a helper thread
                end_rank(world, actor)
        except BaseException as error:  # noqa: B902 -- as threading does
            # Reported here, while the thread is still the rank's, so that
            # the rank's own threading.excepthook sees it (threading would
            # call the hook after this wrapper has left the rank), with
            # the traceback threading's own frame would give it.
            error.__traceback__ = _from_caller(
                sys._getframe(1),
                as_processes_traceback(error.__traceback__.tb_next))
            thread._invoke_excepthook(thread)
            # A rule of MPI broken in a helper thread (its own check, not
            # another rank's failure) fails the run as in a main thread,
            # rather than leave the rank to hang or carry on without it.
            if isinstance(error, SimulatorError) and \
                    not isinstance(error, RankFailedError):
                broken = error
        finally:
            leave()
            if broken is None:
                world.finish(actor)
            else:
                world.fail(actor, broken)

    thread.run = run
    try:
        _original_start(thread)
    except BaseException:
        world.finish(actor)
        raise


def _from_caller(caller, traceback):
    """``traceback`` after an entry for ``caller``'s frame at its current
    line (what stands for this module's wrapper)."""
    return types.TracebackType(traceback, caller, caller.f_lasti,
                               caller.f_lineno)


def _rank_threads(context):
    """The rank's live threads, its main thread first. Ended threads the
    rank started are forgotten (a rank that starts many keeps no list of
    them); its main thread stays ``main_thread()`` even once ended."""
    with context.world.lock:
        threads = context.threads
        threads[1:] = [t for t in threads[1:] if t.is_alive()]
        return [t for t in threads if t.is_alive()]


def _in_rank(answer):
    """A ``threading`` function that answers ``answer(context)`` in a
    rank (the process's own answer outside one)."""
    def make(original):
        def view():
            context = current()
            return original() if context is None or not context.threads \
                else answer(context)
        return view
    return make


def _install_inheritance():
    threading.Thread.start = _start_in_rank
    return [lambda: setattr(threading.Thread, 'start', _original_start),
            wrap(threading, 'main_thread',
                 _in_rank(lambda context: context.threads[0])),
            wrap(threading, 'enumerate', _in_rank(_rank_threads)),
            wrap(threading, 'active_count',
                 _in_rank(lambda context: len(_rank_threads(context))))]


_inheritance = PatchSet(_install_inheritance)


def inherit_threads():
    """While inside, threads started by a rank's thread join that rank."""
    return _inheritance.held()
