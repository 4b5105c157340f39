"""``Comm``: mpi4py's communicator API over a simulated world.

Each rank holds its own ``Comm`` objects, each over the rank's
:class:`~simulator.engine.communicator.CommState`; ranks of one
communicator share a context id (``ctx``) and a group (comm rank -> world
rank). Object methods (lowercase) pickle like mpi4py; buffer methods
(capitalised) take mpi4py buffer specs.
"""
from simulator.engine import collectives as coll
from simulator.engine.actors import current_actor
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture
from simulator.errors import AbortError
from simulator.mpi.coll import Collectives
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, COMM_TYPE_SHARED,
                                     CONGRUENT, ERR_COMM, ERR_RANK,
                                     ERR_ROOT, ERR_TAG, IDENT, PROC_NULL,
                                     SIMILAR, UNDEFINED, UNEQUAL)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.handles import ERRORS_RETURN
from simulator.mpi.p2p import PointToPoint
from simulator.mpi.scan import Scans

__all__ = ['Comm', 'Intracomm', 'NullComm']


class Comm(PointToPoint, Collectives, Scans):
    """A communicator, with mpi4py's method names and argument order.

    Point-to-point methods come from :class:`~simulator.mpi.p2p.
    PointToPoint`, collectives from :class:`~simulator.mpi.coll.
    Collectives` and :class:`~simulator.mpi.scan.Scans`; identity, argument
    checks and construction (Split, Dup) are here.
    """

    __module__ = 'simulator.mpi'

    def __init__(self, state=None):
        self._state = state

    @property
    def _s(self):
        state = self._state
        if state is None:
            raise MPIException(ERR_COMM, 'operation on COMM_NULL')
        if state.freed:
            raise MPIException(ERR_COMM, '{} was freed'.format(state.name))
        return state

    # -- identity -------------------------------------------------------
    def Get_rank(self):  # noqa: N802
        """This rank in the communicator."""
        return self._s.rank

    def Get_size(self):  # noqa: N802
        """Number of ranks in the communicator."""
        return len(self._s.group)

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_name(self):  # noqa: N802
        """The communicator's name (``MPI_COMM_WORLD``...; '' for one
        made by Split or Dup and never named, as in Open MPI)."""
        return self._s.title

    def Set_name(self, name):  # noqa: N802
        """Rename the communicator (this rank's handle)."""
        self._s.name = self._s.title = str(name)

    name = property(Get_name, Set_name)

    def Set_errhandler(self, errhandler):  # noqa: N802
        """Accepted; simulated errors always raise MPI.Exception."""
        self._s  # noqa: B018 -- raises on COMM_NULL or a freed comm

    def Get_errhandler(self):  # noqa: N802
        """Errors raise exceptions (mpi4py's default)."""
        return ERRORS_RETURN

    def Is_inter(self):  # noqa: N802
        """Always False: only intracommunicators are simulated."""
        return False

    def Is_intra(self):  # noqa: N802
        """Always True."""
        return True

    def Compare(self, comm):  # noqa: N802
        """IDENT (same handle), CONGRUENT (same group, same order),
        SIMILAR (same members, another order) or UNEQUAL."""
        a, b = self._s, comm._s
        if a is b:
            return IDENT
        if a.group == b.group:
            return CONGRUENT
        return SIMILAR if sorted(a.group) == sorted(b.group) else UNEQUAL

    def __eq__(self, other):
        if not isinstance(other, Comm):
            return NotImplemented
        return self._state is other._state

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return id(self._state)

    def __bool__(self):
        return self._state is not None

    def __repr__(self):
        state = self._state
        if state is None:
            return '<simulator.mpi.Comm COMM_NULL>'
        return '<simulator.mpi.Comm {} rank {}/{}>'.format(
            state.name, state.rank, len(state.group))

    def Free(self):  # noqa: N802
        """Release the communicator; the handle becomes COMM_NULL."""
        s = self._s
        if s.ctx in (('world',),) or s.ctx[0] == 'self':
            raise MPIException(ERR_COMM, 'cannot free {}'.format(s.name))
        s.freed = True
        self._state = None

    def Abort(self, errorcode=0):  # noqa: N802
        """Stop the whole world at once, from any thread of any rank:
        AbortError here, and in every rank that waits."""
        s = self._s
        error = AbortError('rank {} called Abort({}) on {}'.format(
            s.world_rank, errorcode, s.name), errorcode=errorcode)
        s.world.fail(current_actor(), error)
        raise error

    # -- checks ---------------------------------------------------------
    def _peer(self, peer, what, allow_any):
        size = len(self._s.group)
        if peer == PROC_NULL or (allow_any and peer == ANY_SOURCE):
            return peer
        if not isinstance(peer, int) or not 0 <= peer < size:
            raise MPIException(ERR_RANK, '{} rank {!r} is not in {} of '
                               'size {}'.format(what, peer, self._s.name,
                                                size))
        return peer

    def _tag(self, tag, allow_any):
        if allow_any and tag == ANY_TAG:
            return tag
        if not isinstance(tag, int) or tag < 0:
            raise MPIException(ERR_TAG, 'tag {!r} on {} must be an int '
                               '>= 0'.format(tag, self._s.name))
        return tag

    def _root(self, root):
        size = len(self._s.group)
        if not isinstance(root, int) or not 0 <= root < size:
            raise MPIException(ERR_ROOT, 'root {!r} is not a rank of {} '
                               '(size {})'.format(root, self._s.name, size))
        return root

    # -- communicator construction --------------------------------------
    def _new(self, state):
        return type(self)._plain()(state)

    @classmethod
    def _plain(cls):
        return Intracomm

    def _split(self, op, color, key):
        s = self._s
        seq = s.next_seq()
        record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                            raw=capture(3))
        if color != UNDEFINED and (not isinstance(color, int) or
                                   color < 0):
            raise MPIException(ERR_COMM, 'Split color must be an int >= 0 '
                               'or UNDEFINED, got {!r}'.format(color))

        def combine(args):
            groups = {}
            for rank, (c, k) in enumerate(args):
                if c != UNDEFINED:
                    groups.setdefault(c, []).append((k, rank))
            placement = {}
            for c, members in groups.items():
                members.sort()
                world_ranks = [s.group[r] for _, r in members]
                for new_rank, (_, r) in enumerate(members):
                    placement[r] = (c, world_ranks, new_rank)
            return placement

        if s.world.clock is not None:
            s.world.clock.stamp(record)
        slot = coll.arrive(s, seq, op, (), (color, key), record, combine)
        coll.wait_ready(s, slot, record)
        if s.world.clock is not None:
            s.world.clock.collective(s.world_rank, slot)
        placement = slot.result.get(s.rank)
        coll.leave(s, slot)
        if placement is None:
            return NullComm()
        c, world_ranks, new_rank = placement
        return self._new(CommState(
            s.world, (s.ctx, seq, c), world_ranks, new_rank,
            '{}.{}#{}(color={})'.format(s.name, op, seq, c), title=''))

    def Split(self, color=0, key=0):  # noqa: N802
        """New communicators by color, ordered by (key, old rank)."""
        return self._split('Split', color, key)

    def Split_type(self, split_type, key=0, info=None):  # noqa: N802
        """COMM_TYPE_SHARED: one communicator per simulated node."""
        s = self._s
        if split_type == COMM_TYPE_SHARED:
            color = s.world.node_of[s.world_rank]
        elif split_type == UNDEFINED:
            color = UNDEFINED
        else:
            raise MPIException(ERR_COMM, 'Split_type {!r} is not '
                               'simulated (only COMM_TYPE_SHARED)'.format(
                                   split_type))
        return self._split('Split_type', color, key)

    def Dup(self, info=None):  # noqa: N802
        """A new communicator with the same group and a new context."""
        s = self._s
        seq = s.next_seq()
        record = CallRecord('Dup', s.world_rank, None, None, s.name, seq,
                            raw=capture(2))
        if s.world.clock is not None:
            s.world.clock.stamp(record)
        slot = coll.arrive(s, seq, 'Dup', (), None, record)
        coll.wait_ready(s, slot, record)
        if s.world.clock is not None:
            s.world.clock.collective(s.world_rank, slot)
        coll.leave(s, slot)
        return self._new(CommState(s.world, (s.ctx, seq, 'dup'),
                                   s.group, s.rank,
                                   '{}.Dup#{}'.format(s.name, seq),
                                   title=''))

    Clone = Dup

    def Create(self, group):  # noqa: N802
        """Not simulated (groups are not part of the subset)."""
        raise NotImplementedError('simulator.mpi: Comm.Create(group) is '
                                  'not simulated; use Split')


class Intracomm(Comm):
    """mpi4py's intracommunicator type (every simulated communicator)."""

    __module__ = 'simulator.mpi'


def NullComm():  # noqa: N802 -- mirrors the COMM_NULL constant
    """A fresh null communicator handle."""
    return Intracomm(None)
