"""Partitioned point-to-point communication (MPI 4, as Open MPI 5.0 has
it): ``Psend_init``/``Precv_init`` make persistent requests whose
buffers are cut into partitions; after ``Start`` the sender marks
partitions ready (``Pready``, ``Pready_range``, ``Pready_list``) and the
receiver may ask whether one has arrived (``Parrived``) before waiting
for all.

A send and a receive pair up once, in the order of their init calls per
(communicator, destination), matching source and tag as a receive does;
then the n-th Start of each side is the n-th round between them. A
partition the sender marks ready is copied at once (the sender may reuse
it when its request completes, which needs only its own partitions
ready); it arrives when the receiver has started that round. Waiting
uses the engine's conditions, so a receiver waiting for partitions
nobody will mark is reported as a deadlock, and one spinning on
``Parrived`` as stuck.
"""
import time

import numpy as np

from simulator.engine import activity
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, ERR_ARG,
                                     ERR_REQUEST, ERR_TRUNCATE, ERR_TYPE,
                                     PROC_NULL)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.request import Request

__all__ = ['Partitions', 'PartitionEnd', 'SendRound', 'RecvRound']


class PartitionEnd:
    """One side of a partitioned pair (a rank's Psend_init/Precv_init)."""

    def __init__(self, comm, sending, buf, partitions, peer, tag, where):
        s = comm._s
        self.comm, self.state, self.sending = comm, s, sending
        self.buf, self.partitions = buf, partitions
        self.peer, self.tag, self.where = peer, tag, where
        self.per = buf.count // partitions if partitions else 0
        self.partner = None         # the matched opposite end
        self.round = 0              # rounds started
        # a send's copies of its ready partitions: round -> (array, set)
        self.rounds = {}
        self.readied = set()        # this round's Pready partitions
        self.arrived = set()        # this round's partitions copied in

    # -- matching -----------------------------------------------------
    def _key(self):
        s = self.state
        dest = s.peers[self.peer] if self.sending else s.world_rank
        return s.ctx, dest

    def _fits(self, send):
        return (self.peer in (ANY_SOURCE, send.state.rank) and
                self.tag in (ANY_TAG, send.tag))

    def enlist(self):
        """Pair with the first unpaired opposite end, or wait for one."""
        if self.peer == PROC_NULL:
            return
        world = self.state.world
        with world.lock:
            world.version += 1      # a poller's wait may end: not stuck
            table = world.extensions.setdefault('mpi.partitioned', {})
            sends, recvs = table.setdefault(self._key(), ([], []))
            mine, theirs = (sends, recvs) if self.sending else \
                (recvs, sends)
            for other in theirs:
                send, recv = (self, other) if self.sending else \
                    (other, self)
                if recv._fits(send):
                    theirs.remove(other)
                    send.partner, recv.partner = recv, send
                    world.wake(recv.state.world_rank)
                    return
            mine.append(self)

    def withdraw(self):
        """Leave the unpaired list (the request was freed unpaired)."""
        world = self.state.world
        with world.lock:
            table = world.extensions.get('mpi.partitioned', {})
            lists = table.get(self._key(), ([], []))
            mine = lists[0] if self.sending else lists[1]
            if self in mine:
                mine.remove(self)

    # -- rounds -------------------------------------------------------
    def stage(self, i):
        """Copy send partition ``i`` of this round (lock held)."""
        if self.peer == PROC_NULL:
            return
        entry = self.rounds.get(self.round)
        if entry is None:
            entry = self.rounds[self.round] = (
                np.empty(self.buf.count, self.buf.data.dtype), set())
        lo = i * self.per
        entry[0][lo:lo + self.per] = self.buf.data[lo:lo + self.per]
        entry[1].add(i)

    def covering(self, j):
        """The send partitions that hold receive partition ``j``."""
        send = self.partner
        if send.partitions == self.partitions or not send.per:
            return [j] if send.partitions == self.partitions else \
                range(send.partitions)
        lo, hi = j * self.per, (j + 1) * self.per
        return range(lo // send.per, -(-hi // send.per))

    def has_arrived(self, j):
        """Receive partition ``j`` of this round is ready (lock held)."""
        if self.peer == PROC_NULL:
            return True
        if self.partner is None:
            return False
        entry = self.partner.rounds.get(self.round)
        return entry is not None and all(
            i in entry[1] for i in self.covering(j))

    def record(self, op):
        s = self.state
        return CallRecord(op, s.world_rank, self.peer, self.tag, s.name,
                          raw=capture(3))

    def check_partition(self, i, what):
        if not isinstance(i, int) or not 0 <= i < self.partitions:
            raise MPIException(ERR_ARG, '{}: partition {!r} is not in '
                               '0..{}'.format(what, i, self.partitions - 1))
        return i


class SendRound(Request):
    """A Start of a Psend_init: complete once every partition is
    ready."""

    def __init__(self, end):
        end.readied = set()
        super().__init__(activity.Condition(
            end.state.world, end.state.world_rank, end.record('Psend_init'),
            lambda: len(end.readied) == end.partitions))


class RecvRound(Request):
    """A Start of a Precv_init: complete once every partition has
    arrived; the data is copied in then."""

    def __init__(self, end):
        self._end = end
        end.arrived = set()
        super().__init__(activity.Condition(
            end.state.world, end.state.world_rank, end.record('Precv_init'),
            lambda: all(end.has_arrived(j) for j in range(end.partitions))))

    def _finish(self, status):
        end = self._end
        if end.peer == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return None
        send = end.partner
        with end.state.world.lock:
            staged, _ = send.rounds.pop(end.round)
        _deliver(end, staged)
        if status is not None:
            status._fill(send.state.rank, send.tag, staged.nbytes)
        return None


def _deliver(end, staged, lo=0, hi=None):
    data = end.buf.data
    if staged.size > end.buf.count:
        raise MPIException(ERR_TRUNCATE, '{}: {} elements sent into a '
                           'receive buffer of {}'.format(
                               end.where, staged.size, end.buf.count))
    if staged.dtype != data.dtype:
        raise MPIException(ERR_TYPE, '{}: {} sent into a {} receive buffer'
                           .format(end.where, staged.dtype, data.dtype))
    hi = staged.size if hi is None else min(hi, staged.size)
    data[lo:hi] = staged[lo:hi]
    end.buf.flush()


class Partitions:
    """``Pready``, ``Pready_range``, ``Pready_list`` and ``Parrived``;
    mixed into ``Prequest`` (the request's ``_part`` is its partitioned
    end, None for other persistent requests)."""

    _part = None

    def _end(self, what):
        end = self._part
        if end is None:
            raise MPIException(ERR_REQUEST, '{} on a request that is not '
                               'partitioned'.format(what))
        if self._current is None or self._done:
            raise MPIException(ERR_REQUEST, '{} on an inactive partitioned '
                               'request (Start it first)'.format(what))
        return end

    def Free(self):
        """Free the request; an unpaired partitioned one stops waiting for
        its partner."""
        end = self._part
        if end is not None and end.partner is None:
            end.withdraw()
        super().Free()

    def Pready(self, partition):
        """Mark send partition ``partition`` ready: it is sent."""
        self.Pready_list([partition])

    def Pready_range(self, partition_low, partition_high):
        """Mark partitions ``partition_low``..``partition_high``
        (inclusive) ready."""
        self.Pready_list(range(partition_low, partition_high + 1))

    def Pready_list(self, partitions):
        """Mark each of ``partitions`` ready."""
        end = self._end('Pready')
        if not end.sending:
            raise MPIException(ERR_REQUEST, 'Pready on a receive request')
        parts = [end.check_partition(i, 'Pready') for i in partitions]
        world = end.state.world
        with world.lock:
            for i in parts:
                if i in end.readied:
                    raise MPIException(ERR_ARG, 'Pready: partition {} is '
                                       'already ready'.format(i))
            world.version += 1
            for i in parts:
                end.readied.add(i)
                end.stage(i)
            if end.partner is not None:
                world.wake(end.partner.state.world_rank)

    def Parrived(self, partition):
        """Whether receive partition ``partition`` has arrived (its data
        is then in the buffer)."""
        end = self._end('Parrived')
        if end.sending:
            raise MPIException(ERR_REQUEST, 'Parrived on a send request')
        j = end.check_partition(partition, 'Parrived')
        if j in end.arrived:
            return True
        probe = activity.Condition(end.state.world, end.state.world_rank,
                                   end.record('Parrived'),
                                   lambda: end.has_arrived(j))
        if end.peer == PROC_NULL:
            return True
        if not activity.test(probe):
            # A Parrived loop spins in one process of real MPI; here it
            # would hold the GIL from the sender's thread for a whole
            # switch interval (5 ms) per call
            time.sleep(0)
            return False
        staged, _ = end.partner.rounds[end.round]
        _deliver(end, staged, j * end.per, (j + 1) * end.per)
        end.arrived.add(j)
        return True
