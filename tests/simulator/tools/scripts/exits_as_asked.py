"""Rank 1 (rank 0 for an exception) ends the way argv[1] names; the
launcher's exit status must be mpiexec's."""
import os
import sys
import threading

from mpi4py import MPI

comm = MPI.COMM_WORLD
how = sys.argv[1]
rank = comm.Get_rank()
if how.startswith('bad-lock'):
    # a window's calls go to the window's handler (mpi4py gives it
    # rc.errors' one at Create, as to a communicator)
    window = MPI.Win.Create(bytearray(8), comm=comm)
    if how == 'bad-lock-fatal-window':
        window.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    if rank == 1:
        try:
            window.Lock(99)
        except MPI.Exception as error:
            print('OUT rank={} caught {}'.format(rank, error), flush=True)
    comm.Barrier()
    window.Free()
target = comm
if how == 'bad-send-dup-of-fatal-world':
    comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    target = comm.Dup()     # mpi4py gives it rc.errors' handler
if rank == 1:
    if how in ('exit-3', 'exit-3-while-others-wait'):
        sys.exit(3)
    if how == 'exit-300':
        sys.exit(300)           # a status is one byte: 44
    if how == 'exit-minus-1':
        sys.exit(-1)            # 255
    if how == 'exit-message':
        sys.exit('stopping here')
    if how == 'os-exit-5':
        os._exit(5)
    if how == 'os-exit-0':
        os._exit(0)             # without Finalize: "exiting improperly", 1
    if how == 'finalize-then-os-exit-0':
        MPI.Finalize()
        os._exit(0)
    if how == 'os-exit-6-in-a-thread':
        # the whole process ends: the main thread prints nothing more
        worker = threading.Thread(target=os._exit, args=(6,))
        worker.start()
        worker.join()
    if how == 'excepthook-os-exit-9':
        sys.excepthook = lambda *exc_info: os._exit(9)
        raise ValueError('handed to the hook')
    if how == 'abort-0':
        comm.Abort(0)           # mpiexec's status is the error code: 0
    if how.startswith('bad-send'):
        # MPI_ERR_RANK: caught under ERRORS_RETURN (mpi4py's default);
        # under a fatal handler the job aborts with status 6
        if how == 'bad-send-fatal-world':
            comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        try:
            target.send('x', dest=99)
        except MPI.Exception as error:
            print('OUT rank={} caught {}'.format(rank, error), flush=True)
    if how == 'abort-7':
        comm.Abort(7)
    if how == 'finalize-then-exit-3':
        MPI.Finalize()
        sys.exit(3)             # nothing left to abort with: status 3
    if how == 'call-after-finalize':
        MPI.Finalize()
        comm.Get_rank()         # Open MPI aborts the job: 14
    if how == 'exception-while-a-thread-waits':
        # at rank 0's exception, this process waits for its thread at exit
        # and mpiexec for this process: the job hangs there
        threading.Thread(target=threading.Event().wait).start()
if rank == 0:
    if how in ('exception', 'exception-while-a-thread-waits'):
        raise ValueError('deliberate')
    if how == 'keyboard-interrupt':
        raise KeyboardInterrupt
if how in ('abort-7', 'exit-3-while-others-wait'):
    comm.Barrier()
print('OUT rank={} done'.format(rank))
