"""Rank 1 closes its standard output: its own later prints fail, as on a
closed file; the other ranks keep printing."""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.rank == 1:
    sys.stdout.close()
comm.Barrier()
try:
    print('OUT rank={} printed after the close'.format(comm.rank))
    sys.stdout.flush()
except ValueError as error:
    sys.stderr.write('rank {}: {}\n'.format(comm.rank, error))
comm.Barrier()
