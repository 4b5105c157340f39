"""Rank 1 raises; the others wait in a collective (they must not hang)."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.Get_rank() == 1:
    raise RuntimeError('deliberate failure in this rank')
comm.Barrier()
print('OUT rank={} passed the barrier'.format(comm.Get_rank()))
