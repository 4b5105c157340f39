"""Run as python -m ranked_pkg."""
import sys

from mpi4py import MPI

import ranked_pkg

rank = MPI.COMM_WORLD.Get_rank()
ranked_pkg.runs.append('main of rank {}'.format(rank))
sys.modules['__main__'].set_through_main = rank
MPI.COMM_WORLD.Barrier()
print('OUT rank={} runs={} doc={!r} name={} package={} set={}'.format(
    rank, ranked_pkg.runs, __doc__, __name__, __package__,
    globals().get('set_through_main')))
