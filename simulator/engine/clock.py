"""Virtual time: one clock per rank, advanced by compute and a network model.

With virtual time on (``world.clock`` is a :class:`VirtualTime`), every
rank carries a clock that reads what the program would measure on the
described machine (:class:`~simulator.engine.netmodel.Machine`):

- computation between two MPI calls advances it by the CPU time the
  thread spent (``time.thread_time``: ranks sharing cores do not slow each
  other's clocks) times ``compute_scale`` (and times the oversubscription
  when a node of the machine has more ranks than cores). With the
  ``'median'`` estimate (the default) each stretch of compute is keyed by
  where it runs, the code locations of the events that began and ended
  it (:class:`SegmentEstimate`), and charged the median of that key's
  recent measurements: a training loop repeats the same stretches, and
  the noise in CPU time (preemption, cache refills, the other rank
  threads) only ever adds, so one disturbed measurement no longer moves
  the prediction (a whole run on a slower machine still reads slower:
  the median steadies a run's outliers, not its level); ``'raw'``
  charges each measurement as it is;
- the rank threads run on one core (``one_core``, the default, where the
  platform lets a thread choose its cores): the CPU time of the same code
  was up to 20 % higher when two rank threads ran on two cores at once (the
  interpreter's lock hands over between cores, and every object both
  ranks touch, down to ``None``'s reference count, bounces between the
  cores' caches: real MPI processes share nothing of that), and which
  way the scheduler placed the threads varied from run to run;
- a receive completes no earlier than its message arrives (sent at the
  sender's clock, plus the link's latency and size / bandwidth; a
  rendezvous message, above the eager limit or synchronous, leaves only
  once its receive is posted too, and its sender waits for that); a
  collective starts when its last rank arrives and lasts what its
  algorithm costs; time spent waiting for a later peer counts as waiting,
  the transfer itself as communication.

The facade marks where each MPI call starts and ends (:meth:`enter`,
:meth:`leave`), stamps the calls' records (:meth:`stamp`) and reports
completions (:meth:`receive`, :meth:`collective`); inside a rank the time
functions read :meth:`read` (:func:`patch_time`). Nothing here runs while
virtual time is off.
"""
import builtins
import contextlib
import gc
import os
import statistics
import sys
import threading
import time

import numpy as np

from simulator.engine.actors import current
from simulator.engine.modules import RankModule
from simulator.engine.netmodel import family_of

__all__ = ['VirtualTime', 'RankClock', 'SegmentEstimate', 'ESTIMATES',
           'patch_time', 'payload_bytes']

_thread_time = time.thread_time
# The functions a rank's program reads its time from, and the real ones.
_TIME_FUNCTIONS = ('time', 'perf_counter', 'monotonic')
_REAL = {name: getattr(time, name) for name in _TIME_FUNCTIONS}
_REAL_NS = {name + '_ns': getattr(time, name + '_ns')
            for name in _TIME_FUNCTIONS}
_REAL_SLEEP = time.sleep

# Families whose byte count is the gathered total, not one rank's share.
_SUMMED = ('allgather', 'gather')

# How compute between two events is charged (VirtualTime's ``estimate``).
ESTIMATES = ('median', 'raw')
# Frames of a site's stack that tell segments apart: deep enough that one
# library helper making MPI calls for different callers (chainermn_lite's
# allreduce for the gradients and for the evaluator) gives distinct keys.
_SITE_DEPTH = 8
# Measurements per key the median looks at: odd, so a median is a
# measurement; short, so a key whose work changes (a growing batch)
# is followed within a few repetitions.
_WINDOW = 9


