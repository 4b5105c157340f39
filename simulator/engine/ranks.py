"""Rank threads: start a world's ranks, wait for them, collect outcomes.

:func:`run_ranks` runs ``main(context)`` once per rank, each on its own
thread, and returns their results in rank order or re-raises the first
failure. A rank is a process: it ends when its main thread and every
non-daemon thread it started have returned (see
:mod:`simulator.engine.actors`).
"""
import ipaddress
import socket
import sys
import threading
import time

import numpy as np

from simulator.engine import (actors, modules, process, reports,
                              shared_state)
from simulator.errors import (AbortError, DeadlockError,
                              UnmatchedMessageError)

__all__ = ['RankContext', 'run_ranks', 'start_job']

# Small thread stacks let thousands of ranks fit; only for big worlds, so
# recursion-heavy code in small worlds keeps the default.
_BIG_WORLD = 256
_BIG_WORLD_STACK = 512 * 1024
# after a failure, how long threads left running alone keep the run open
_LEFT_RUNNING_S = 2.0


def host_name():
    """This host's name as Open MPI's ``MPI_Get_processor_name`` gives
    it: the host name without its domain (unless it is an address)."""
    name = socket.gethostname()
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        return name.split('.', 1)[0]


class RankContext:
    """What one rank knows about itself.

    ``rank`` (world rank), ``world``, ``node`` and ``processor_name``
    (this host's name on one node, as under mpiexec; ``node0``,
    ``node1``... when the world has several);
    ``random``: a ``numpy.random.RandomState`` seeded for this rank (the
    one NumPy's global functions use in this rank); ``process``: its
    private process state (:mod:`simulator.engine.process`, built on use);
    ``local``: state the layers above keep per rank (the mpi facade's
    communicators...), name -> object; ``threads``: its threads, its
    main thread first; ``cpu``: their CPU time (``actors.RankCpu``);
    ``result`` / ``error``: how its main function
    ended; ``job`` / ``job_rank``: the launch it belongs to
    (:mod:`simulator.engine.jobs`: the first, or one a Spawn made) and
    its rank there (in that job's COMM_WORLD).
    """

    def __init__(self, world, rank):
        self.world = world
        self.rank = rank
        self.job = world.job_of[rank]
        self.job_rank = self.job.job_rank(rank)
        self.node = world.node_of[rank]
        self.processor_name = host_name() if world.nodes == 1 else \
            'node{}'.format(self.node)
        self._random = None
        self.process = None
        self.local = {}
        self.threads = []
        self.cpu = actors.RankCpu()
        self.result = None
        self.error = None
        # The script's globals when run by python -m simulator (pickle
        # looks classes up there, see simulator.tools.launch).
        self.main_namespace = None
        # Whether its threads have their own working directory and umask.
        self.own_directory = False
        # What the program's os.getpid() answers: its main thread's id in
        # the kernel (set as it starts), unique as a process id is.
        self.pid = None
        # The status its MPI aborts the job with as it exits (mpi4py's
        # _set_abort_status, which `python -m mpi4py` calls on an
        # uncaught exception); None: it finalizes.
        self.abort_status = None

    @property
    def random(self):
        # Built on first use: seeding costs ~0.4 ms, too much for 4,096
        # ranks that never draw a number.
        if self._random is None:
            self._random = np.random.RandomState(process.rank_seed(
                self.world.seed, self.rank, 0))
        return self._random


def _quiet_outcome(error):
    # pytest's Skipped/Failed must reach pytest exactly as raised (their
    # classes claim module 'builtins', so ask pytest's own module).
    outcomes = sys.modules.get('_pytest.outcomes')
    return outcomes is not None and isinstance(
        error, outcomes.OutcomeException)


