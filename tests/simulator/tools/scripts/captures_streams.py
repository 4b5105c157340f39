"""Every rank captures its standard streams in StringIOs while all of
them write (print(), a printed traceback, an error the interpreter itself
reports), then puts them back as mpi4py's tests do (``sys.stderr =
sys.__stderr__``): each reads only what it wrote. One OUT line per rank."""
import io
import sys
import traceback

from mpi4py import MPI


class Noisy:
    def __del__(self):
        raise ValueError('unraisable in rank {}'.format(rank))


comm = MPI.COMM_WORLD
rank = comm.Get_rank()
sys.stdout, sys.stderr = out, err = io.StringIO(), io.StringIO()
comm.Barrier()
print('printed by rank', rank)
try:
    raise KeyError(rank)
except KeyError:
    traceback.print_exc()
Noisy()     # the interpreter prints "Exception ignored in..." to stderr
comm.Barrier()
sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
errors = [line for line in err.getvalue().splitlines()
          if line.startswith(('KeyError', 'ValueError'))]
print('OUT rank={} out={!r} errors={}'.format(rank, out.getvalue(), errors))