def _launching_core():
    """The core the rank threads share: the one the calling thread runs
    on (the scheduler's pick for this process), if it may; else the
    lowest it may use. None where threads cannot choose cores."""
    if not hasattr(os, 'sched_setaffinity'):
        return None
    allowed = os.sched_getaffinity(0)
    try:
        with open('/proc/thread-self/stat') as f:
            # Field 39, 'processor': the last core the thread ran on. The
            # command name (field 2) may hold spaces: count after it.
            core = int(f.read().rpartition(')')[2].split()[36])
    except (OSError, IndexError, ValueError):
        core = None
    return core if core in allowed else min(allowed)


def _site(frame):
    """Where an event happens: the code and instruction of ``frame`` and
    its callers (code objects by identity: hashing one hashes its body;
    the instruction offset, not the line: a line is searched for in the
    code's table)."""
    out = []
    while frame is not None and len(out) < 2 * _SITE_DEPTH:
        out.append(id(frame.f_code))
        out.append(frame.f_lasti)
        frame = frame.f_back
    return tuple(out)


class SegmentEstimate:
    """One rank's compute estimates: a stretch of compute is keyed by the
    sites of the events that began and ended it (an MPI call, a read of
    the clock, a sleep), and :meth:`charge` returns the median of the
    last ``window`` measurements of its key, the new one included.

    The first measurement of a key is charged as measured (a warm-up
    stays a warm-up); later ones move the charge only when most recent
    ones agree, so a stretch that a preemption or a cache refill slowed
    is charged what its key usually costs. A key whose work changes
    every time (a loop over growing sizes between the same two calls)
    is charged with a lag of half the window: ``raw`` is for those.
    """

    __slots__ = ('window', '_samples')

    def __init__(self, window=_WINDOW):
        if window < 1:
            raise ValueError('window must be at least 1, got '
                             '{!r}'.format(window))
        self.window = window
        self._samples = {}

    def charge(self, key, seconds):
        """Record ``seconds`` measured for ``key``; return the charge."""
        recent = self._samples.get(key)
        if recent is None:
            self._samples[key] = [seconds]
            return seconds
        recent.append(seconds)
        if len(recent) > self.window:
            del recent[0]
        return statistics.median_low(recent)

    def __len__(self):
        return len(self._samples)


class RankClock:
    """A rank's virtual clock and where its time went (seconds)."""

    __slots__ = ('now', 'compute', 'comm', 'wait', 'calls', 'first_call')

    def __init__(self):
        self.now = 0.0
        self.compute = 0.0
        self.comm = 0.0
        self.wait = 0.0
        self.calls = 0
        self.first_call = None  # when the rank first entered MPI

    def since_first_call(self):
        """Seconds from the first MPI call to the end (start-up, such as
        imports, excluded), or the whole time without MPI calls."""
        return self.now - (self.first_call or 0.0)

    def advance_to(self, ready, transfer):
        """Move to ``ready`` (if later): up to ``transfer`` seconds of it
        is communication, the rest waiting for a late peer."""
        delta = ready - self.now
        if delta > 0:
            comm = min(delta, transfer)
            self.comm += comm
            self.wait += delta - comm
            self.now = ready


class _Thread(threading.local):
    """Per-thread bookkeeping: call depth, CPU mark, the current span."""

    def __init__(self):
        self.depth = 0
        self.mark = _thread_time()
        self.started = None     # virtual time the current call/compute began
        self.op = None
        self.args = None
        self.in_place = None    # the current Allreduce's IN_PLACE, or None
        self.site = None        # where the current compute began
        self.cores = None       # the thread's own cores, while pinned


def payload_bytes(arg):
    """Bytes of one rank's contribution to a collective."""
    if arg is None:
        return 0
    if isinstance(arg, (bytes, bytearray)):
        return len(arg)
    if isinstance(arg, np.ndarray):
        return arg.nbytes
    if isinstance(arg, tuple):
        return payload_bytes(arg[0]) if arg else 0
    if isinstance(arg, list):
        return sum(payload_bytes(a) for a in arg)
    data = getattr(arg, 'data', None)
    return data.nbytes if isinstance(data, np.ndarray) else 0


