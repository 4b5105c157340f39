"""Watchdog: report a rank stuck in communication longer than a limit.

When enabled for a communicator (``create_communicator(watchdog=seconds)``
or ``CHAINERMN_LITE_WATCHDOG=seconds``), each of its blocking methods
(:data:`WATCHED_METHODS`) is wrapped on the instance: the outermost call
a thread makes is entered in a table (thread ident -> the call) and
removed when it returns. When off, nothing is wrapped and a call costs
what it costs without the watchdog.

One daemon thread per process looks at that table every limit / 4 (20 ms
to 1 s), and prints to stderr, once per stuck call, the rank, the call
with its arguments, how long it has waited (at least that long: it counts
from the first look that saw the call) and the Python stack of the
blocked thread. The daemon ends once no call has been pending for a few
looks, and the next watched call starts it again, so it never outlives
the job's communication.

Why a table and not the threads' frames: walking another thread's frames
(``sys._current_frames()`` and ``f_back``) while it runs can crash
CPython 3.11 (python/cpython#99110), so the daemon reads only the table,
and the one stack it prints comes from :func:`faulthandler.dump_traceback`,
which walks the frames in C under the GIL without making frame objects.
"""
import faulthandler
import functools
import inspect
import linecache
import os
import re
import sys
import tempfile
import threading
import time

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
# Looks with nothing pending after which the daemon ends.
_IDLE_LOOKS = 8


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


class _Watched:
    """One watched method of one communicator (made once, by
    :func:`watch`)."""

    __slots__ = ('comm', 'name', 'method', 'limit')

    def __init__(self, comm, name, method, limit):
        self.comm, self.name = comm, name
        self.method, self.limit = method, limit

    def arguments(self, args, kwargs):
        """A call's arguments as (name, value) pairs, defaults
        included."""
        try:
            bound = inspect.signature(self.method).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return tuple(('arg{}'.format(i), v)
                         for i, v in enumerate(args)) + tuple(kwargs.items())
        bound.apply_defaults()
        return tuple(bound.arguments.items())


class _Monitor:
    """The table of pending calls and the daemon thread that reads it."""

    def __init__(self):
        # thread ident -> (_Watched, args, kwargs): the caller makes
        # one tuple per call and reads no clock (a simulated rank's clock
        # may be virtual); a new call is a new tuple.
        self.calls = {}
        # thread ident -> [its call's tuple, first seen, reported]: the
        # daemon's own.
        self._seen = {}
        self.thread = None
        self._poll = _POLL_MAX
        self._lock = threading.Lock()

    def limit_poll(self, limit):
        with self._lock:
            self._poll = max(_POLL_MIN, min(self._poll, limit / 4))

    def ensure_running(self):
        with self._lock:
            if self.thread is not None:
                return
            thread = threading.Thread(target=self._run,
                                      name='chainermn_lite-watchdog',
                                      daemon=True)
            # Under the simulator, a thread started by a rank belongs to
            # that rank and keeps it alive, so a deadlocked world would
            # never be reported; the watchdog only reads, so it is
            # marked as the simulator's own (an unknown attribute to
            # plain threading).
            thread.simulator_internal = True
            self.thread = thread
            thread.start()

    def _run(self):
        me = threading.current_thread()
        wake = threading.Event()    # not time.sleep: it may be virtual
        idle = 0
        while True:
            wake.wait(self._poll)
            idle = 0 if self.calls else idle + 1
            if idle < _IDLE_LOOKS:
                self.check(time.monotonic())
                continue
            # Stop, unless a call came in meanwhile: its caller saw this
            # thread still set (and started none) or saw None and
            # started another one.
            with self._lock:
                self.thread = None
            if not self.calls:
                return
            with self._lock:
                if self.thread is not None:
                    return
                self.thread = me
            idle = 0

    def check(self, now):
        """Print every call pending longer than its limit, once each."""
        seen = {}
        for ident, call in list(self.calls.items()):
            entry = self._seen.get(ident)
            if entry is None or entry[0] is not call:
                entry = [call, now, False]
            seen[ident] = entry
            if not entry[2] and now - entry[1] > call[0].limit:
                entry[2] = True
                _report(call, now - entry[1], _stack_of(ident))
        self._seen = seen

    def started(self, ident, call, now):
        """When ``call`` of thread ``ident`` was first seen (``now`` if
        not yet)."""
        entry = self._seen.get(ident)
        return entry[1] if entry is not None and entry[0] is call else now


