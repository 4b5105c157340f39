"""Process-wide changes a rank makes that cannot be made private.

Signal handlers, the recursion limit, the garbage collector's settings
and the C environment (``os.putenv``; ``os.environ`` is per rank) belong
to the one real process (the standard streams do not: see
:mod:`simulator.engine.rank_sys`; nor do the working directory and umask
where each rank thread has its own, see
:func:`simulator.engine.process.own_working_directory`): when a rank
changes one of them,
every other rank sees the change, where separate processes would not.
While a world runs (:func:`reported`), such a call from a rank still
happens, and a :class:`SharedStateWarning` names the call, the rank and
the user's file:line so the difference is never silent.
"""
import gc
import os
import signal
import warnings

from simulator.engine import process, rank_builtins
from simulator.engine.actors import current
from simulator.engine.libraries import caller_is_user, is_library_file
from simulator.engine.patches import PatchSet, wrap
from simulator.engine.trace import capture, resolve, user_frame

__all__ = ['SharedStateWarning', 'reported', 'warn_shared']

# Installed by reported(); _install is defined below.
_patches = PatchSet(lambda: _install())


class SharedStateWarning(UserWarning):
    """A rank changed state that all ranks share (one process)."""


_EVERYONE = ('the simulator runs every rank in one process, so all ranks '
             'see this change (separate processes would not)')


def warn_shared(call, consequence=_EVERYONE):
    """Warn that the calling rank made ``call`` (a description such as
    ``"sys.setrecursionlimit(100)"``), which all ranks see."""
    context = current()
    if context is None:
        return
    filename, lineno, _ = user_frame(resolve(capture(2)))
    if is_library_file(filename):
        return      # a library on its own (pytest's capsys...), not the user
    warnings.warn_explicit(SharedStateWarning(
        'rank {} called {} at {}:{}: {}'.format(
            context.rank, call, filename, lineno, consequence)),
        SharedStateWarning, filename, lineno)


def _patch(owner, name, describe, users_only=False,
           consequence=_EVERYONE, private=None):
    """Report ``owner.name``'s calls in a rank (``users_only``: only the
    user's own; libraries make these for a moment and undo them, as
    ``timeit`` disables the collector while it times; ``private(context)``:
    the rank has its own, nothing to report)."""
    def make(original):
        def call(*args, **kwargs):
            context = current()
            if (not users_only or (context is not None and
                                   caller_is_user())) and \
                    (private is None or context is None or
                     not private(context)):
                warn_shared(describe(*args, **kwargs), consequence)
            return original(*args, **kwargs)
        return call
    return wrap(owner, name, make)


def _own_directory(context):
    return context.own_directory


def _arguments(name):
    def describe(*args):
        return '{}({})'.format(name, ', '.join(map(repr, args)))
    return describe


def _signal_in_rank(original):
    def signal_in_rank(signum, handler):
        if current() is None:
            return original(signum, handler)
        # Only the main thread may set handlers, and a rank is a thread:
        # the handler is not installed (it would act for every rank).
        warn_shared('signal.signal({}, {!r})'.format(signum, handler),
                    'a handler would act for every rank of the one process '
                    '(and only its main thread may set one): not installed')
        return signal.getsignal(signum)
    return signal_in_rank


def _report_builtin_values():
    rank_builtins.report_shared[0] = warn_shared
    return lambda: rank_builtins.report_shared.__setitem__(0, None)


def _install():
    sys_dict = process.real_sys_dict()
    return [
        _report_builtin_values(),
        _patch(os, 'chdir', lambda path: 'os.chdir({!r})'.format(path),
               private=_own_directory),
        _patch(os, 'umask', lambda mask: 'os.umask({:#o})'.format(mask),
               private=_own_directory),
        wrap(signal, 'signal', _signal_in_rank),
        _patch(sys_dict, 'setrecursionlimit', lambda limit: (
            'sys.setrecursionlimit({})'.format(limit))),
        _patch(sys_dict, 'setswitchinterval', lambda interval: (
            'sys.setswitchinterval({})'.format(interval))),
    ] + [_patch(owner, name, _arguments(owner.__name__ + '.' + name),
                users_only=True)
         for owner, name in ((gc, 'disable'), (gc, 'enable'),
                             (gc, 'set_threshold'), (gc, 'freeze'),
                             (os, 'putenv'), (os, 'unsetenv'))]


def reported():
    """While inside (nestable), process-wide changes made by a rank are
    reported with a :class:`SharedStateWarning`."""
    return _patches.held()
