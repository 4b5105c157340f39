"""The simulated world: topology, actors, blocking and failure.

A :class:`World` is one MPI job: ``size`` ranks (processes) on ``nodes``
hosts. A rank runs one or more *actors* (threads): its main thread and any
thread it starts (see :mod:`simulator.engine.ranks`), as a process under
``MPI_THREAD_MULTIPLE`` may call MPI from several threads.

The world owns one lock, and each actor a wake-up of its own. Every piece
of shared state (mailboxes, collective slots) is changed under that lock,
and whoever changes something a blocked rank waits for wakes that rank's
blocked actors (:meth:`World.wake`). Because wake-ups are precise, "every
live actor is blocked and none was woken" means nothing can ever progress:
that is the deadlock test, made the moment the last live actor blocks, with
no timeout involved.

Two more cases are caught without waiting for every actor to block: a wait
that needs ranks which already finished (``block(..., hopeless=fn)``), and
a Test()/Iprobe loop that spins while everything else is blocked and
nothing changes (:meth:`World.note_poll`, after ``POLL_GRACE`` seconds).

Code that blocks outside ``simulator.mpi`` (``simulator.nccl``, say) uses
the same protocol: hold ``world.lock``, call ``world.block(ready,
record)`` from the waiting thread, and have the party that makes
``ready()`` true call ``world.wake(rank)`` under the lock. ``block``
raises :class:`~simulator.errors.RankFailedError` as soon as any rank
fails and :class:`~simulator.errors.DeadlockError` when nothing can
progress; ``world.break_with(error)`` makes every rank raise a fired check.
"""
import copy
import functools
import os
import threading
import time

from simulator.engine import buffering, reports
from simulator.engine.actors import (Actor, RankExit, current_actor,
                                     thread_actor)
from simulator.engine.jobs import Job, block_placement
from simulator.errors import DeadlockError, RankFailedError

__all__ = ['World', 'SEND_MODES', 'EAGER_BYTES', 'POLL_GRACE', 'host_slots']

# How a standard send completes: 'openmpi' (the default) as Open MPI 5's
# ob1 does, eager up to the transport's limit (EAGER_BYTES) and waiting
# for its receive above; 'eager' always buffered; 'rendezvous' always
# waiting (finds programs that need any buffering); 'mixed' either, as
# the schedule draws.
SEND_MODES = ('openmpi', 'eager', 'rendezvous', 'mixed')
# The largest standard send Open MPI 5.0.11 completes before its receive
# is posted, by where it goes: the transport's eager limit (btl_self 1024,
# btl_sm 4096, btl_tcp 65536 bytes) less ob1's 80-byte header. Measured
# with two ranks that both Send before they Recv: 4016 B returned, 4017 B
# hung; between nodes (btl tcp) 65456 / 65457 B; a rank to itself 944 /
# 945 B (2026-11-27).
EAGER_BYTES = {'self': 1024 - 80, 'node': 4096 - 80, 'network': 65536 - 80}
# Seconds a rank may poll an unchanging world before it counts as stuck.
POLL_GRACE = 1.0


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
            except Exception:  # odd __init__: share it
                return self.check
        # The error's notes too: an MPI.Exception's str() is mpi4py's
        # text alone, its detail (what was wrong) a note.
        notes = getattr(self.error, '__notes__', None)
        said = '{} ({})'.format(self.error, '; '.join(notes)) if notes \
            else str(self.error)
        return RankFailedError(
            'rank {} failed with {}: {}; rank {} stops waiting'.format(
                self.rank, type(self.error).__name__, said, rank),
            failed_rank=self.rank)


