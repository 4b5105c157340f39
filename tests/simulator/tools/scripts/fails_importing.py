"""Rank 0 imports a module of its own that raises; the other ranks turn
a warning into an error: tracebacks a process prints without frames of
the import system or of warnings' machinery."""
import warnings

from mpi4py import MPI

if MPI.COMM_WORLD.rank == 0:
    import raises_on_import  # noqa: F401
else:
    warnings.simplefilter('error')
    warnings.warn('deliberate warning in rank {}'.format(
        MPI.COMM_WORLD.rank))
