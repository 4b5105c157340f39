"""Prints how many hosts the world spans and how many ranks share mine."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
names = comm.allgather(MPI.Get_processor_name())
shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
print('OUT rank={} hosts={} local={}'.format(
    comm.Get_rank(), len(set(names)), shared.Get_size()))