class World:
    """One simulated MPI job: ``size`` ranks on ``nodes`` hosts."""

    def __init__(self, size, nodes=1, send_mode='openmpi', seed=None,
                 schedule=None):
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
        # The scheduler's choices (simulator.engine.schedule), or None:
        # the default, timing-driven matching.
        if schedule is None and send_mode == 'mixed':
            raise ValueError("send_mode 'mixed' draws each send's mode from "
                             'a schedule; give one (schedule=SEED)')
        if schedule is not None:
            if schedule.started:
                raise ValueError('{!r} already drove a run; a schedule '
                                 'replays by its seed or choices, in a '
                                 'fresh Schedule'.format(schedule))
            schedule.started = True
        self.schedule = schedule
        # Block distribution, like mpiexec's default by-slot mapping.
        self.node_of = block_placement(size, nodes)
        # The launches: the first job, then one per Spawn (see jobs).
        self.jobs = [Job(0, range(size), self.node_of)]
        self.job_of = [self.jobs[0]] * size
        self.lock = threading.Lock()
        self.actors = [[] for _ in range(size)]    # live actors per rank
        self.live = 0                   # live actors in the world
        self._blocked = 0               # blocked and not yet woken
        self._hopeless = set()          # blocked actors with a hopeless()
        self.finished = [False] * size
        self.finished_count = 0
        self.finished_ranks = []
        self.all_finished = threading.Event()
        self.failure = None
        # world rank -> (file, line) of its MPI.Finalize(): nothing but
        # a few queries may follow (see simulator.mpi.Finalize).
        self.finalized = {}
        # world rank -> how MPI started in it (simulator.mpi's
        # initialization: mpi4py.rc read at the rank's first MPI use).
        self.mpi_starts = {}
        # fn(actor, record, what) before an actor blocks or polls, set
        # while some rank runs below MPI_THREAD_MULTIPLE (its waits and
        # tests are calls into MPI too).
        self.thread_check = None
        # world rank -> {memory owner: [(request, memory)]} of its
        # non-blocking buffer receives, completed ones dropped lazily
        # (simulator.mpi.p2p).
        self.pending_receives = {}
        # world rank -> requests the program got from non-blocking calls;
        # end_checks: fn(world rank), run when a rank's program ends well
        # (the layers above check what it left behind).
        self.open_requests = {}
        self.end_checks = []
        # exit_checks: fn(world rank, ProcessExit) at a rank's os._exit,
        # which skips the program's end (and end_checks); raise to fail it
        self.exit_checks = []
        # 'rank R thread NAME' of threads the run stopped waiting for
        # after a failure (simulator.engine.ranks)
        self.left_running = []
        self.unexpected = [dict() for _ in range(size)]  # ctx -> [Message]
        self.posted = [dict() for _ in range(size)]      # ctx -> [Recv]
        self.collectives = {}                            # (ctx, seq) -> slot
        # Bumped by every change a Test() could observe; a rank that
        # polls while it stays put is spinning (see note_poll).
        self.version = 0
        self.polling = {}           # actor -> (version, since, record)
        # (receiver world rank, comm name, source, tag) -> the senders'
        # CallRecords of the last messages received there: reports name
        # the line of a send whose message is long gone.
        self.history = {}
        # what each rank would wait for if no send were buffered
        # (simulator.engine.buffering)
        self.send_waits_without_buffering = buffering.Waits()
        # Private to the layers above (the mpi facade's per-world state,
        # simulator.nccl's cliques): name -> object.
        self.extensions = {}
        self.contexts = []
        self.start_time = time.perf_counter()
        # Non-blocking collectives whose data moves on a progress thread:
        # while any runs, blocked ranks are waiting for it, not deadlocked.
        self.background = 0
        # Virtual time (simulator.engine.clock.VirtualTime) or None: off.
        self.clock = None

    # -- actors (with self.lock held) -------------------------------------
    @functools.cached_property
    def universe_size(self):
        """MPI_UNIVERSE_SIZE: mpiexec offers a slot per core of each node,
        however many ranks it runs (more ranks oversubscribe them). Read
        from the host when first asked (most worlds never ask)."""
        return self.nodes * host_slots()

    def add_job(self, count, appnum, launch, parent):
        """New world ranks for a spawned job of ``count`` ranks (lock
        held; see :class:`~simulator.engine.jobs.Job` for the per-rank
        lists); their contexts and threads are the caller's to start
        (:func:`simulator.engine.ranks.start_job`). Returns the Job."""
        first = self.size
        job = Job(len(self.jobs), range(first, first + count),
                  block_placement(count, self.nodes), appnum, launch, parent)
        self.jobs.append(job)
        self.size += count
        self.node_of += job.node_of
        self.job_of += [job] * count
        self.actors += [[] for _ in range(count)]
        self.finished += [False] * count
        self.unexpected += [dict() for _ in range(count)]
        self.posted += [dict() for _ in range(count)]
        if self.clock is not None:
            caller = current_actor().rank
            self.clock.add_ranks(job.ranks, self.clock.clocks[caller].now)
        return job

    def add_actor(self, rank, name, main=False, daemon=False):
        """A new live thread of ``rank`` (lock held)."""
        actor = Actor(self.lock, rank, name, main, daemon)
        self.actors[rank].append(actor)
        self.live += 1
        return actor

    def end_actor(self, actor, whole_rank=False):
        """``actor``'s thread returned (lock held). A rank ends when its
        main thread and its non-daemon threads have all ended (or at once
        with ``whole_rank``, when it failed); its daemon threads end with
        it. Returns True when the rank just ended."""
        if actor.ended:
            return False
        self._retire(actor)
        self.actors[actor.rank].remove(actor)
        rank = actor.rank
        if self.finished[rank] or not whole_rank and any(
                a.main or not a.daemon for a in self.actors[rank]):
            return False
        for other in self.actors[rank]:
            # The rest die with their process: they stop counting, and
            # raise RankExit when they next wait or are woken.
            self._retire(other)
            if other.waiting is not None and not other.signalled:
                other.signalled = True
                self._blocked -= 1
                other.wake_up()
        self.actors[rank] = []
        self._finish_rank(rank)
        return True

    def _retire(self, actor):
        actor.ended = True
        self.live -= 1
        self.polling.pop(actor, None)
        self.version += 1

    def pending(self, rank):
        """CallRecords of ``rank``'s blocked threads, main thread first."""
        return [a.waiting for a in sorted(self.actors[rank],
                                          key=lambda a: not a.main)
                if a.waiting is not None]

    # -- blocking protocol (all with self.lock held) --------------------
    def block(self, ready, record, hopeless=None):
        """Wait until ``ready()``; the caller holds ``self.lock``.

        ``hopeless()`` (optional) says the wait can never end because a
        rank it needs has finished; it is asked when this actor blocks and
        whenever a rank finishes, so such deadlocks are reported at once
        even while other ranks still run.
        """
        actor = current_actor()
        if self.failure is not None:
            raise self.failure.exception_for(actor.rank)
        if actor.ended:
            raise RankExit()
        if ready():
            return
        if self.thread_check is not None:
            self.thread_check(actor, record, 'a wait on')
        self.polling.pop(actor, None)
        actor.waiting = record
        actor.ready = ready
        if hopeless is not None:
            actor.hopeless = hopeless
            self._hopeless.add(actor)
        try:
            while True:
                actor.signalled = False
                self._blocked += 1
                # Under a schedule only fences judge, so that the same
                # seed gives the same report whatever the timing.
                if self._blocked == self.live or (
                        hopeless is not None and self.finished_count
                        and self.schedule is None and hopeless()):
                    error = self._stalled(certain=self._blocked !=
                                          self.live)
                    if error is not None:
                        if not actor.signalled:  # wake_all may have
                            actor.signalled = True
                            self._blocked -= 1
                        raise error
                if not actor.signalled:     # a fence may have woken it
                    actor.sleep()
                    if not actor.signalled:
                        self._blocked -= 1
                if self.failure is not None:
                    raise self.failure.exception_for(actor.rank)
                if actor.ended:
                    raise RankExit()
                if ready():
                    return
        finally:
            actor.waiting = None
            actor.ready = None
            actor.hopeless = None
            self._hopeless.discard(actor)

    def note_poll(self, record):
        """The calling thread polled (Test, Iprobe) and found nothing
        (lock held).

        A Test() loop never blocks, so the wait-for check cannot see it.
        When every other live actor is blocked and the world has not
        changed for ``POLL_GRACE`` seconds of polling, nothing can ever
        complete the polled operation: report a deadlock.
        """
        actor = current_actor()
        if actor.ended:
            raise RankExit()
        now = time.monotonic()
        state = self.polling.get(actor)
        if state is None or state[0] != self.version or self.background:
            self.polling[actor] = (self.version, now, record)
            return
        if now - state[1] < POLL_GRACE or self.failure is not None:
            return
        spinning = [a for a, (v, since, _) in self.polling.items()
                    if v == self.version and now - since >= POLL_GRACE
                    and not a.ended and a.waiting is None]
        if self._blocked + len(spinning) != self.live:
            return
        for a in spinning:
            a.waiting = self.polling[a][2]
        try:
            report = reports.Report.from_world(self, kind='deadlock')
        finally:
            for a in spinning:
                a.waiting = None
        self.break_with(DeadlockError(report.format(
            'deadlock: every live rank is blocked or polling (Test/Iprobe) '
            'for {:.1f} s with no change'.format(POLL_GRACE)),
            report=report))
        self.raise_if_broken(actor.rank)

    def wake(self, rank):
        """Tell ``rank``'s blocked threads that what they wait for may
        have changed."""
        for actor in self.actors[rank]:
            if actor.waiting is not None and not actor.signalled:
                actor.signalled = True
                self._blocked -= 1
                actor.wake_up()

    def wake_all(self):
        """Wake every blocked actor (the world broke)."""
        for rank in range(self.size):
            self.wake(rank)

    def raise_if_broken(self, rank):
        """Raise this rank's error if the world is broken."""
        if self.failure is not None:
            raise self.failure.exception_for(rank)

    def check_poll(self, record):
        """A test that never blocks (``Test``, ``Iprobe``...) is a call
        into MPI too: the thread level's check, below MULTIPLE."""
        if self.thread_check is not None:
            actor = thread_actor()
            if actor is not None:
                self.thread_check(actor, record, 'a test of')

    def _stalled(self, certain=False):
        """Every live actor is blocked (or one waits on a finished rank):
        a fence, where the schedule chooses; a deadlock if nothing is left
        to choose."""
        if self.schedule is not None and not certain \
                and not self.background:
            # A wait that is over though nobody said so is no fence.
            late = [a for actors in self.actors for a in actors
                    if a.ready is not None and not a.signalled
                    and a.ready()]
            for actor in late:
                self.wake(actor.rank)
            if late or self.schedule.fence(self):
                return None
        return self._deadlock_check(certain)

    def _deadlock_check(self, certain=False):
        """All live actors blocked (or one waits on a finished rank):
        confirm nothing can run, then break the world."""
        if self.background and not certain:
            return None             # a progress thread will wake someone
        if not certain:
            for actors in self.actors:
                for actor in actors:
                    ready = actor.ready
                    if ready is not None and ready():
                        return None  # woken but not yet running
        report = reports.Report.from_world(self, kind='deadlock')
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
            except BaseException as e:  # handed to done()
                error = e
            with self.lock:
                self.background -= 1
                done(error)
                self.version += 1
                if self.live and self._blocked == self.live \
                        and self.failure is None:
                    self._stalled()
        thread = threading.Thread(target=main, daemon=True,
                                  name='simulator-progress')
        thread.simulator_internal = True    # not a thread of the rank
        thread.start()

    def above_eager_limit(self, rank, dest, nbytes):
        """Whether Open MPI 5 would send ``nbytes`` from world rank
        ``rank`` to world rank ``dest`` by rendezvous (whatever
        ``send_mode`` says: a buffered send's use of the attached buffer
        follows Open MPI's limits)."""
        if dest == rank:
            limit = EAGER_BYTES['self']
        elif self.node_of[dest] == self.node_of[rank]:
            limit = EAGER_BYTES['node']
        else:
            limit = EAGER_BYTES['network']
        return nbytes > limit

    def send_waits(self, rank, dest, nbytes):
        """Whether a standard send of ``nbytes`` from world rank ``rank``
        to world rank ``dest`` waits for its receive (``send_mode``)."""
        mode = self.send_mode
        if mode == 'openmpi':
            return self.above_eager_limit(rank, dest, nbytes)
        if self.schedule is not None:
            return self.schedule.rendezvous(self, rank)
        return mode == 'rendezvous'

    # -- failure ----------------------------------------------------------
    def break_with(self, error):
        """A check fired: every blocked rank raises a copy of ``error``."""
        if self.failure is None:
            self.failure = _Failure(check=error)
            self.wake_all()

    def fail(self, actor, error):
        """``actor``'s rank failed with ``error`` (its main thread raised
        it, or one of its threads called Abort): stop everybody who waits
        and end the rank (lock not held)."""
        with self.lock:
            if self.failure is None:
                self.failure = _Failure(rank=actor.rank, error=error)
                self.wake_all()
            self.end_actor(actor, whole_rank=True)

    def finish(self, actor):
        """``actor``'s thread returned; its rank may leave others stuck
        (lock not held)."""
        with self.lock:
            self.end_actor(actor)
            if self.live and self._blocked == self.live \
                    and self.failure is None:
                self._stalled()

    def _finish_rank(self, rank):
        self.finished[rank] = True
        self.finished_ranks.append(rank)
        self.finished_count += 1
        if self.finished_count == self.size:
            self.all_finished.set()
        if self.failure is None and self.schedule is None:
            for actor in list(self._hopeless):
                if not actor.signalled and not actor.ready() and \
                        actor.hopeless():
                    self._deadlock_check(certain=True)
                    break

    def stop(self, reason):
        """Backstop (timeout, Ctrl-C): break the world, saying ``reason``."""
        with self.lock:
            if self.failure is not None:
                return
            report = reports.Report.from_world(self, kind='timeout')
            self.break_with(DeadlockError(report.format(
                '{} (ranks still running user code are listed without a '
                'pending call)'.format(reason)), report=report))


def host_slots():
    """The slots Open MPI's mpiexec finds on this host: one per physical
    core this process may run on (hardware threads of one core count
    once), as its default mapping counts them."""
    allowed = os.sched_getaffinity(0) if hasattr(
        os, 'sched_getaffinity') else range(os.cpu_count() or 1)
    cores = set()
    for cpu in allowed:
        base = '/sys/devices/system/cpu/cpu{}/topology/'.format(cpu)
        try:
            with open(base + 'physical_package_id') as f:
                package = f.read().strip()
            with open(base + 'core_id') as f:
                cores.add((package, f.read().strip()))
        except OSError:
            cores.add(('cpu', cpu))     # no topology: a CPU is a core
    return max(1, len(cores))
