"""Kernels for bench_prediction.py (an unmodified mpi4py script, 2 ranks):
50 Allreduce of 4 MiB and 50 round trips of 8 bytes, timed with Wtime.
Rank 0 prints one line: ``KERNELS {json}``."""
import json

import numpy as np
from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    send = np.ones(1 << 20, np.float32)         # 4 MiB
    recv = np.empty_like(send)
    comm.Allreduce(send, recv)                  # warm up
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(50):
        comm.Allreduce(send, recv)
    allreduce = MPI.Wtime() - start
    buf = np.zeros(1, np.float64)               # 8 bytes
    peer = 1 - rank
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(50):
        if rank == 0:
            comm.Send(buf, peer)
            comm.Recv(buf, peer)
        else:
            comm.Recv(buf, peer)
            comm.Send(buf, peer)
    roundtrips = MPI.Wtime() - start
    if rank == 0:
        print('KERNELS ' + json.dumps({'allreduce': allreduce,
                                       'roundtrip': roundtrips}))


if __name__ == '__main__':
    main()
