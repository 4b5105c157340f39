"""Neighbourhood collectives (``Neighbor_allgather``...,
``Ineighbor_*``, ``Neighbor_*_init`` and the object forms), a
``Topocomm`` mixin.

Each call is one collective of the communicator (the engine's slot:
deadlock reports, virtual time and mismatch checks as for ``Alltoall``).
Every rank brings its out-neighbours and a copy of the blocks it sends;
each rank then fills its receive blocks from its in-neighbours' blocks.
Which block feeds which follows MPI: on a Cartesian grid the block a rank
sends to its +1 neighbour along a dimension lands in that neighbour's -1
slot (and the reverse), so a periodic dimension of size 1 or 2 pairs
them right; on graphs, the k-th edge from a rank to another feeds the
k-th in-edge from it, as in-order matching of messages does. Open MPI
5.0's ``Ineighbor_*`` and ``Neighbor_*_init`` match in order on grids
too (on a periodic dimension of size 1 or 2 the -1 slot gets the
neighbour's -1 block), and so do the simulator's. PROC_NULL slots
(non-periodic edges) are left as they are.
"""
from simulator.errors import CollectiveMismatchError
from simulator.mpi import pickling
from simulator.mpi.coll import (_CollectiveRequest, _copy, _guard, _run,
                                _start)
from simulator.mpi.constants import PROC_NULL
from simulator.mpi.msgspec import WBuffer, parse_send, parse_vector
from simulator.mpi.pcoll import _init
from simulator.mpi.topology import kth_edge

__all__ = ['NeighborCollectives']


def _feeds(comm, op, slot, st):
    """(in-slot, source rank, source's out-slot) for each real in-edge
    of this rank."""
    topo = comm._topo
    ins, _ = topo.neighbours(st.rank)
    # Open MPI's non-blocking and persistent forms (coll/libnbc) match
    # the messages between two ranks in order, on grids too
    in_order = op.startswith('I')

    def outs_of(src):
        return st.rank, slot.args[src][1]
    for i, src in enumerate(ins):
        if src == PROC_NULL:
            continue
        j = kth_edge(ins, i, outs_of) if in_order else \
            topo.source_slot(ins, i, outs_of)
        if j is None or j >= len(slot.args[src][1]):
            raise CollectiveMismatchError(
                '{} on {}: rank {} expects a message from rank {} (its '
                'in-neighbour {}), which has no matching out-neighbour '
                'edge to it'.format(op, st.name, st.rank, src, i))
        yield i, src, j


def _exchange(comm, op, blocks, deliver, recv=None, watch=None):
    """Run one neighbourhood collective: ``blocks`` are this rank's send
    blocks (one per out-neighbour, or the one for all of an allgather);
    ``deliver(i, block, src)`` writes in-slot ``i``; ``recv`` is flushed
    once all are written; ``watch`` is the send memory a non-blocking
    call checks is unchanged when it completes."""
    _, outs = comm._topo.neighbours(comm._s.rank)
    gathers = 'allgather' in op

    def finish(st, slot):
        for i, src, j in _feeds(comm, op, slot, st):
            sent = slot.args[src][0]
            deliver(i, sent[0] if gathers else sent[j], src)
    after = None if recv is None else lambda _: recv.flush()
    # blocks first: virtual time counts the bytes of an argument's head
    if op.startswith('I'):
        # non-blocking: the blocks are copies already, nothing to snapshot
        s, slot, record = _start(comm, op, (), (blocks, outs))
        return _CollectiveRequest(s, slot, record, finish, after=after,
                                  guard=_guard(watch))
    return _run(comm, op, (), (blocks, outs), finish, after=after)


def _degrees(comm):
    ins, outs = comm._topo.neighbours(comm._s.rank)
    return len(ins), len(outs)


def _vector(spec, n, where, writable=False, vector=False):
    return parse_vector(spec, n, where, writable=writable, packed=True,
                        vector=vector)


def _allgather(comm, op, sendbuf, recvbuf):
    indeg, _ = _degrees(comm)
    recv = _vector(recvbuf, indeg, '{} receive buffer'.format(op), True,
                   op.endswith('v'))
    send = parse_send(sendbuf, '{} send buffer'.format(op))
    block = send.head().copy()

    def deliver(i, data, src):
        _copy(recv.part(i), data, op, comm._s.name, comm._s.rank, src)
    return _exchange(comm, op, [block], deliver, recv, send.data)


def _alltoall(comm, op, sendbuf, recvbuf):
    indeg, outdeg = _degrees(comm)
    vector = op.endswith('v')
    recv = _vector(recvbuf, indeg, '{} receive buffer'.format(op), True,
                   vector)
    send = _vector(sendbuf, outdeg, '{} send buffer'.format(op),
                   vector=vector)
    blocks = [send.part(j).copy() for j in range(outdeg)]

    def deliver(i, data, src):
        _copy(recv.part(i), data, op, comm._s.name, comm._s.rank, src)
    return _exchange(comm, op, blocks, deliver, recv, send.data)


