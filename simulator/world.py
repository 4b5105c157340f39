"""The simulated world: rank threads, topology, blocking and failure.

A :class:`World` owns one lock and one Condition per rank. Every piece of
shared state (mailboxes, collective slots) is changed under that lock, and
whoever changes something a blocked rank waits for wakes exactly that rank
(:meth:`World.wake`). Because wake-ups are precise, "every live rank is
blocked and none was woken" means no rank can ever make progress: that is
the deadlock test, made the moment the last live rank blocks, with no
timeout involved.

Two more cases are caught without waiting for every rank to block: a wait
that needs ranks which already finished (``block(..., hopeless=fn)``), and
a Test()/Iprobe loop that spins while every other rank is blocked and
nothing changes (:meth:`World.note_poll`, after ``POLL_GRACE`` seconds).

Code that blocks outside ``simulator.mpi`` (``simulator.nccl``, say) uses
the same protocol: hold ``world.lock``, call ``world.block(rank, ready,
record)``, and have the party that makes ``ready()`` true call
``world.wake(rank)`` under the lock. ``block`` raises
:class:`~simulator.errors.RankFailedError` as soon as any rank fails and
:class:`~simulator.errors.DeadlockError` when no rank can progress;
``world.break_with(error)`` makes every rank raise a fired check.
"""
import copy
import sys
import threading
import time

import numpy as np

from simulator import checks
from simulator.errors import (DeadlockError, RankFailedError,
                              UnmatchedMessageError)

__all__ = ['World', 'RankContext', 'current', 'run', 'SEND_MODES',
           'POLL_GRACE']

SEND_MODES = ('eager', 'rendezvous')
_local = threading.local()
# Small thread stacks let thousands of ranks fit; only for big worlds, so
# recursion-heavy code in small worlds keeps the default.
_BIG_WORLD = 256
_BIG_WORLD_STACK = 512 * 1024
# Seconds a rank may poll an unchanging world before it counts as stuck.
POLL_GRACE = 1.0


def current():
    """The calling thread's :class:`RankContext`, or None outside a run."""
    return getattr(_local, 'context', None)


class RankContext:
    """What one rank thread knows about itself.

    ``rank`` (world rank), ``world``, ``comm_world`` / ``comm_self`` (its
    ``simulator.mpi`` communicators), ``node`` and ``processor_name``, and
    ``random``: a ``numpy.random.RandomState`` seeded for this rank (NumPy's
    global RNG is shared by all rank threads; use this one instead).
    """

    def __init__(self, world, rank):
        from simulator import comm as _comm
        self.world = world
        self.rank = rank
        self.node = world.node_of[rank]
        self.processor_name = 'node{}'.format(self.node)
        self._random = None
        self.comm_world = _comm.Intracomm(_comm.CommState(
            world, ('world',), list(range(world.size)), rank,
            'MPI_COMM_WORLD'))
        self.comm_self = _comm.Intracomm(_comm.CommState(
            world, ('self', rank), [rank], 0, 'MPI_COMM_SELF'))
        self.result = None
        self.error = None
        # The script's globals when run by python -m simulator (pickle
        # looks classes up there, see simulator.cli.RankMainModule).
        self.main_namespace = None

    @property
    def random(self):
        # Built on first use: seeding costs ~0.4 ms, too much for 4,096
        # ranks that never draw a number.
        if self._random is None:
            seed = [self.rank] if self.world.seed is None else [
                self.world.seed, self.rank]
            self._random = np.random.RandomState(
                np.random.SeedSequence(seed).generate_state(4))
        return self._random


class _Failure:
    """Why the world is broken: a rank's exception or a fired check."""

    def __init__(self, rank=None, error=None, check=None):
        self.rank = rank
        self.error = error
        self.check = check

    def exception_for(self, rank):
        if self.check is not None:
            # A private copy per rank (each raise sets its own traceback);
            # copy.copy keeps any subclass's extra attributes.
            try:
                return copy.copy(self.check)
            except Exception:  # noqa: BLE001 -- odd __init__: share it
                return self.check
        return RankFailedError(
            'rank {} failed with {}: {}; rank {} stops waiting'.format(
                self.rank, type(self.error).__name__, self.error, rank),
            failed_rank=self.rank)


