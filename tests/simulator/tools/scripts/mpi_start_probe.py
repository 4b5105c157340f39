"""MPI's start as mpi4py.rc (or MPI4PY_RC_* variables) asks for it, in
the way argv[1] names; prints the thread level and initialization each
rank sees, then ends as asked (exit status compared with mpiexec's)."""
import os
import sys
import threading

import mpi4py

how = sys.argv[1]
if how.startswith('level='):
    mpi4py.rc.thread_level = how[len('level='):]
elif how == 'no-threads':
    mpi4py.rc.threads = False
elif how == 'env-funneled':
    os.environ['MPI4PY_RC_THREAD_LEVEL'] = 'funneled'
elif how.startswith('init') or how == 'use-before-init':
    mpi4py.rc.initialize = False
elif how == 'rank-0-funneled-fatal':
    # each process has its own options: rank 1 keeps the defaults
    if os.environ['OMPI_COMM_WORLD_RANK'] == '0':
        mpi4py.rc(thread_level='funneled', errors='fatal')

from mpi4py import MPI  # noqa: E402 -- after the options, as mpi4py asks

seen = [('before', MPI.Is_initialized())]
if how == 'use-before-init':
    MPI.COMM_WORLD.Get_rank()       # Open MPI aborts the job: 14
if how.startswith('init'):
    if how.startswith('init-thread-'):
        seen.append(('provided',
                     MPI.Init_thread(int(how[len('init-thread-'):]))))
    else:
        MPI.Init()
    if how == 'init-twice':
        try:
            MPI.Init()
        except MPI.Exception as error:
            seen.append(('again', error.Get_error_class() == MPI.ERR_OTHER))
worker = []
thread = threading.Thread(target=lambda: worker.append(MPI.Is_thread_main()))
thread.start()
thread.join()
seen += [('initialized', MPI.Is_initialized()), ('level', MPI.Query_thread()),
         ('main', MPI.Is_thread_main()), ('worker_main', worker[0]),
         ('info', MPI.INFO_ENV.Get('thread_level')),
         ('rc', mpi4py.rc.thread_level, mpi4py.rc.errors),
         ('fatal', [c.Get_errhandler() == MPI.ERRORS_ARE_FATAL
                    for c in (MPI.COMM_WORLD, MPI.COMM_SELF)]
          if MPI.Is_initialized() else None)]
print('OUT rank={} {}'.format(MPI.COMM_WORLD.Get_rank(), seen))
if how.startswith('init') and how != 'init-no-finalize':
    MPI.Finalize()      # (not done at exit: rc.initialize is false)
