"""Each rank's helper threads raise; threading's default hook prints each
traceback, which starts at threading's own frame, and the run ends well."""
import threading

from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()


def fail():
    raise ValueError('from a thread of rank {}'.format(rank))


class Failing(threading.Thread):
    def run(self):
        raise KeyError(rank)


for thread in (threading.Thread(target=fail), Failing()):
    thread.start()
    thread.join()
MPI.COMM_WORLD.Barrier()
