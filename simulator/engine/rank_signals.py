"""Signal handlers per rank, and the signals a rank sends itself.

A process sets its own handlers (a SIGTERM handler that saves a
checkpoint, a SIGUSR1 that dumps state) and a program tests them by
signalling itself: ``os.kill(os.getpid(), sig)`` or
``signal.raise_signal(sig)``. Rank threads share one process, whose
handlers only its main thread may set, so while worlds run:

- ``signal.signal`` and ``signal.getsignal`` in a rank read and write the
  rank's own handlers, which start as the process's; ``signal.signal``
  from a thread other than the rank's main thread raises Python's
  ``ValueError``, as in a process;
- a signal the rank sends to its own id runs the rank's handler, in the
  calling thread right after the call (Python runs it in the main thread
  between two instructions); its exception (``KeyboardInterrupt`` from
  SIGINT's default handler) propagates from the call. ``SIG_IGN``, and a
  default action that ignores (SIGCHLD, SIGCONT, SIGURG, SIGWINCH), do
  nothing; a default action that ends the process ends the real one, so
  the run's exit status is mpiexec's (128 + the signal).

What stays the process's: signals from outside (a scheduler's SIGTERM to
the launcher reaches the process's handlers, not the ranks'), and a
signal one rank sends to another rank's id (the whole process gets it).
"""
import os
import signal
import sys

from simulator.engine.actors import current, current_actor
from simulator.engine.patches import wrap

__all__ = ['install']

_KEY = ('signal',)      # the rank's handlers in its ProcessState.objects
_IGNORED_BY_DEFAULT = frozenset((signal.SIGCHLD, signal.SIGCONT,
                                 signal.SIGURG, signal.SIGWINCH))
_UNCATCHABLE = frozenset((signal.SIGKILL, signal.SIGSTOP))

_state = [lambda: None]      # the calling rank's ProcessState, or None


def _own(create=False):
    """The calling rank's handlers ({number: handler}), or None."""
    state = _state[0]()
    return None if state is None else state.own(_KEY, create)


def _signal_for(real):
    def signal_(signalnum, handler):
        own = _own(create=True)
        if own is None:
            return real(signalnum, handler)
        if not current_actor().main:
            raise ValueError('signal only works in main thread of the main '
                             'interpreter')
        previous = _handler(signalnum)      # validates the number
        if handler not in (signal.SIG_DFL, signal.SIG_IGN) and \
                not callable(handler):
            raise TypeError('signal handler must be signal.SIG_IGN, '
                            'signal.SIG_DFL, or a callable object')
        if signalnum in _UNCATCHABLE:
            raise OSError(22, 'Invalid argument')
        own[int(signalnum)] = handler
        return previous
    return signal_


def _handler(signalnum):
    own = _own()
    found = None if own is None else own.get(int(signalnum))
    return _getsignal(signalnum) if found is None else found


def _getsignal_for(real):
    def getsignal(signalnum):
        return real(signalnum) if _own() is None else _handler(signalnum)
    return getsignal


def _deliver(signalnum, frame, send):
    """Act on ``signalnum`` sent by the calling rank to itself, as the
    process would (``send()`` makes the real signal)."""
    handler = _handler(signalnum)
    if handler is signal.SIG_IGN or (
            handler is signal.SIG_DFL and signalnum in _IGNORED_BY_DEFAULT):
        return
    if callable(handler):
        handler(int(signalnum), frame)
        return
    send()


def _kill_for(real):
    def kill(pid, signalnum):
        context = current()
        if context is None or pid != context.pid or \
                not 0 < signalnum < signal.NSIG:
            return real(pid, signalnum)     # (0 or no signal: checks only)
        _deliver(signalnum, sys._getframe(1), lambda: real(pid, signalnum))
    return kill


def _raise_signal_for(real):
    def raise_signal(signalnum):
        if current() is None or not 0 < signalnum < signal.NSIG:
            return real(signalnum)      # (no signal: its OSError)
        _deliver(signalnum, sys._getframe(1), lambda: real(signalnum))
    return raise_signal


_getsignal = signal.getsignal       # the process's


def install(process_state):
    """Keep signal handlers per rank (``process_state()``: the calling
    rank's ProcessState, None outside a rank). Returns the undo
    function."""
    _state[0] = process_state
    undo = [wrap(signal, 'signal', _signal_for),
            wrap(signal, 'getsignal', _getsignal_for),
            wrap(signal, 'raise_signal', _raise_signal_for),
            wrap(os, 'kill', _kill_for)]

    def undo_all():
        for step in reversed(undo):
            step()
        _state[0] = lambda: None
    return undo_all
