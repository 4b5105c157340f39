"""Run as ``python app_dir`` (or zipped, ``python app.zip``): python runs
this ``__main__`` with the directory or zip file as sys.path[0]."""
import os
import sys

from mpi4py import MPI

print('OUT rank={} argv={} path0={} file={} name={} package={!r} '
      'spec={}'.format(MPI.COMM_WORLD.Get_rank(), sys.argv,
                       os.path.basename(sys.path[0]),
                       os.path.relpath(__file__, sys.path[0]), __name__,
                       __package__, __spec__.name), flush=True)
