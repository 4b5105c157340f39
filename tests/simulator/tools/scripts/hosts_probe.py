"""Prints how many hosts the world spans, how many ranks share mine, and
whether every way of asking the host's name agrees."""
import os
import platform
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
names = comm.allgather(MPI.Get_processor_name())
shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
mine = {MPI.Get_processor_name(), socket.gethostname(), os.uname().nodename,
        platform.node(), platform.uname().node}
print('OUT rank={} hosts={} local={} names_agree={}'.format(
    comm.Get_rank(), len(set(names)), shared.Get_size(), len(mine) == 1))