class World:
    """One simulated MPI job: ``size`` ranks on ``nodes`` hosts."""

    def __init__(self, size, nodes=1, send_mode='eager', seed=None):
        if not isinstance(size, int) or size < 1:
            raise ValueError('world size must be a positive int, got '
                             '{!r}'.format(size))
        if not isinstance(nodes, int) or not 1 <= nodes <= size:
            raise ValueError('nodes must be an int in 1..{} (the world '
                             'size), got {!r}'.format(size, nodes))
        if send_mode not in SEND_MODES:
            raise ValueError('send_mode must be one of {}, got {!r}'.format(
                SEND_MODES, send_mode))
        self.size = size
        self.nodes = nodes
        self.send_mode = send_mode
        self.seed = seed
        # Block distribution, like mpiexec's default by-slot mapping.
        per_node, extra = divmod(size, nodes)
        self.node_of = []
        for node in range(nodes):
            self.node_of += [node] * (per_node + (node < extra))
        self.lock = threading.Lock()
        self._conds = [threading.Condition(self.lock) for _ in range(size)]
        self.waiting = [None] * size        # CallRecord of a blocked rank
        self._ready = [None] * size
        self._signalled = [False] * size
        self._blocked = 0                   # blocked and not yet woken
        self._hopeless = {}                 # rank -> fn, for blocked ranks
        self.finished = [False] * size
        self.finished_count = 0
        self.finished_ranks = []
        self.live = size
        self.failure = None
        self.unexpected = [dict() for _ in range(size)]  # ctx -> [Message]
        self.posted = [dict() for _ in range(size)]      # ctx -> [request]
        self.collectives = {}                            # (ctx, seq) -> slot
        # Bumped by every change a Test() could observe; a rank that
        # polls while it stays put is spinning (see note_poll).
        self.version = 0
        self.polling = {}           # rank -> (version, since, record)
        # (receiver world rank, comm name, source, tag) -> deque of the
        # senders' CallRecords of the last messages received there: reports
        # use them to name the line of a send whose message is long gone.
        self.delivered = {}
        self.contexts = []
        self.start_time = time.perf_counter()
        # Non-blocking collectives whose data moves on a progress thread:
        # while any runs, blocked ranks are waiting for it, not deadlocked.
        self.background = 0

    # -- blocking protocol (all with self.lock held) --------------------
    def block(self, rank, ready, record, hopeless=None):
        """Wait until ``ready()``; the caller holds ``self.lock``.

        ``hopeless()`` (optional) says the wait can never end because a
        rank it needs has finished; it is asked when this rank blocks and
        whenever a rank finishes, so such deadlocks are reported at once
        even while other ranks still run.
        """
        if self.failure is not None:
            raise self.failure.exception_for(rank)
        if ready():
            return
        cond = self._conds[rank]
        self.polling.pop(rank, None)
        self.waiting[rank] = record
        self._ready[rank] = ready
        if hopeless is not None:
            self._hopeless[rank] = hopeless
        try:
            while True:
                self._signalled[rank] = False
                self._blocked += 1
                if self._blocked == self.live or (
                        hopeless is not None and self.finished_count
                        and hopeless()):
                    error = self._deadlock_check(certain=self._blocked !=
                                                 self.live)
                    if error is not None:
                        if not self._signalled[rank]:  # wake_all may have
                            self._signalled[rank] = True
                            self._blocked -= 1
                        raise error
                cond.wait()
                if not self._signalled[rank]:
                    self._blocked -= 1
                if self.failure is not None:
                    raise self.failure.exception_for(rank)
                if ready():
                    return
        finally:
            self.waiting[rank] = None
            self._ready[rank] = None
            self._hopeless.pop(rank, None)

    def note_poll(self, rank, record):
        """``rank`` polled (Test, Iprobe) and found nothing (lock held).

        A Test() loop never blocks, so the wait-for check cannot see it.
        When every other live rank is blocked and the world has not changed
        for ``POLL_GRACE`` seconds of polling, nothing can ever complete
        the polled operation: report a deadlock.
        """
        now = time.monotonic()
        state = self.polling.get(rank)
        if state is None or state[0] != self.version or self.background:
            self.polling[rank] = (self.version, now, record)
            return
        if now - state[1] < POLL_GRACE or self.failure is not None:
            return
        spinning = [r for r, (v, since, _) in self.polling.items()
                    if v == self.version and now - since >= POLL_GRACE
                    and not self.finished[r] and self.waiting[r] is None]
        if self._blocked + len(spinning) != self.live:
            return
        for r in spinning:
            self.waiting[r] = self.polling[r][2]
        try:
            report = checks.Report.from_world(self, kind='deadlock')
        finally:
            for r in spinning:
                self.waiting[r] = None
        self.break_with(DeadlockError(report.format(
            'deadlock: every live rank is blocked or polling (Test/Iprobe) '
            'for {:.1f} s with no change'.format(POLL_GRACE)),
            report=report))
        self.raise_if_broken(rank)

    def wake(self, rank):
        """Tell blocked ``rank`` that what it waits for may have changed."""
        if self.waiting[rank] is not None and not self._signalled[rank]:
            self._signalled[rank] = True
            self._blocked -= 1
            self._conds[rank].notify()

    def wake_all(self):
        """Wake every blocked rank (the world broke)."""
        for rank in range(self.size):
            self.wake(rank)

    def raise_if_broken(self, rank):
        """Raise this rank's error if the world is broken."""
        if self.failure is not None:
            raise self.failure.exception_for(rank)

    def _deadlock_check(self, certain=False):
        """All live ranks blocked (or one waits on a finished rank):
        confirm nothing can run, then break the world."""
        if self.background and not certain:
            return None             # a progress thread will wake someone
        for rank in range(self.size if not certain else 0):
            ready = self._ready[rank]
            if ready is not None and ready():
                return None         # woken but not yet running: no deadlock
        report = checks.Report.from_world(self, kind='deadlock')
        error = DeadlockError(report.format(
            'deadlock: a rank waits for ranks that have finished'
            if certain else 'deadlock: every live rank is blocked and no '
            'pending operation can complete'), report=report)
        self.break_with(error)
        return self.failure.exception_for(None)

    def start_progress(self, work, done):
        """Run ``work()`` on a progress thread (it makes no simulator call
        and never blocks on ranks), then ``done(error)`` with the lock
        held; ranks it unblocks must be woken by ``done``."""
        with self.lock:
            self.background += 1

        def main():
            error = None
            try:
                work()
            except BaseException as e:  # noqa: B902 -- handed to done()
                error = e
            with self.lock:
                self.background -= 1
                done(error)
                self.version += 1
                if self.live and self._blocked == self.live \
                        and self.failure is None:
                    self._deadlock_check()
        threading.Thread(target=main, daemon=True,
                         name='simulator-progress').start()

    # -- failure ----------------------------------------------------------
    def break_with(self, error):
        """A check fired: every blocked rank raises a copy of ``error``."""
        if self.failure is None:
            self.failure = _Failure(check=error)
            self.wake_all()

    def fail(self, rank, error):
        """Rank ``rank`` raised ``error``: stop everybody who waits."""
        with self.lock:
            if self.failure is None:
                self.failure = _Failure(rank=rank, error=error)
                self.wake_all()
            self._finish_locked(rank)

    def finish(self, rank):
        """Rank ``rank`` returned; it may leave the others stuck."""
        with self.lock:
            self._finish_locked(rank)
            if self.live and self._blocked == self.live \
                    and self.failure is None:
                self._deadlock_check()

    def _finish_locked(self, rank):
        if not self.finished[rank]:
            self.finished[rank] = True
            self.version += 1
            self.polling.pop(rank, None)
            self.finished_ranks.append(rank)
            self.finished_count += 1
            self.live -= 1
            if self.failure is None:
                for other, hopeless in list(self._hopeless.items()):
                    if not self._signalled[other] and \
                            not self._ready[other]() and hopeless():
                        self._deadlock_check(certain=True)
                        break

    def stop(self, reason):
        """Backstop (timeout, Ctrl-C): break the world, saying ``reason``."""
        with self.lock:
            if self.failure is not None:
                return
            report = checks.Report.from_world(self, kind='timeout')
            self.break_with(DeadlockError(report.format(
                '{} (ranks still running user code are listed without a '
                'pending call)'.format(reason)), report=report))