class VirtualTime:
    """The clocks of one run on ``machine``; attach to a world with
    :meth:`attach` (``simulator.run(..., clock=VirtualTime(...))``).

    ``compute_scale`` (None: the machine's) multiplies measured compute;
    ``estimate`` is how a stretch of compute is charged: ``'median'``
    (its key's recent median, :class:`SegmentEstimate`) or ``'raw'`` (as
    measured); ``timeline`` keeps Trace Event spans for
    :mod:`simulator.tools.timeline`; ``one_core``: the rank threads run
    on one core (steadier compute: see the module's notes), or where the
    operating system places them (False: faster for ranks that compute
    outside the interpreter's lock, such as large BLAS calls).
    """

    def __init__(self, machine, compute_scale=None, timeline=False,
                 estimate='median', one_core=True):
        self.machine = machine
        self.compute_scale = machine.compute_scale if compute_scale is None \
            else float(compute_scale)
        if self.compute_scale <= 0:
            raise ValueError('compute_scale must be positive, got '
                             '{!r}'.format(compute_scale))
        if estimate not in ESTIMATES:
            raise ValueError('estimate must be one of {}, got {!r}'.format(
                ', '.join(ESTIMATES), estimate))
        self.estimate = estimate
        self.one_core = bool(one_core)
        self.core = None    # the core rank threads run on, once attached
        self.estimates = []
        self.events = [] if timeline else None
        self.world = None
        self.clocks = []
        self._local = _Thread()
        self._collectives = {}
        self._bases = {}
        self.boundary = 0.0

    def attach(self, world, boundary=0.0):
        """Give ``world`` its clocks (before its ranks start).

        ``boundary``: CPU seconds the simulator's own call wrapper spends
        outside the span it can measure, per MPI call (see
        :func:`simulator.mpi.timing.boundary_cost`); each call's compute
        is that much less.
        """
        if boundary < 0:
            raise ValueError('boundary must be non-negative, got '
                             '{!r}'.format(boundary))
        self.boundary = float(boundary)
        self.world = world
        world.clock = self
        self.clocks = [RankClock() for _ in range(world.size)]
        self.estimates = [SegmentEstimate() for _ in range(world.size)] \
            if self.estimate == 'median' else None
        self._set_scales()
        self._bases = {name: real() for name, real in _REAL.items()}
        self.core = _launching_core() if self.one_core else None
        # What a rank kept on that core answers for its affinity.
        self._cores = os.sched_getaffinity(0) if self.core is not None \
            else None

    def _set_scales(self):
        per_node = {}
        node_of = self.world.node_of
        for node in node_of:
            per_node[node] = per_node.get(node, 0) + 1
        cores = self.machine.cores_per_node
        # Ranks beyond the node's cores share them: compute stretches.
        self._scale = [self.compute_scale * max(
            1.0, per_node[n] / cores if cores else 1.0) for n in node_of]

    def add_ranks(self, ranks, start):
        """Clocks for ranks a Spawn added to the world (world lock
        held, ``world.node_of`` already extended): they start at
        ``start``, the spawning call's time."""
        for _ in ranks:
            clock = RankClock()
            clock.now = start
            self.clocks.append(clock)
            if self.estimates is not None:
                self.estimates.append(SegmentEstimate())
        self._set_scales()

    # -- threads and call boundaries (calling thread) -------------------
    def thread_started(self, rank):
        """A thread of ``rank`` starts running the rank's code."""
        st = self._local
        st.depth = 0
        st.started = self.clocks[rank].now
        st.site = None
        if self.core is not None:
            try:
                st.cores = os.sched_getaffinity(0)
                os.sched_setaffinity(0, {self.core})
            except OSError:
                # The core went away (a cpuset changed): the thread runs
                # where it may, its compute merely noisier.
                st.cores = None
        st.mark = _thread_time()

    def unpinned_cores(self):
        """The cores the launcher had, for a rank thread kept on one core
        (None for a thread that is not)."""
        if getattr(self._local, 'cores', None) is None:
            return None
        return self._cores

    def thread_ended(self, rank):
        """The thread's last compute counts; the thread gets its cores
        back (it may outlive the rank)."""
        st = self._local
        if st.depth == 0:
            self._commit(rank, sys._getframe(1))
            self._span_compute(rank)
        if st.cores is not None:
            cores, st.cores = st.cores, None
            try:
                os.sched_setaffinity(0, cores)
            except OSError:
                pass    # as in thread_started: only placement is lost

    def _commit(self, rank, frame, less=0.0):
        # ``frame``: where the event ending this stretch happens. The
        # clock is read first: what follows is the simulator's own work.
        st = self._local
        t = _thread_time()
        seconds = t - st.mark - less
        st.mark = t
        estimates = self.estimates
        if estimates is not None:
            site = _site(frame)
            seconds = estimates[rank].charge((st.site, site), seconds)
            st.site = site
        if seconds > 0:
            delta = seconds * self._scale[rank]
            clock = self.clocks[rank]
            clock.now += delta
            clock.compute += delta

    def _span_compute(self, rank):
        st = self._local
        now = self.clocks[rank].now
        if self.events is not None and st.started is not None and \
                now > st.started:
            self.events.append(('compute', rank, st.started, now, None))
        st.started = now

    def enter(self, rank, op, in_place=None):
        """The calling thread of ``rank`` enters MPI call ``op``;
        ``in_place``: whether a buffer Allreduce was given ``IN_PLACE``
        (None for other calls)."""
        st = self._local
        st.depth += 1
        if st.depth == 1:
            self._commit(rank, sys._getframe(1), self.boundary)
            self._span_compute(rank)
            st.op = op
            st.in_place = in_place
            st.args = {} if self.events is not None else None
            clock = self.clocks[rank]
            if clock.first_call is None:
                clock.first_call = clock.now
            clock.calls += 1

    def leave(self, rank):
        """The calling thread leaves the MPI call it entered."""
        st = self._local
        st.depth -= 1
        if st.depth == 0:
            now = self.clocks[rank].now
            if self.events is not None:
                self.events.append((st.op, rank, st.started, now, st.args))
            st.started = now
            st.mark = _thread_time()

    def note(self, **args):
        """Add ``args`` (peer, tag, bytes...) to the current call's span."""
        extra = self._local.args
        if extra is not None:
            extra.update(args)

    def sleep(self, rank, seconds):
        """The rank's program sleeps: its clock moves on by as much (a
        sleeping thread spends no CPU time)."""
        if self._local.depth == 0 and seconds > 0:
            self._commit(rank, sys._getframe(1))
            clock = self.clocks[rank]
            clock.now += seconds
            clock.compute += seconds

    def uncounted(self, seconds):
        """``seconds`` of the calling thread's CPU time are not the
        rank's compute (an import: see :func:`patch_time`)."""
        self._local.mark += seconds

    def read(self, rank):
        """The rank's virtual seconds, or None inside an MPI call (the
        simulator's own code keeps real time)."""
        if self._local.depth:
            return None
        # Reading the clock costs the simulator's path about what a call's
        # boundary does; a program reading it in a loop must not see its
        # own reads as compute.
        self._commit(rank, sys._getframe(1), self.boundary)
        # Nor the estimate's own work just done.
        self._local.mark = _thread_time()
        return self.clocks[rank].now

    # -- messages and collectives ---------------------------------------
    def stamp(self, record):
        """Note on ``record`` the virtual time its call started."""
        record.time = self.clocks[record.rank].now

    def send(self, record, dest, nbytes, sync):
        """``record``'s rank posts a send of ``nbytes`` to world rank
        ``dest``: an eager send costs the sender the injection (size /
        bandwidth) at once; a synchronous (rendezvous) one is charged when
        it completes (:meth:`rendezvous_sent`)."""
        self.stamp(record)
        if not sync:
            cost = nbytes / self._link(record.rank, dest).bandwidth
            clock = self.clocks[record.rank]
            clock.now += cost
            clock.comm += cost
        if self.events is not None:
            self.note(peer=dest, tag=record.tag, bytes=nbytes,
                      comm=record.comm, flow_out=id(record))

    def _rendezvous_arrival(self, send_record, rank, nbytes, recv_record):
        """(arrival, transfer) of a rendezvous message: its data moves
        once both its send and the matching receive are posted (a
        receive posted by a probe, or unknown, counts from the send)."""
        start = send_record.time
        if recv_record is not None and recv_record.time is not None:
            start = max(start, recv_record.time)
        transfer = self._link(send_record.rank, rank).time(nbytes)
        return start + transfer, transfer

    def rendezvous_sent(self, send):
        """The sender of the rendezvous Send activity ``send`` completes
        it: it lasts until its data has arrived, which waits for the
        receive to be posted."""
        record = send.record
        if record.time is None:
            return
        arrival, transfer = self._rendezvous_arrival(
            record, send.dest, send.nbytes, send.partner)
        self.clocks[record.rank].advance_to(arrival, transfer)

    def receive(self, rank, send_record, nbytes, recv_record=None):
        """``rank`` completes a receive of the message ``send_record``
        sent: it cannot end before the message arrives. ``recv_record``
        (the receive's own CallRecord) is given for a rendezvous message,
        whose data waits for the receive to be posted."""
        if send_record is None or send_record.time is None:
            return
        if recv_record is None:
            transfer = self._link(send_record.rank, rank).time(nbytes)
            arrival = send_record.time + transfer
        else:
            arrival, transfer = self._rendezvous_arrival(
                send_record, rank, nbytes, recv_record)
        self.clocks[rank].advance_to(arrival, transfer)
        if self.events is not None:
            self.note(peer=send_record.rank, tag=send_record.tag,
                      bytes=nbytes, comm=send_record.comm,
                      flow_in=id(send_record), sent=send_record.time)

    def collective(self, rank, slot):
        """``rank`` completes collective ``slot`` (every rank arrived): it
        started when the last rank arrived and lasts its algorithm's
        cost."""
        key = slot.key
        cached = self._collectives.get(key)
        if cached is None:
            cached = self._collectives[key] = self._cost(slot) + [0]
        start, cost, algorithm, nbytes, seen = cached
        cached[4] = seen + 1
        if cached[4] >= slot.size:
            self._collectives.pop(key, None)
        in_place = self._local.in_place
        if in_place is not None:
            # This rank's own copy of its send buffer comes first.
            cost += self.machine.copy_time(algorithm, nbytes, in_place)
        self.clocks[rank].advance_to(start + cost, cost)
        if self.events is not None:
            self.note(comm=slot.comm_name, bytes=nbytes, ranks=slot.size,
                      algorithm=algorithm)

    def _cost(self, slot):
        times = [c.time for c in slot.calls if c is not None and
                 c.time is not None]
        start = max(times) if times else 0.0
        sizes = [payload_bytes(a) for a in slot.args]
        nbytes = sum(sizes) if family_of(slot.op) in _SUMMED else \
            max(sizes, default=0)
        nodes = {self.world.node_of[m] for m in slot.members}
        link = self.machine.links['intra' if len(nodes) == 1 else 'inter']
        try:
            cost, algorithm = self.machine.collective_time(
                slot.op, slot.size, nbytes, link)
        except ValueError:
            # A collective the model has no formula for must not break the
            # program: it synchronises, like a barrier, and says so.
            cost, _ = self.machine.collective_time('barrier', slot.size, 0,
                                                   link)
            algorithm = 'unmodelled (charged as a barrier)'
        return [start, cost, algorithm, nbytes]

    def _link(self, a, b):
        node_of = self.world.node_of
        return self.machine.link(node_of[a], node_of[b])

    # -- results ---------------------------------------------------------
    def slowest(self):
        """The world rank whose clock reads the most."""
        return max(range(len(self.clocks)), key=lambda r: self.clocks[r].now)

    def summary(self):
        """The end-of-run line for the slowest rank and a per-rank
        table."""
        if not self.clocks:
            return 'virtual time: no ranks ran'
        c = self.clocks[self.slowest()]
        lines = ['virtual time: {:.6f} s (compute {:.6f}, communication '
                 '{:.6f}, waiting {:.6f}) on {}'.format(
                     c.now, c.compute, c.comm, c.wait, self.machine.name)]
        lines.append('{:>6} {:>12} {:>12} {:>14} {:>12} {:>7}'.format(
            'rank', 'total s', 'compute s', 'communication', 'waiting s',
            'calls'))
        for r, c in enumerate(self.clocks):
            lines.append('{:>6} {:>12.6f} {:>12.6f} {:>14.6f} {:>12.6f} '
                         '{:>7}'.format(r, c.now, c.compute, c.comm, c.wait,
                                        c.calls))
        return '\n'.join(lines)

    def base(self, name):
        """The real reading of time function ``name`` at time zero."""
        return self._bases[name]


