"""POSIX record locks held per rank, as per process.

A record lock (``fcntl.lockf``, or ``fcntl.fcntl`` with ``F_SETLK``,
``F_SETLKW``, ``F_GETLK``) belongs to the process that takes it: under
``mpiexec`` a rank that locks a file shuts the other ranks out, while the
rank threads of one process would all hold the lock at once. While worlds
run, a rank's record-lock calls use Linux's open-file-description locks
(``F_OFD_SETLK``...) instead, which conflict between separately opened
files as record locks conflict between processes. (``fcntl.flock`` locks
belong to the open file already.)

What still differs, within one rank: its lock through one open of a file
conflicts with its own lock through another open of the same file (a
process's locks would merge), and a lock is released when its open file
is closed, not when any descriptor the process has of the file is. Where
the platform has no such locks, the calls are the process's.
"""
import fcntl
import struct

from simulator.engine.actors import current
from simulator.engine.patches import wrap

__all__ = ['install']

_FLOCK = 'hhqqi4x'      # struct flock: type, whence, start, len, pid
_KINDS = {fcntl.LOCK_UN: fcntl.F_UNLCK, fcntl.LOCK_SH: fcntl.F_RDLCK,
          fcntl.LOCK_EX: fcntl.F_WRLCK}
_OWN = {fcntl.F_SETLK: getattr(fcntl, 'F_OFD_SETLK', None),
        fcntl.F_SETLKW: getattr(fcntl, 'F_OFD_SETLKW', None),
        fcntl.F_GETLK: getattr(fcntl, 'F_OFD_GETLK', None)}


def _fcntl_for(real):
    def fcntl_(fd, cmd, arg=0, /):
        own = _OWN.get(cmd) if current() is not None else None
        if own is None or not isinstance(arg, (bytes, bytearray)) or \
                len(arg) != struct.calcsize(_FLOCK):
            return real(fd, cmd, arg)
        kind, whence, start, length, _ = struct.unpack(_FLOCK, arg)
        # An open-file-description lock has no owning process: pid 0.
        return real(fd, own, struct.pack(_FLOCK, kind, whence, start,
                                         length, 0))
    return fcntl_


def _lockf_for(real, set_lock):
    def lockf(fd, cmd, len=0, start=0, whence=0, /):  # noqa: A002
        kind = _KINDS.get(cmd & ~fcntl.LOCK_NB)
        if current() is None or kind is None:
            return real(fd, cmd, len, start, whence)
        wait = not cmd & fcntl.LOCK_NB and kind != fcntl.F_UNLCK
        set_lock(fd, fcntl.F_SETLKW if wait else fcntl.F_SETLK,
                 struct.pack(_FLOCK, kind, whence, start, len, 0))
    return lockf


def install():
    """Record locks per rank while installed; returns the undo function
    (nothing to undo where the platform lacks open-file locks)."""
    if None in _OWN.values():
        return lambda: None
    undo_fcntl = wrap(fcntl, 'fcntl', _fcntl_for)
    set_lock = fcntl.fcntl
    undo_lockf = wrap(fcntl, 'lockf', lambda real: _lockf_for(real,
                                                              set_lock))

    def undo():
        undo_lockf()
        undo_fcntl()
    return undo
