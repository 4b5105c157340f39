"""Every rank asks mpi4py.MPI for a name it lacks: each process prints
its own traceback, naming the module as mpi4py does."""
from mpi4py import MPI

getattr(MPI, 'NO_SUCH_NAME_{}'.format(MPI.COMM_WORLD.Get_rank()))