# -- time functions inside ranks ------------------------------------------
_patch_lock = threading.Lock()
_patched = 0
_rebound = []           # (module dict, name, real function)
_saved_import = []
_saved_affinity = []


def _virtual_function(name, real, ns):
    def virtual():
        ctx = current()
        if ctx is not None:
            vt = ctx.world.clock
            if vt is not None:
                seconds = vt.read(ctx.rank)
                if seconds is not None:
                    value = vt.base(name) + seconds
                    return int(value * 1e9) if ns else value
        return real()
    virtual.__name__ = real.__name__
    virtual.__doc__ = real.__doc__
    virtual.simulator_virtual = True
    return virtual


def _virtual_sleep():
    def sleep(seconds):
        ctx = current()
        if ctx is not None and ctx.world.clock is not None:
            ctx.world.clock.sleep(ctx.rank, seconds)
        _REAL_SLEEP(seconds)
    sleep.__name__ = _REAL_SLEEP.__name__
    sleep.__doc__ = _REAL_SLEEP.__doc__
    sleep.simulator_virtual = True
    return sleep


# A thread inside an uncounted span (an import, a garbage collection):
# spans nested in it must not be subtracted twice.
_uncounting = threading.local()


def _uncounted(fn, *args):
    """Run ``fn(*args)``; its CPU time counts for no rank (the calling
    thread's, when it runs a rank in virtual time)."""
    ctx = current()
    if ctx is None or ctx.world.clock is None or \
            getattr(_uncounting, 'inside', False):
        return fn(*args)
    _uncounting.inside = True
    start = _thread_time()
    try:
        return fn(*args)
    finally:
        _uncounting.inside = False
        ctx.world.clock.uncounted(_thread_time() - start)


