"""Node layout of a communicator: intra-node and inter-node ranks.

Ranks sharing memory (``Split_type(COMM_TYPE_SHARED)``) form a node; nodes
are numbered in the order of their lowest rank, like ChainerMN does with
processor names.
"""
import numpy

__all__ = ['NodeLayout']


class NodeLayout:
    """intra/inter rank and size of this rank; owns the node communicator."""

    def __init__(self, mpi_comm, module):
        rank = mpi_comm.Get_rank()
        self.intra_comm = mpi_comm.Split_type(module.COMM_TYPE_SHARED,
                                              key=rank)
        self.intra_rank = self.intra_comm.Get_rank()
        self.intra_size = self.intra_comm.Get_size()
        leader = numpy.array([rank], dtype=numpy.int64)
        self.intra_comm.Bcast(leader, root=0)
        leaders = numpy.empty(mpi_comm.Get_size(), dtype=numpy.int64)
        mpi_comm.Allgather(leader, leaders)
        nodes = sorted(set(leaders.tolist()))
        self.inter_rank = nodes.index(int(leader[0]))
        self.inter_size = len(nodes)

    def free(self):
        """Release the node communicator."""
        if self.intra_comm is not None:
            self.intra_comm.Free()
            self.intra_comm = None
