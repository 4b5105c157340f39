"""Watchdog: report a rank stuck in communication longer than a limit.

When enabled for a communicator (``create_communicator(watchdog=seconds)``
or ``CHAINERMN_LITE_WATCHDOG=seconds``), the communicator is marked with
its limit and nothing is wrapped: a call costs what it costs without the
watchdog. One daemon thread per process looks, every limit / 4 (20 ms to
1 s), at the Python stack of every thread (``sys._current_frames``): a
thread inside a blocking method of a watched communicator is in a pending
call, and the same frame still there after the limit is a stuck call. The
daemon prints to stderr, once per stuck call, the rank, the call with its
arguments, how long it has waited (at least that long: it counts from the
first look that saw the call) and the Python stack of the blocked thread.
The cost is the daemon's, once per look, not the caller's, once per call.

A frame is a watched call when its code is one of a watched
communicator's methods (the class's, or the instance's own plain-path
``send``/``recv`` functions, whose ``other`` is the communicator's
method). Pending calls are found per thread, so simulated ranks (threads
of one process) are watched each on its own.
"""
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
    """The daemon thread that looks for stuck calls, and what it saw."""

    def __init__(self):
        # Code objects of the watched methods of every watched class.
        self.codes = set()
        # thread ident -> [frame of its pending call, first seen,
        # reported]: holding the frame keeps its identity (a new call is
        # a new frame) until the next look.
        self._seen = {}
        self._poll = _POLL_MAX
        self._lock = threading.Lock()
        self._thread = None

    def ensure_running(self, comm, limit):
        with self._lock:
            for name in WATCHED_METHODS:
                for method in (getattr(type(comm), name, None),
                               getattr(comm, name, None)):
                    code = getattr(method, '__code__', None)
                    if code is not None:
                        self.codes.add(code)
            self._poll = max(_POLL_MIN, min(self._poll, limit / 4))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name='chainermn_lite-watchdog',
                    daemon=True)
                self._thread.start()

    def pending(self):
        """thread ident -> (frame of the watched call, communicator,
        limit) of every thread inside one now."""
        codes = self.codes
        found = {}
        for ident, frame in sys._current_frames().items():
            while frame is not None:
                if frame.f_code in codes:
                    comm = _communicator_of(frame)
                    limit = getattr(comm, '__dict__', {}).get(
                        '_watchdog_limit')
                    if limit is not None:
                        found[ident] = (frame, comm, limit)
                        break
                frame = frame.f_back
        return found

    def _run(self):
        while True:
            time.sleep(self._poll)
            self.check(time.monotonic())

    def check(self, now):
        """Print every call pending longer than its limit, once each."""
        seen = {}
        for ident, (frame, comm, limit) in self.pending().items():
            entry = self._seen.get(ident)
            if entry is None or entry[0] is not frame:
                entry = [frame, now, False]
            seen[ident] = entry
            if not entry[2] and now - entry[1] > limit:
                entry[2] = True
                _report(comm, frame, now - entry[1], limit,
                        sys._current_frames().get(ident))
        self._seen = seen

    def started(self, ident, frame, now):
        """When the call in ``frame`` of thread ``ident`` was first seen
        (``now`` if not yet)."""
        entry = self._seen.get(ident)
        return entry[1] if entry is not None and entry[0] is frame else now


_MONITOR = _Monitor()


def pending_calls():
    """Snapshot: thread ident -> (start, limit, (comm, name, args, kwargs))
    of every thread inside a watched call; ``start`` is when the daemon
    first saw it (now if it has not yet)."""
    now = time.monotonic()
    out = {}
    for ident, (frame, comm, limit) in _MONITOR.pending().items():
        out[ident] = (_MONITOR.started(ident, frame, now), limit,
                      (comm, frame.f_code.co_name, _arguments(frame), {}))
    return out


def _communicator_of(frame):
    """The communicator whose method (or plain-path function) runs in
    ``frame``."""
    values = frame.f_locals
    comm = values.get('self')
    if '_watchdog_limit' in getattr(comm, '__dict__', ()):
        return comm
    return getattr(values.get('other'), '__self__', None)


def _arguments(frame):
    """The arguments of the call running in ``frame`` (without self), as
    (name, value) pairs."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[count])
        count += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[count])
    values = frame.f_locals
    if names and names[0] == 'self':
        del names[0]
    return tuple((n, values.get(n)) for n in names)


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


def _report(comm, frame, waited, limit, top):
    lines = ['[chainermn_lite watchdog] rank {} of the {!r} communicator '
             '(size {}) has been blocked for {:.1f} s (limit {:g} s) in '
             '{}'.format(comm.rank, comm.name, comm.size, waited, limit,
                         _describe(frame.f_code.co_name, _arguments(frame)))]
    if top is not None:
        lines.append('Python stack of the blocked thread (most recent call '
                     'last):')
        lines.append(''.join(traceback.format_stack(top)).rstrip())
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
    _MONITOR.ensure_running(comm, limit)
    return comm