def _rank_main(world, context, actor, main):
    # A process's main thread is not a daemon, so the threads it starts are
    # not daemons unless asked. The rank thread itself must stay a daemon for
    # the interpreter (it was registered as one at start), so only the flag
    # its children copy is changed.
    threading.current_thread()._daemonic = False
    context.threads.insert(0, threading.current_thread())
    context.own_directory = process.own_working_directory()
    context.pid = threading.get_native_id()
    actors.enter(context, actor)
    try:
        try:
            context.result = main(context)
        except (actors.RankExit, KeyboardInterrupt):
            raise
        except BaseException as error:
            process.run_exit_handlers(context)
            _abort_at_exit(context, error)
            raise
        process.run_exit_handlers(context)
        _abort_at_exit(context, None)
        for check in world.end_checks:
            check(context.rank)
    except process.ProcessExit as stop:
        stop.end_rank(world, actor)
    except actors.RankExit:
        world.finish(actor)
    except SystemExit as stop:
        if stop.code is None or stop.code == 0:
            world.finish(actor)     # a process that exits with status 0
        else:
            context.error = stop
            world.fail(actor, stop)
    except BaseException as error:  # handed to run_ranks()
        context.error = error
        world.fail(actor, error)
    else:
        world.finish(actor)
    finally:
        actors.leave()


def _abort_at_exit(context, cause):
    # After the atexit handlers, as mpi4py's finalizer runs after them;
    # a rank that finalized MPI has nothing left to abort with.
    status = context.abort_status
    if status and context.rank not in context.world.finalized:
        raise AbortError('rank {} aborted the job at exit with status {} '
                         '(MPI_Abort, as mpi4py.run does after {})'.format(
                             context.rank, status,
                             'an uncaught ' + type(cause).__name__
                             if cause is not None else
                             'MPI._set_abort_status'),
                         errorcode=status) from cause


def run_ranks(world, main, timeout=None):
    """Run ``main(context)`` on one thread per rank of ``world``; return
    the results in rank order.

    Re-raises the first failure: a rank's own exception (with a note
    naming the rank) or the check that fired (DeadlockError,
    CollectiveMismatchError...). Messages still unreceived at the end
    raise UnmatchedMessageError. ``timeout`` is a backstop in seconds.
    """
    world.contexts = [RankContext(world, r) for r in range(world.size)]
    with world.lock:
        mains = [world.add_actor(r, 'rank {}'.format(r), main=True)
                 for r in range(world.size)]
    with actors.inherit_threads(), process.privatized(), \
            modules.private_modules(), shared_state.reported():
        threads = _start_threads(world, world.contexts, mains, main)
        _join(world, threads, timeout)
    return _outcome(world)


class _RankMainThread(threading.Thread):
    """A rank's main thread, its class named as a process's main thread's
    (``repr(threading.current_thread())`` reads ``<_MainThread(...)>``)."""


_RankMainThread.__name__ = _RankMainThread.__qualname__ = '_MainThread'
_RankMainThread.__module__ = 'threading'


def _start_threads(world, contexts, mains, main):
    """Start the main thread of each of ``contexts``' ranks (their
    actors ``mains``), running ``main(context)``."""
    threads = []
    old_stack = None
    if world.size > _BIG_WORLD:
        old_stack = threading.stack_size(_BIG_WORLD_STACK)
    try:
        for context, actor in zip(contexts, mains):
            t = _RankMainThread(
                # Each rank's main thread is its process's main
                # thread: code that asks threading for the name sees
                # what it sees under mpiexec.
                target=_rank_main, name='MainThread',
                args=(world, context, actor, main), daemon=True)
            t.simulator_internal = True
            t.start()
            threads.append(t)
    finally:
        if old_stack is not None:
            threading.stack_size(old_stack)
    return threads


