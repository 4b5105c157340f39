"""A program that reports its own uncaught exceptions (argv[1]: 'hook'
prints one line, 'broken' is a hook that fails, 'chainermn' installs
chainermn_lite's abort hook); rank 1 raises, rank 0 ends (a rank left
waiting for a failed one hangs Open MPI 5)."""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
how = sys.argv[1]


def hook(kind, value, tb):
    print('OUT rank={} hook {}: {}'.format(rank, kind.__name__, value),
          flush=True)
    if how == 'broken':
        raise RuntimeError('the hook failed')


if how == 'chainermn':
    import chainermn_lite
    chainermn_lite.create_communicator('naive')
else:
    sys.excepthook = hook
comm.Barrier()
if rank == 1:
    raise ValueError('deliberate in rank 1')
