"""Abort the whole MPI job when one rank dies of an uncaught exception.

Without it, a rank that raises exits while its peers wait forever in the
next collective. ``create_communicator`` installs the hook on real MPI by
default (ChainerMN only does behind an environment variable). Turn it off
with the environment variable ``CHAINERMN_LITE_NO_ABORT=1`` or
``remove_hook()``. It is never installed for a simulator communicator:
the simulator already turns one rank's failure into an error in the others.
"""
import sys
import threading
import traceback

from chainermn_lite import _mpi

__all__ = ['add_hook', 'add_hook_if_enabled', 'remove_hook',
           'NO_ABORT_ENV']

NO_ABORT_ENV = 'CHAINERMN_LITE_NO_ABORT'


def _abort(exc_type, exc_value, exc_tb, where):
    try:
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        rank, size = world.Get_rank(), world.Get_size()
    except Exception:  # still print the original error
        world, rank, size = None, '?', '?'
    sys.stderr.write('\n[chainermn_lite] uncaught exception in rank {}/{} '
                     '({}); aborting the MPI job so that the other ranks '
                     'do not hang (set {}=1 to disable):\n'.format(
                         rank, size, where, NO_ABORT_ENV))
    sys.stderr.write(''.join(traceback.format_exception(
        exc_type, exc_value, exc_tb)))
    sys.stderr.flush()
    if world is not None and size != 1:
        world.Abort(1)


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
    """Install the hooks for a real-MPI communicator unless disabled."""
    if _mpi.is_simulated(mpi_comm) or _mpi.env_flag(NO_ABORT_ENV):
        return False
    add_hook()
    return True