def _uncounted_import(real):
    def import_(name, *args, **kwargs):
        return _uncounted(lambda: real(name, *args, **kwargs))
    import_.simulator_virtual = True
    return import_


def _gc_phase(phase, info):
    # A collection runs in whichever thread allocated last, over every
    # rank's garbage (the ranks share one heap): it counts for no rank.
    ctx = current()
    if ctx is None or ctx.world.clock is None:
        return
    if phase == 'start':
        if not getattr(_uncounting, 'inside', False):
            _uncounting.inside = True
            _uncounting.gc_start = _thread_time()
    elif getattr(_uncounting, 'gc_start', None) is not None:
        spent = _thread_time() - _uncounting.gc_start
        _uncounting.gc_start = None
        _uncounting.inside = False
        ctx.world.clock.uncounted(spent)


def _unpinned_affinity(real):
    def sched_getaffinity(pid):
        # A rank thread that virtual time keeps on one core answers with
        # the cores it had (a program sizing its pools by them would see
        # one core, where its process under mpiexec sees the machine's).
        ctx = current()
        if ctx is not None and ctx.world.clock is not None and (
                pid == 0 or pid == ctx.pid):
            cores = ctx.world.clock.unpinned_cores()
            if cores is not None:
                return set(cores)
        return real(pid)
    sched_getaffinity.simulator_virtual = True
    return sched_getaffinity