def _alltoallw(comm, op, sendbuf, recvbuf):
    indeg, outdeg = _degrees(comm)
    recv = WBuffer(recvbuf, indeg, '{} receive buffer'.format(op),
                   writable=True)
    send = WBuffer(sendbuf, outdeg, '{} send buffer'.format(op))
    blocks = [send.part(j).data.copy() for j in range(outdeg)]

    def deliver(i, data, src):
        dst = recv.part(i)
        _copy(dst.data, data, op, comm._s.name, comm._s.rank, src)
        dst.flush()
    return _exchange(comm, op, blocks, deliver, watch=send.raw)


class NeighborCollectives:
    """Neighbourhood collectives; mixed into ``Topocomm``."""

    def Neighbor_allgather(self, sendbuf, recvbuf):
        """Every in-neighbour's block, in in-neighbour order."""
        _allgather(self, 'Neighbor_allgather', sendbuf, recvbuf)

    def Neighbor_allgatherv(self, sendbuf, recvbuf):
        """Neighbor_allgather with per-neighbour counts/displacements."""
        _allgather(self, 'Neighbor_allgatherv', sendbuf, recvbuf)

    def Neighbor_alltoall(self, sendbuf, recvbuf):
        """Block j goes to out-neighbour j; block i comes from
        in-neighbour i."""
        _alltoall(self, 'Neighbor_alltoall', sendbuf, recvbuf)

    def Neighbor_alltoallv(self, sendbuf, recvbuf):
        """Neighbor_alltoall with per-neighbour counts/displacements."""
        _alltoall(self, 'Neighbor_alltoallv', sendbuf, recvbuf)

    def Neighbor_alltoallw(self, sendbuf, recvbuf):
        """Neighbor_alltoall with per-neighbour datatypes."""
        _alltoallw(self, 'Neighbor_alltoallw', sendbuf, recvbuf)

    def Ineighbor_allgather(self, sendbuf, recvbuf):
        """Non-blocking Neighbor_allgather."""
        return _allgather(self, 'Ineighbor_allgather', sendbuf, recvbuf)

    def Ineighbor_allgatherv(self, sendbuf, recvbuf):
        """Non-blocking Neighbor_allgatherv."""
        return _allgather(self, 'Ineighbor_allgatherv', sendbuf, recvbuf)

    def Ineighbor_alltoall(self, sendbuf, recvbuf):
        """Non-blocking Neighbor_alltoall."""
        return _alltoall(self, 'Ineighbor_alltoall', sendbuf, recvbuf)

    def Ineighbor_alltoallv(self, sendbuf, recvbuf):
        """Non-blocking Neighbor_alltoallv."""
        return _alltoall(self, 'Ineighbor_alltoallv', sendbuf, recvbuf)

    def Ineighbor_alltoallw(self, sendbuf, recvbuf):
        """Non-blocking Neighbor_alltoallw."""
        return _alltoallw(self, 'Ineighbor_alltoallw', sendbuf, recvbuf)

    def Neighbor_allgather_init(self, sendbuf, recvbuf, info=None):
        """A persistent Neighbor_allgather."""
        return _init(self, 'Ineighbor_allgather', sendbuf, recvbuf)

    def Neighbor_allgatherv_init(self, sendbuf, recvbuf, info=None):
        """A persistent Neighbor_allgatherv."""
        return _init(self, 'Ineighbor_allgatherv', sendbuf, recvbuf)

    def Neighbor_alltoall_init(self, sendbuf, recvbuf, info=None):
        """A persistent Neighbor_alltoall."""
        return _init(self, 'Ineighbor_alltoall', sendbuf, recvbuf)

    def Neighbor_alltoallv_init(self, sendbuf, recvbuf, info=None):
        """A persistent Neighbor_alltoallv."""
        return _init(self, 'Ineighbor_alltoallv', sendbuf, recvbuf)

    def Neighbor_alltoallw_init(self, sendbuf, recvbuf, info=None):
        """A persistent Neighbor_alltoallw."""
        return _init(self, 'Ineighbor_alltoallw', sendbuf, recvbuf)

    def neighbor_allgather(self, sendobj):
        """Every in-neighbour's object (None for PROC_NULL)."""
        indeg, _ = _degrees(self)
        out = [None] * indeg

        def deliver(i, data, src):
            out[i] = pickling.loads(data)
        _exchange(self, 'neighbor_allgather', [pickling.dumps(sendobj)],
                  deliver)
        return out

    def neighbor_alltoall(self, sendobj):
        """Item j to out-neighbour j; item i of the result from
        in-neighbour i (None for PROC_NULL)."""
        indeg, outdeg = _degrees(self)
        # mpi4py reads None as one None per out-neighbour
        items = [None] * outdeg if sendobj is None else list(sendobj)
        if len(items) != outdeg:
            raise ValueError('neighbor_alltoall on {}: expecting {} items '
                             '(one per out-neighbour), got {}'.format(
                                 self._s.name, outdeg, len(items)))
        out = [None] * indeg

        def deliver(i, data, src):
            out[i] = pickling.loads(data)
        _exchange(self, 'neighbor_alltoall',
                  [pickling.dumps(x) for x in items], deliver)
        return out