_MONITOR = _Monitor()


def pending_calls():
    """Snapshot: thread ident -> (start, limit, (comm, name, arguments,
    {})) of every thread inside a watched call; ``start`` is when the
    daemon first saw it (now if it has not yet), ``arguments`` (name,
    value) pairs."""
    now = time.monotonic()
    out = {}
    for ident, call in list(_MONITOR.calls.items()):
        watched, args, kwargs = call
        out[ident] = (_MONITOR.started(ident, call, now), watched.limit,
                      (watched.comm, watched.name,
                       watched.arguments(args, kwargs), {}))
    return out


def _watched(watched):
    calls = _MONITOR.calls
    get_ident = threading.get_ident
    method = watched.method

    @functools.wraps(method)
    def call(*args, **kwargs):
        ident = get_ident()
        if ident in calls:          # inside another watched call
            return method(*args, **kwargs)
        calls[ident] = (watched, args, kwargs)
        try:
            if _MONITOR.thread is None:
                _MONITOR.ensure_running()
            return method(*args, **kwargs)
        finally:
            del calls[ident]
    return call


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


def _describe(name, arguments):
    text = ', '.join('{}={}'.format(k, _summary(v)) for k, v in arguments)
    return '{}({})'.format(name, text)


_FAULTHANDLER_FRAME = re.compile(r'^  File (".*"), line (\d+) in (.*)$')


def _stack_of(ident):
    """The Python stack of thread ``ident``, most recent call last, as
    traceback prints it; '' if it could not be read."""
    try:
        with tempfile.TemporaryFile('w+') as dump:
            faulthandler.dump_traceback(dump, all_threads=True)
            dump.seek(0)
            text = dump.read()
    except (OSError, ValueError):
        return ''
    header = re.compile(r'^(Current thread|Thread) 0x0*{:x} '.format(ident))
    frames, inside = [], False
    for line in text.splitlines():
        if not line.startswith(' '):
            inside = bool(header.match(line))
            continue
        found = _FAULTHANDLER_FRAME.match(line) if inside else None
        if found:
            path, lineno, function = found.groups()
            if path[1:-1] == __file__:    # the watchdog's own wrapper
                continue
            source = linecache.getline(path[1:-1], int(lineno)).strip()
            frames.append('  File {}, line {}, in {}{}'.format(
                path, lineno, function,
                '\n    ' + source if source else ''))
        elif inside and line.strip() == '...':
            frames.append('  ... (older calls not shown)')
    return '\n'.join(reversed(frames))


def _report(call, waited, stack):
    watched, args, kwargs = call
    comm = watched.comm
    lines = ['[chainermn_lite watchdog] rank {} of the {!r} communicator '
             '(size {}) has been blocked for {:.1f} s (limit {:g} s) in '
             '{}'.format(comm.rank, comm.name, comm.size, waited,
                         watched.limit, _describe(
                             watched.name, watched.arguments(args, kwargs)))]
    if stack:
        lines.append('Python stack of the blocked thread (most recent call '
                     'last):')
        lines.append(stack)
    try:
        sys.stderr.write('\n'.join(lines) + '\n')
        sys.stderr.flush()
    except (OSError, ValueError):   # stderr closed at interpreter exit
        pass


def watch(comm, limit):
    """Watch ``comm``'s blocking methods with ``limit`` seconds (a
    communicator with ``rank``, ``size`` and ``name``)."""
    # object.__setattr__: CommunicatorBase may turn attributes into
    # configs.
    object.__setattr__(comm, '_watchdog_limit', limit)
    for name in WATCHED_METHODS:
        method = getattr(comm, name, None)
        if method is not None:
            object.__setattr__(
                comm, name, _watched(_Watched(comm, name, method, limit)))
    _MONITOR.limit_poll(limit)
    return comm
