"""A deadlock: every rank receives from its neighbour before sending."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
value = comm.recv(source=(rank + 1) % size, tag=4)
comm.send(value, dest=(rank - 1) % size, tag=4)
