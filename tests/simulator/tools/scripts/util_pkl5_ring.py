"""mpi4py.util.pkl5: objects with large NumPy arrays travel as pickle
protocol 5 out-of-band buffers (a header, then the payload messages);
mpi4py.util.dtlib maps NumPy dtypes to MPI datatypes and back."""
import numpy as np
from mpi4py import MPI
from mpi4py.util import dtlib, pkl5

comm = pkl5.Intracomm(MPI.COMM_WORLD)
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
payload = {'rank': rank, 'data': np.arange(50000, dtype='i') + rank}
request = comm.isend(payload, right, tag=7)
status = MPI.Status()
got = comm.recv(None, left, 7, status)
request.wait()
assert status.Get_source() == left
shared = comm.bcast(np.full(70000, 3.5) if rank == 0 else None, root=0)
gathered = comm.allgather((rank, np.ones(40000, 'b') * rank))
print('OUT rank={} from={} sum={} bcast={} gathered={}'.format(
    rank, got['rank'], int(got['data'].sum()), float(shared.sum()),
    [(r, int(a.sum())) for r, a in gathered]), flush=True)
record = dtlib.from_numpy_dtype(np.dtype([('a', 'i'), ('b', 'd')]))
print('OUT rank={} dtlib={} size={}'.format(
    rank, dtlib.to_numpy_dtype(record), record.Get_size()), flush=True)
