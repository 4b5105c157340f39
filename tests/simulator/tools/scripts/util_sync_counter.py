"""mpi4py.util.sync over RMA windows: a Mutex guards a read-modify-write
of a number in rank 0's window memory, a Semaphore bounds how many ranks
are inside, a Counter hands out tickets, Sequential orders the output."""
import numpy as np
from mpi4py import MPI
from mpi4py.util import sync

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = MPI.Win.Allocate(8 if rank == 0 else 0, 8, comm=comm)
if rank == 0:
    np.frombuffer(total.tomemory(), dtype='q')[:] = 0
comm.Barrier()
mutex = sync.Mutex(comm=comm)
gate = sync.Semaphore(2, comm=comm)
tickets = sync.Counter(100, comm=comm)
for _ in range(5):
    with gate, mutex:
        # Not atomic by itself: the mutex makes the Get + Put one step.
        value = np.zeros(1, 'q')
        total.Lock(0, MPI.LOCK_SHARED)
        total.Get(value, 0)
        total.Flush(0)
        total.Put(value + rank + 1, 0)
        total.Unlock(0)
mine = sorted(comm.allgather(next(tickets)))
comm.Barrier()
value = np.zeros(1, 'q')
total.Lock(0, MPI.LOCK_SHARED)
total.Get(value, 0)
total.Unlock(0)
with sync.Sequential(comm):
    print('OUT rank={} total={} expected={} tickets={}'.format(
        rank, int(value[0]), 5 * size * (size + 1) // 2, mine), flush=True)
tickets.free()
gate.free()
mutex.free()
total.Free()