def start_job(world, count, main, appnum=None, launch=None, parent=None):
    """Add a job of ``count`` new ranks to the running ``world`` (MPI's
    Spawn, from one of its ranks) and start them, each running
    ``main(context)`` as the first job's ranks run theirs: a failure or
    an exit status ends the world's run as any rank's does. The other
    arguments are :class:`~simulator.engine.jobs.Job`'s. Returns the
    Job; its ranks are live (the deadlock check counts them) from
    here on."""
    with world.lock:
        world.raise_if_broken(actors.current_actor().rank)
        job = world.add_job(count, appnum, launch, parent)
        contexts = [RankContext(world, r) for r in job.ranks]
        world.contexts += contexts
        mains = [world.add_actor(r, 'rank {}'.format(r), main=True)
                 for r in job.ranks]
    _start_threads(world, contexts, mains, main)
    return job


def _join(world, threads, timeout):
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        # Every rank ended (helper threads included), or the backstop.
        _wait_for_ranks(world, deadline)
    except BaseException:
        world.stop('the run was interrupted')
        raise
    if not world.all_finished.is_set() and world.failure is not None:
        world.left_running = _threads_left(world) or []
        if world.left_running:
            return
    if world.all_finished.is_set():
        for t in threads:
            left = None if deadline is None else deadline - time.monotonic()
            t.join(left if left is None or left > 0 else 0)
        return
    world.stop('no completion within the {} s timeout'.format(timeout))
    world.all_finished.wait(5.0)
    stuck = [r for r in range(world.size) if not world.finished[r]]
    if stuck:
        err = world.failure.check
        raise DeadlockError('{}\nranks {} never returned (busy in user '
                            'code?)'.format(err, stuck), report=err.report)


def _wait_for_ranks(world, deadline):
    """Until every rank has ended, ``deadline`` (monotonic) passes, or,
    after a failure, only threads whose rank's main thread has ended
    are left and have stayed for :data:`_LEFT_RUNNING_S`: a process
    waits for its non-daemon threads before it exits, so mpiexec would
    hang there; the run ends with the failure instead."""
    left_since = None
    while True:
        now = time.monotonic()
        step = 0.1 if deadline is None else max(0.0, min(0.1, deadline - now))
        if world.all_finished.wait(step) or \
                deadline is not None and time.monotonic() >= deadline:
            return
        if world.failure is None or _threads_left(world) is None:
            left_since = None
        elif left_since is None:
            left_since = time.monotonic()
        elif time.monotonic() - left_since >= _LEFT_RUNNING_S:
            return


def _threads_left(world):
    """The unfinished ranks' live threads, as 'rank R thread NAME', if
    none of them is a rank's main thread; else None."""
    left = []
    for rank in range(len(world.actors)):
        if world.finished[rank]:
            continue
        for actor in list(world.actors[rank]):
            if actor.main:
                return None
            left.append('rank {} thread {!r}'.format(rank, actor.name))
    return left


def _outcome(world):
    failure = world.failure
    if failure is None:
        report = reports.Report.unmatched_from_world(world)
        if report.unmatched or report.unreceived:
            # A receive left posted is a leaked request (MPI requires every
            # request to complete or be cancelled); Open MPI stays silent.
            raise UnmatchedMessageError(report.format(
                'messages never received when the run ended'
                if report.unmatched else
                'receives posted but never matched when the run ended'),
                report=report)
        # The launched ranks' results (not those of ranks they spawned).
        return [ctx.result for ctx in world.contexts[:len(
            world.jobs[0].ranks)]]
    if failure.rank is not None:
        error = failure.error
        if not _quiet_outcome(error):
            job = world.job_of[failure.rank]
            error.add_note('simulator: raised in rank {} of {}{}'.format(
                failure.rank, world.size, '' if job.id == 0 else
                ' (rank {} of the job a Spawn started)'.format(
                    job.job_rank(failure.rank))))
        left = world.left_running
        if left:
            error.add_note(
                'simulator: then {} (not a daemon) still ran after its '
                'main thread had ended: a process waits for such threads '
                'before it exits, so under mpiexec the job hangs there'
                .format(', '.join(left)))
        raise error
    # A check fired: re-raise the copy the lowest affected rank raised.
    for ctx in world.contexts:
        if isinstance(ctx.error, type(failure.check)):
            raise ctx.error
    raise failure.check
