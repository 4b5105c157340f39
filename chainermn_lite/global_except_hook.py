"""Abort the whole MPI job when one rank dies of an uncaught exception.

Without it, a rank that raises exits while its peers wait forever in the
next collective. ``create_communicator`` installs the hook by default
(ChainerMN only does behind an environment variable); it aborts through
the communicator's own MPI module (``COMM_WORLD.Abort``), so it does the
same on any mpi4py-like implementation: on the simulator an exception in a
rank's main thread is reported by the simulator before any hook runs, and
one in a thread the rank started aborts the simulated job as it would a
real one. Turn it off with the environment variable
``CHAINERMN_LITE_NO_ABORT=1`` or ``remove_hook()``.
"""
import sys
import threading
import traceback

from chainermn_lite import _mpi

__all__ = ['add_hook', 'add_hook_if_enabled', 'remove_hook', 'abort_on_exit',
           'NO_ABORT_ENV']

NO_ABORT_ENV = 'CHAINERMN_LITE_NO_ABORT'


# The MPI module of the last communicator the hook was installed for
# (mpi4py's when add_hook() is called on its own).
_state = {'module': None}


def _world():
    """(COMM_WORLD, rank, size) of the hooked MPI, or (None, '?', '?')."""
    try:
        module = _state['module']
        if module is None:
            from mpi4py import MPI as module
        world = module.COMM_WORLD
        return world, world.Get_rank(), world.Get_size()
    except Exception:  # still print the original error
        return None, '?', '?'


def _abort(exc_type, exc_value, exc_tb, where):
    world, rank, size = _world()
    sys.stderr.write('\n[chainermn_lite] uncaught exception in rank {}/{} '
                     '({}); aborting the MPI job so that the other ranks '
                     'do not hang (set {}=1 to disable):\n'.format(
                         rank, size, where, NO_ABORT_ENV))
    sys.stderr.write(''.join(traceback.format_exception(
        exc_type, exc_value, exc_tb)))
    sys.stderr.flush()
    if world is not None and size != 1:
        world.Abort(1)


def abort_on_exit(stop):
    """A ``SystemExit`` is leaving the main program: with the hook
    installed, a non-zero status aborts the MPI job with that status, as
    ``python -m mpi4py`` does, since the other ranks would wait for this
    one forever (Python calls no excepthook for SystemExit, so launchers
    such as ``python -m chainermn_lite.compat`` call this)."""
    code = stop.code
    if sys.excepthook is not _sys_hook or code is None or code == 0:
        return
    status = code if isinstance(code, int) else 1
    world, rank, size = _world()
    if world is None or size == 1:
        return
    if not isinstance(code, int):
        sys.stderr.write('{}\n'.format(code))
    sys.stderr.write('[chainermn_lite] rank {}/{} exited with status {}; '
                     'aborting the MPI job so that the other ranks do not '
                     'hang (set {}=1 to disable)\n'.format(
                         rank, size, status, NO_ABORT_ENV))
    sys.stderr.flush()
    world.Abort(status)


def _sys_hook(exc_type, exc_value, exc_tb):
    if issubclass(exc_type, KeyboardInterrupt):
        return sys.__excepthook__(exc_type, exc_value, exc_tb)
    _abort(exc_type, exc_value, exc_tb, 'main thread')
    sys.__excepthook__(exc_type, exc_value, exc_tb)


def _thread_hook(args):
    if args.exc_type is SystemExit:
        return
    _abort(args.exc_type, args.exc_value, args.exc_traceback,
           'thread {}'.format(getattr(args.thread, 'name', '?')))


def add_hook():
    """Install the abort-on-exception hooks (sys and threading)."""
    sys.excepthook = _sys_hook
    threading.excepthook = _thread_hook


def remove_hook():
    """Restore Python's default exception hooks."""
    if sys.excepthook is _sys_hook:
        sys.excepthook = sys.__excepthook__
    if threading.excepthook is _thread_hook:
        threading.excepthook = threading.__excepthook__


def add_hook_if_enabled(mpi_comm):
    """Install the hooks for ``mpi_comm``'s MPI unless disabled."""
    if _mpi.env_flag(NO_ABORT_ENV):
        return False
    _state['module'] = _mpi.mpi_module_of(mpi_comm)
    add_hook()
    return True
