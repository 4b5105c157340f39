"""Watchdog: report a rank stuck in communication longer than a limit.

When enabled for a communicator (``create_communicator(watchdog=seconds)``
or ``CHAINERMN_LITE_WATCHDOG=seconds``), its blocking methods are replaced
on the instance by thin wrappers that note the pending call (one tuple
stored in the thread's own slot, cleared on exit). One daemon thread per
process looks at the pending calls and, once per stuck call, prints to
stderr the rank, the call with its arguments, how long it has waited and
the Python stack of the blocked thread. A communicator without a watchdog
keeps its plain class methods: disabled costs nothing.

Pending calls are kept per thread, not per process, so simulated ranks
(threads of one process) are watched each on its own.
"""
import functools
import inspect
import os
import sys
import threading
import time
import traceback

__all__ = ['WATCHDOG_ENV', 'WATCHED_METHODS', 'watchdog_limit', 'watch',
           'pending_calls']

WATCHDOG_ENV = 'CHAINERMN_LITE_WATCHDOG'

# Every communicator method that waits for other ranks.
WATCHED_METHODS = (
    'send', 'recv', 'send_exact', 'recv_exact', 'send_obj', 'recv_obj',
    'bcast', 'gather', 'allgather', 'scatter', 'alltoall', 'allreduce',
    'bcast_obj', 'gather_obj', 'allgather_obj', 'scatter_obj',
    'allreduce_obj', 'bcast_data', 'multi_node_mean_grad', 'split')

_POLL_MIN, _POLL_MAX = 0.02, 1.0


def watchdog_limit(watchdog=None):
    """The limit in seconds from the argument, else from the environment;
    None when the watchdog is off (unset, empty, 0 or negative)."""
    if watchdog is None:
        text = os.environ.get(WATCHDOG_ENV, '').strip()
        if not text:
            return None
        try:
            watchdog = float(text)
        except ValueError:
            raise ValueError(
                '{}={!r}: expecting seconds (a number; 0 turns the watchdog '
                'off)'.format(WATCHDOG_ENV, text)) from None
    if isinstance(watchdog, bool) or not isinstance(watchdog, (int, float)):
        raise TypeError('watchdog must be a number of seconds or None, got '
                        '{!r}'.format(watchdog))
    return float(watchdog) if watchdog > 0 else None


class _Monitor:
    """The process's pending calls and the daemon thread reporting them."""

    def __init__(self):
        # thread ident -> that thread's one-item list holding its pending
        # (start, limit, call) or None; a thread only writes its own list.
        self.slots = {}
        self.local = threading.local()
        # Entries already printed, held so that their id()s stay unique.
        self._reported = {}
        self._poll = _POLL_MAX
        self._lock = threading.Lock()
        self._thread = None

    def ensure_running(self, limit):
        with self._lock:
            self._poll = max(_POLL_MIN, min(self._poll, limit / 4))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name='chainermn_lite-watchdog',
                    daemon=True)
                self._thread.start()

    def slot(self):
        """The calling thread's slot, registered on first use."""
        slot = self.local.slot = [None]
        with self._lock:
            self.slots[threading.get_ident()] = slot
        return slot

    def pending(self):
        return {ident: slot[0] for ident, slot in list(self.slots.items())
                if slot[0] is not None}

    def _run(self):
        while True:
            time.sleep(self._poll)
            self.check(time.monotonic())

    def check(self, now):
        """Print every call pending longer than its limit, once each."""
        pending = self.pending()
        stuck = [(ident, entry) for ident, entry in pending.items()
                 if now - entry[0] > entry[1]]
        self._reported = {id(e): e for e in pending.values()
                          if self._reported.get(id(e)) is e}
        if not stuck and len(self.slots) < 64:
            return
        frames = sys._current_frames()
        with self._lock:
            for ident in [i for i in self.slots if i not in frames]:
                del self.slots[ident]     # its thread has ended
        for ident, entry in stuck:
            if self._reported.get(id(entry)) is entry:
                continue
            self._reported[id(entry)] = entry
            _report(entry, now, frames.get(ident))


_MONITOR = _Monitor()


def pending_calls():
    """Snapshot: thread ident -> (start, limit, (comm, name, args, kwargs))."""
    return _MONITOR.pending()


def _summary(value):
    shape, dtype = getattr(value, 'shape', None), getattr(value, 'dtype', None)
    if shape is not None and dtype is not None:
        return '<{} array {}>'.format(dtype, tuple(shape))
    if isinstance(value, (tuple, list)) and len(value) > 4:
        return '<{} of {}>'.format(type(value).__name__, len(value))
    if isinstance(value, (int, float, str, type(None))):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return '({})'.format(', '.join(_summary(v) for v in value))
    return '<{}>'.format(type(value).__name__)


def _describe(comm, name, args, kwargs):
    method = getattr(type(comm), name)
    try:
        bound = inspect.signature(method).bind(comm, *args, **kwargs)
        items = list(bound.arguments.items())[1:]
    except TypeError:
        items = [(None, a) for a in args] + list(kwargs.items())
    text = ', '.join(_summary(v) if k is None else
                     '{}={}'.format(k, _summary(v)) for k, v in items)
    return '{}({})'.format(name, text)


def _report(entry, now, frame):
    start, limit, (comm, name, args, kwargs) = entry
    lines = ['[chainermn_lite watchdog] rank {} of the {!r} communicator '
             '(size {}) has been blocked for {:.1f} s (limit {:g} s) in '
             '{}'.format(comm.rank, comm.name, comm.size, now - start, limit,
                         _describe(comm, name, args, kwargs))]
    if frame is not None:
        lines.append('Python stack of the blocked thread (most recent call '
                     'last):')
        lines.append(''.join(traceback.format_stack(frame)).rstrip())
    try:
        sys.stderr.write('\n'.join(lines) + '\n')
        sys.stderr.flush()
    except (OSError, ValueError):   # stderr closed at interpreter exit
        pass


def _watched(comm, name, limit):
    method = getattr(comm, name)
    local = _MONITOR.local
    new_slot = _MONITOR.slot
    clock = time.monotonic

    # Per call: one thread-local lookup, one tuple, two list stores.
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            slot = local.slot
        except AttributeError:
            slot = new_slot()
        outer = slot[0]
        slot[0] = (clock(), limit, (comm, name, args, kwargs))
        try:
            return method(*args, **kwargs)
        finally:
            slot[0] = outer
    return call


def watch(comm, limit):
    """Watch ``comm``'s blocking methods with ``limit`` seconds (a
    communicator with ``rank``, ``size`` and ``name``)."""
    for name in WATCHED_METHODS:
        # object.__setattr__: CommunicatorBase may turn attributes into
        # configs.
        object.__setattr__(comm, name, _watched(comm, name, limit))
    object.__setattr__(comm, '_watchdog_limit', limit)
    _MONITOR.ensure_running(limit)
    return comm