def _rebinding_candidates():
    # Libraries keep references they took at import time (Chainer's
    # trainer: ``_get_time = time.perf_counter``). The standard library's
    # own (threading's timeouts, queue) must stay real: a blocked rank
    # spends no CPU, so a virtual deadline would never come.
    # A rank's own copy of a user module (RankModule) imported inside the
    # rank, where the time functions were virtual already; reading its
    # namespace outside a rank would execute a copy there.
    stdlib = sys.stdlib_module_names
    for name, module in list(sys.modules.items()):
        if module is None or name.partition('.')[0] in stdlib or \
                name.startswith('simulator') or name.startswith('_') or \
                isinstance(module, RankModule):
            continue
        namespace = getattr(module, '__dict__', None)
        if isinstance(namespace, dict):
            yield namespace


@contextlib.contextmanager
def patch_time():
    """While inside, ``time.time/perf_counter/monotonic`` (and their
    ``_ns`` forms) read the calling rank's virtual clock in ranks whose
    world has one, and real time everywhere else; ``time.sleep`` in such
    a rank also moves its clock on, and the CPU time of imports and of
    garbage collections counts for no rank (the ranks share libraries and
    one heap: one rank would pay for all)."""
    global _patched
    with _patch_lock:
        _patched += 1
        if _patched == 1:
            table = {}
            for name, real in list(_REAL.items()) + list(_REAL_NS.items()):
                base = name[:-3] if name.endswith('_ns') else name
                virtual = _virtual_function(base, real,
                                            name.endswith('_ns'))
                table[id(real)] = (real, virtual)
                setattr(time, name, virtual)
            table[id(_REAL_SLEEP)] = (_REAL_SLEEP, _virtual_sleep())
            time.sleep = table[id(_REAL_SLEEP)][1]
            # Libraries are shared by the rank threads: the first rank to
            # import one would pay for all, and which rank that is varies
            # from run to run. Imports count for no rank.
            _saved_import.append(builtins.__import__)
            builtins.__import__ = _uncounted_import(builtins.__import__)
            gc.callbacks.append(_gc_phase)
            if hasattr(os, 'sched_getaffinity'):
                _saved_affinity.append(os.sched_getaffinity)
                os.sched_getaffinity = _unpinned_affinity(
                    os.sched_getaffinity)
            for namespace in _rebinding_candidates():
                for key, value in list(namespace.items()):
                    # By identity: module globals may hash or compare
                    # oddly (a rank-local COMM_WORLD raises outside ranks).
                    found = table.get(id(value))
                    if found is not None and found[0] is value:
                        namespace[key] = found[1]
                        _rebound.append((namespace, key, value))
    try:
        yield
    finally:
        with _patch_lock:
            _patched -= 1
            if _patched == 0:
                for name, real in list(_REAL.items()) + \
                        list(_REAL_NS.items()):
                    setattr(time, name, real)
                time.sleep = _REAL_SLEEP
                builtins.__import__ = _saved_import.pop()
                gc.callbacks.remove(_gc_phase)
                if _saved_affinity:
                    os.sched_getaffinity = _saved_affinity.pop()
                for namespace, key, real in _rebound:
                    if getattr(namespace.get(key), 'simulator_virtual',
                               False):
                        namespace[key] = real
                del _rebound[:]
