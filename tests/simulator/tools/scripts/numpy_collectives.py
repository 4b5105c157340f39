"""An unmodified mpi4py script using NumPy buffers and its arguments."""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
length = int(sys.argv[1]) if len(sys.argv) > 1 else 3
mine = np.arange(length, dtype=np.float64) * (rank + 1)
total = np.zeros(length)
comm.Allreduce(mine, total, op=MPI.SUM)
table = np.zeros((size, length)) if rank == 0 else None
comm.Gather(mine, table, root=0)
flag = np.array([rank == size - 1], dtype=bool)
comm.Bcast(flag, root=size - 1)
print('OUT rank={} args={} total={} bcast={}'.format(
    rank, sys.argv[1:], total.tolist(), bool(flag[0])), flush=True)
if rank == 0:
    print('OUT gathered_sum={}'.format(float(table.sum())), flush=True)