def _quiet_outcome(error):
    # pytest's Skipped/Failed must reach pytest exactly as raised (their
    # classes claim module 'builtins', so ask pytest's own module).
    outcomes = sys.modules.get('_pytest.outcomes')
    return outcomes is not None and isinstance(
        error, outcomes.OutcomeException)


def _rank_main(world, rank, fn):
    ctx = world.contexts[rank]
    _local.context = ctx
    try:
        ctx.result = fn(ctx.comm_world)
    except BaseException as error:  # noqa: B902 -- handed to run()
        ctx.error = error
        world.fail(rank, error)
    else:
        world.finish(rank)
    finally:
        _local.context = None


def run(fn, size, *, nodes=1, send_mode='eager', timeout=None, seed=None):
    """Run ``fn(comm)`` on ``size`` rank threads; return their results.

    ``comm`` is each rank's ``simulator.mpi.COMM_WORLD``. ``nodes`` sets the
    simulated hosts (processor names ``node0``...), ``send_mode`` is
    ``'eager'`` (buffered sends) or ``'rendezvous'`` (a send completes when
    received), ``timeout`` a backstop in seconds, ``seed`` the base of the
    per-rank RandomState (``current().random``). Re-raises the first
    failure: a rank's own exception (with a note naming the rank) or the
    check that fired (DeadlockError, CollectiveMismatchError...). Messages
    still unreceived at the end raise UnmatchedMessageError.
    """
    world = World(size, nodes, send_mode, seed)
    world.contexts = [RankContext(world, r) for r in range(size)]
    threads = []
    old_stack = None
    if size > _BIG_WORLD:
        old_stack = threading.stack_size(_BIG_WORLD_STACK)
    try:
        for rank in range(size):
            t = threading.Thread(target=_rank_main, args=(world, rank, fn),
                                 name='sim-rank-{}'.format(rank),
                                 daemon=True)
            t.start()
            threads.append(t)
    finally:
        if old_stack is not None:
            threading.stack_size(old_stack)
    _join(world, threads, timeout)
    return _outcome(world)


