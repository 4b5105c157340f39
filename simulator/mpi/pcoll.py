"""Persistent collectives (``Allreduce_init`` ... ``Barrier_init``), a
``Comm`` mixin.

Open MPI 5.0 serves them from coll/libnbc with the schedules of the
non-blocking calls, so each ``Start`` begins the matching ``I``
collective (its reduction order included); like those, Starts meet in
the order every rank makes them. The buffers are read again at every
Start, so a program may refill its send buffer between rounds. Unlike
MPI, which checks the arguments at init, the simulator checks them at
each Start (the error names the ``I`` call).
"""
from simulator.mpi.ops import OP_NAMES
from simulator.mpi.prequest import Prequest

__all__ = ['PersistentCollectives']

SUM = OP_NAMES['SUM']


def _init(comm, name, *args, **kwargs):
    call = getattr(comm, name)

    def start():
        return call(*args, **kwargs)
    return Prequest(start=start)


class PersistentCollectives:
    """``*_init`` persistent collectives; mixed into ``Comm``."""

    def Barrier_init(self, info=None):
        """A persistent Barrier."""
        return _init(self, 'Ibarrier')

    def Bcast_init(self, buf, root=0, info=None):
        """A persistent Bcast."""
        return _init(self, 'Ibcast', buf, root)

    def Gather_init(self, sendbuf, recvbuf, root=0, info=None):
        """A persistent Gather."""
        return _init(self, 'Igather', sendbuf, recvbuf, root)

    def Gatherv_init(self, sendbuf, recvbuf, root=0, info=None):
        """A persistent Gatherv."""
        return _init(self, 'Igatherv', sendbuf, recvbuf, root)

    def Scatter_init(self, sendbuf, recvbuf, root=0, info=None):
        """A persistent Scatter."""
        return _init(self, 'Iscatter', sendbuf, recvbuf, root)

    def Scatterv_init(self, sendbuf, recvbuf, root=0, info=None):
        """A persistent Scatterv."""
        return _init(self, 'Iscatterv', sendbuf, recvbuf, root)

    def Allgather_init(self, sendbuf, recvbuf, info=None):
        """A persistent Allgather."""
        return _init(self, 'Iallgather', sendbuf, recvbuf)

    def Allgatherv_init(self, sendbuf, recvbuf, info=None):
        """A persistent Allgatherv."""
        return _init(self, 'Iallgatherv', sendbuf, recvbuf)

    def Alltoall_init(self, sendbuf, recvbuf, info=None):
        """A persistent Alltoall."""
        return _init(self, 'Ialltoall', sendbuf, recvbuf)

    def Alltoallv_init(self, sendbuf, recvbuf, info=None):
        """A persistent Alltoallv."""
        return _init(self, 'Ialltoallv', sendbuf, recvbuf)

    def Alltoallw_init(self, sendbuf, recvbuf, info=None):
        """A persistent Alltoallw."""
        return _init(self, 'Ialltoallw', sendbuf, recvbuf)

    def Allreduce_init(self, sendbuf, recvbuf, op=SUM, info=None):
        """A persistent Allreduce."""
        return _init(self, 'Iallreduce', sendbuf, recvbuf, op)

    def Reduce_init(self, sendbuf, recvbuf, op=SUM, root=0, info=None):
        """A persistent Reduce."""
        return _init(self, 'Ireduce', sendbuf, recvbuf, op, root)

    def Reduce_scatter_block_init(self, sendbuf, recvbuf, op=SUM,
                                  info=None):
        """A persistent Reduce_scatter_block."""
        return _init(self, 'Ireduce_scatter_block', sendbuf, recvbuf, op)

    def Reduce_scatter_init(self, sendbuf, recvbuf, recvcounts=None,
                            op=SUM, info=None):
        """A persistent Reduce_scatter."""
        return _init(self, 'Ireduce_scatter', sendbuf, recvbuf, recvcounts,
                     op)