def _join(world, threads, timeout):
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        for t in threads:
            left = None if deadline is None else deadline - time.monotonic()
            t.join(left if left is None or left > 0 else 0)
            if t.is_alive():
                break
    except BaseException:
        world.stop('the run was interrupted')
        raise
    if any(t.is_alive() for t in threads):
        world.stop('no completion within the {} s timeout'.format(timeout))
        grace = time.monotonic() + 5.0
        for t in threads:
            t.join(max(0.0, grace - time.monotonic()))
        stuck = [i for i, t in enumerate(threads) if t.is_alive()]
        if stuck:
            err = world.failure.check
            raise DeadlockError('{}\nranks {} never returned (busy in user '
                                'code?)'.format(err, stuck),
                                report=err.report)


def _outcome(world):
    failure = world.failure
    if failure is None:
        report = checks.Report.unmatched_from_world(world)
        if report.unmatched or report.unreceived:
            # A receive left posted is a leaked request (MPI requires every
            # request to complete or be cancelled); Open MPI stays silent.
            raise UnmatchedMessageError(report.format(
                'messages never received when the run ended'
                if report.unmatched else
                'receives posted but never matched when the run ended'),
                report=report)
        return [ctx.result for ctx in world.contexts]
    if failure.rank is not None:
        error = failure.error
        if not _quiet_outcome(error):
            error.add_note('simulator: raised in rank {} of {}'.format(
                failure.rank, world.size))
        raise error
    # A check fired: re-raise the copy the lowest affected rank raised.
    for ctx in world.contexts:
        if isinstance(ctx.error, type(failure.check)):
            raise ctx.error
    raise failure.check

