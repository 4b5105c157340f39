"""``Comm``: mpi4py's communicator API over a simulated world.

Each rank holds its own ``Comm`` objects, each over the rank's
:class:`~simulator.engine.communicator.CommState`; ranks of one
communicator share a context id (``ctx``) and a group (comm rank -> world
rank). Object methods (lowercase) pickle like mpi4py; buffer methods
(capitalised) take mpi4py buffer specs.
"""
import operator

from simulator.engine import collectives as coll
from simulator.engine.activity import Condition
from simulator.engine.actors import current, current_actor
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture
from simulator.errors import AbortError
from simulator.mpi import dynamic
from simulator.mpi.cargs import c_int, object_name
from simulator.mpi.coll import Collectives
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, COMM_TYPE_SHARED,
                                     CONGRUENT, ERR_ARG, ERR_COMM, ERR_GROUP,
                                     ERR_RANK, ERR_ROOT, ERR_TAG, IDENT,
                                     PROC_NULL, SIMILAR, THREAD_MULTIPLE,
                                     UNDEFINED, UNEQUAL)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.values import VALUES
from simulator.mpi.finalization import after_finalize
from simulator.mpi.initialization import check_thread
from simulator.mpi.commattr import CommProps
from simulator.mpi.group import Group
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.intercomm import (InterOps, create_intercomm, is_inter)
from simulator.mpi.intercomm import compare as inter_compare
from simulator.mpi.message import MatchedProbes
from simulator.mpi.naming import (describe, no_attribute, reduce_constant,
                                   unserializable)
from simulator.mpi.p2p import PointToPoint
from simulator.mpi.pcoll import PersistentCollectives
from simulator.mpi.prequest import PartitionedP2P, PersistentP2P
from simulator.mpi.request import Request
from simulator.mpi.scan import Scans
from simulator.mpi.ulfm import FaultTolerance, check_revoked
from simulator.mpi.topology import (TopologyConstructors, class_for,
                                     topology_of)
from simulator.mpi.unsupported import mpi41_missing

__all__ = ['Comm', 'Intracomm', 'Intercomm', 'NullComm', 'COMM_NULL',
           'COMM_WORLD', 'COMM_SELF', 'world_comm']


COMM_TYPE_HW_GUIDED = VALUES['COMM_TYPE_HW_GUIDED']
COMM_TYPE_HW_UNGUIDED = VALUES['COMM_TYPE_HW_UNGUIDED']

class _RankLocalState:
    """``_state`` of COMM_WORLD and COMM_SELF: the calling rank's
    communicator their label names (see :func:`_rank_local_comm`)."""

    def __get__(self, comm, cls=None):
        if comm is None:
            return self
        label = comm.__dict__.get('_label')
        if label is None:
            raise no_attribute(comm, '_state')
        return _world_states(_rank_context(label))[label]


class Comm(PointToPoint, MatchedProbes, PersistentP2P, PartitionedP2P,
           Collectives, PersistentCollectives, CommProps, FaultTolerance,
           HandleMixin):
    """A communicator, with mpi4py's method names and argument order.

    Point-to-point methods come from :class:`~simulator.mpi.p2p.
    PointToPoint`, collectives from :class:`~simulator.mpi.coll.
    Collectives` and :class:`~simulator.mpi.scan.Scans`; identity, argument
    checks and construction (Split, Dup) are here.
    """

    __module__ = 'simulator.mpi'

    def __new__(cls, comm=None):
        # The handle is set here, as mpi4py's: a subclass's __new__ (pkl5's,
        # or one that passes a Clone of its argument) calls
        # Comm.__new__(cls, comm), and __init__ then gets the original.
        self = super().__new__(cls)
        if isinstance(comm, Comm):
            # Comm(comm): another handle to the same communicator
            comm = comm._state
        elif comm is not None and not isinstance(comm, CommState):
            raise handle_argument_error('Comm', comm)
        self._state = comm
        return self

    def __init__(self, comm=None):
        """Nothing more: ``__new__`` set the handle (subclasses check its
        kind here)."""

    @classmethod
    def _made(cls, state):
        """A handle of this class over a new communicator's ``state``,
        made as mpi4py makes results (``cls.__new__(cls)``, then the
        handle set), so a subclass's __new__ sees no argument."""
        obj = cls.__new__(cls)
        obj._state = state
        return obj

    # COMM_WORLD and COMM_SELF (Intracomm handles, as mpi4py's) hold a
    # label instead of a state, and are the calling rank's communicator.
    # Found only where a handle has no _state of its own (a non-data
    # descriptor): no __getattr__, which mpi4py's Comm lacks.
    _state = _RankLocalState()

    def _handle_target(self):
        return self._state

    @classmethod
    def _from_target(cls, target):
        if cls is Comm and target is not None:
            if is_inter(target):
                return Intercomm(target)
            # fromhandle gives the communicator's own kind, as mpi4py's
            cls = class_for(target)
        return cls(target)

    def __reduce__(self):
        state = self._state
        if state is None:
            return reduce_constant(self, 'COMM_NULL') \
                if self is _null_constant() else \
                self._reduce_copy(_null_constant())
        if state.name in ('MPI_COMM_WORLD', 'MPI_COMM_SELF') and (
                state.ctx[0] == 'world' or
                state.ctx == ('self', state.world_rank)):
            label = state.name[4:]
            # a copy names the unpickling rank's COMM_WORLD / COMM_SELF
            return reduce_constant(self, label) if _rank_local(self) else \
                self._reduce_copy(COMM_WORLD if label == 'COMM_WORLD'
                                  else COMM_SELF)
        raise unserializable(self, 'communicators belong to the process')

    @property
    def _s(self):
        """The state, for communication: ERR_REVOKED once revoked."""
        state = self._local
        check_revoked(state)
        return state

    @property
    def _local(self):
        """The state, for local queries (a revoked communicator's too)."""
        state = self._state
        if state is None:
            raise MPIException(ERR_COMM, 'operation on COMM_NULL')
        if state.unusable is not None:
            raise MPIException(ERR_COMM, state.unusable)
        world = state.world
        if world.finalized and state.world_rank in world.finalized:
            raise after_finalize(world, state.world_rank,
                                 'used {}'.format(state.name))
        start = world.mpi_starts.get(state.world_rank)
        if start is None or start.level != THREAD_MULTIPLE or \
                not start.initialized:
            check_thread(world, state.world_rank, state.name)
        return state

    # -- identity -------------------------------------------------------
    def Get_rank(self):
        """This rank in the communicator."""
        return self._local.rank

    def Get_size(self):
        """Number of ranks in the communicator."""
        return len(self._local.group)

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_name(self):
        """The communicator's name (``MPI_COMM_WORLD``...; '' for one
        made by Split or Dup and never named, as in Open MPI)."""
        if self._state is None:
            return 'MPI_COMM_NULL'
        return self._local.title

    def Set_name(self, name):
        """Rename the communicator (this rank's handle)."""
        self._local.name = self._local.title = object_name(name)

    name = property(Get_name, Set_name)

    def Is_inter(self):
        """Whether this is an intercommunicator."""
        return is_inter(self._local)

    def Is_intra(self):
        """Whether this is an intracommunicator."""
        return not is_inter(self._local)

    def Compare(self, comm):
        """IDENT (same handle), CONGRUENT (same group, same order),
        SIMILAR (same members, another order) or UNEQUAL."""
        if not isinstance(comm, Comm):
            raise TypeError('Compare expects a Comm, got {}'.format(
                describe(comm)))
        a, b = self._local, comm._local
        if is_inter(a) or is_inter(b):
            return inter_compare(a, b)
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

    __hash__ = None     # unhashable, as mpi4py's handles

    def __bool__(self):
        # COMM_WORLD is never COMM_NULL, even outside a rank
        return _rank_local(self) or self._state is not None

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        if _rank_local(self) and current() is None:
            return '<simulator.mpi.{} (no rank)>'.format(self._label)
        state = self._state
        if state is None:
            return '<simulator.mpi.Comm COMM_NULL>'
        return '<simulator.mpi.Comm {} rank {}/{}>'.format(
            state.name, state.rank, len(state.group))

    def Free(self):
        """Release the communicator; the handle becomes COMM_NULL."""
        s = self._local
        if s.ctx[0] in ('world', 'self'):
            raise MPIException(ERR_COMM, 'cannot free {}'.format(s.name))
        self._drop_attrs(self._attr_store('Free'))
        s.unusable = '{} was freed'.format(s.name)
        self._state = None

    def free(self):
        """Call ``Free`` unless null; a handle to COMM_WORLD or COMM_SELF is
        only cleared, and the constants stay (mpi4py's)."""
        s = self._state
        if s is None or _rank_local(self):
            return
        if s.ctx[0] in ('world', 'self'):
            self._state = None
        else:
            self.Free()

    def Disconnect(self):
        """Wait until every member (of both groups of an
        intercommunicator) disconnects, then free the communicator: the
        handle becomes COMM_NULL (collective, as MPI_Comm_disconnect)."""
        self.Barrier()
        self.Free()

    def Abort(self, errorcode=0):
        """Stop the whole world at once, from any thread of any rank:
        AbortError here, and in every rank that waits."""
        s = self._s
        error = AbortError('rank {} called Abort({}) on {}'.format(
            s.world_rank, errorcode, s.name), errorcode=errorcode)
        s.world.fail(current_actor(), error)
        raise error

    # -- checks ---------------------------------------------------------
    def _peer(self, peer, what, allow_any):
        size = len(self._s.peers)
        peer = c_int(peer)
        if peer == PROC_NULL or (allow_any and peer == ANY_SOURCE):
            return peer
        if not 0 <= peer < size:
            raise MPIException(ERR_RANK, '{} rank {!r} is not in {} of '
                               'size {}'.format(what, peer, self._s.name,
                                                size))
        return peer

    def _tag(self, tag, allow_any):
        tag = c_int(tag)
        if allow_any and tag == ANY_TAG:
            return tag
        if tag < 0:
            raise MPIException(ERR_TAG, 'tag {!r} on {} must be an int '
                               '>= 0'.format(tag, self._s.name))
        return tag

    def _root(self, root):
        size = len(self._s.group)
        root = c_int(root)
        if not 0 <= root < size:
            raise MPIException(ERR_ROOT, 'root {!r} is not a rank of {} '
                               '(size {})'.format(root, self._s.name, size))
        return root

    # -- communicator construction --------------------------------------
    def _new(self, state):
        return type(self)._plain()(state)

    @classmethod
    def _plain(cls):
        return Intracomm

    @staticmethod
    def _check_split(op, color, key):
        color, key = c_int(color), c_int(key)
        if color != UNDEFINED and color < 0:
            raise MPIException(ERR_ARG, 'Split color must be an int >= 0 '
                               'or UNDEFINED, got {!r}'.format(color))
        return color, key

    def _split(self, op, color, key):
        s = self._s
        seq = s.next_seq()
        record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                            raw=capture(3))
        color, key = self._check_split(op, color, key)

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

    def Split(self, color=0, key=0):
        """New communicators by color, ordered by (key, old rank)."""
        return self._split('Split', color, key)

    def Split_type(self, split_type, key=0, info=None):
        """COMM_TYPE_SHARED: one communicator per simulated node; the
        hardware types as Open MPI 5.0 splits a node whose ranks each
        have a core (see :func:`_hardware_color`)."""
        s = self._s
        split_type = c_int(split_type)
        if split_type == COMM_TYPE_SHARED:
            color = s.world.node_of[s.world_rank]
        elif split_type == UNDEFINED:
            color = UNDEFINED
        elif split_type in (COMM_TYPE_HW_GUIDED, COMM_TYPE_HW_UNGUIDED):
            color = self._hardware_color(split_type, info)
        else:
            raise MPIException(ERR_ARG, 'Split_type: unknown split type '
                               '{}'.format(split_type))
        new = self._split('Split_type', color, key)
        if new:
            new._s.props['dup_hints'] = True    # as Open MPI reports it
        return new

    def _hardware_color(self, split_type, info):
        """The part of the hardware this rank's Split_type falls in (a
        rank has a core of its own): the node for the guided
        ``mpi_shared_memory``, the rank alone for ``core``/``hwthread``,
        none for another or no resource type; unguided, the next level
        that splits this communicator: nodes, then cores."""
        s = self._s
        node = s.world.node_of[s.world_rank]
        if split_type == COMM_TYPE_HW_GUIDED:
            kind = None if info is None or not info else \
                info.Get('mpi_hw_resource_type')
            if kind == 'mpi_shared_memory':
                return node
            return s.world_rank if kind in ('core', 'hwthread') else \
                UNDEFINED
        if len(s.peers) == 1:
            return UNDEFINED        # nothing smaller than one rank
        nodes = {s.world.node_of[p] for p in s.peers}
        return node if len(nodes) > 1 else s.world_rank

    def Dup(self, info=None):
        """A new communicator with the same group and a new context."""
        s = self._s
        state = self._dup_state(s, 'Dup', capture(2))
        state.props['dup_hints'] = True     # see Get_info
        if topology_of(s) is not None:
            state.props['topology'] = topology_of(s)
        # Dup keeps the handle's type, as mpi4py's (a pkl5.Intracomm's Dup
        # is one).
        new = type(self)._made(state)
        self._inherit(new)
        if info is not None and info:
            new.Set_info(info)
        return new

    Clone = Dup

    def Idup_with_info(self, info):
        """Idup; hints are ignored."""
        return self.Idup(info)

    def Get_topology(self):
        """CART, GRAPH, DIST_GRAPH or UNDEFINED."""
        topo = topology_of(self._local)
        return UNDEFINED if topo is None else topo.kind

    # MPI 4.1's communicator buffers: Open MPI 5.0 does not have them
    # (mpi4py raises NotImplementedError there); nor does the simulator,
    # so that a program needing them learns it before the cluster job.
    def Attach_buffer(self, buf):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Comm.Attach_buffer')

    def Detach_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Comm.Detach_buffer')

    def Flush_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Comm.Flush_buffer')

    def Iflush_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Comm.Iflush_buffer')

    @classmethod
    def Get_parent(cls):
        """The intercommunicator to the group that spawned this rank (the
        same handle on every call, as mpi4py's); COMM_NULL in a rank no
        Spawn started, or once it disconnected."""
        ctx = current()
        if ctx is None:
            return Intercomm()
        handle = ctx.local.get('mpi.parent_handle')
        if handle is None:
            handle = ctx.local['mpi.parent_handle'] = Intercomm()
        handle._state = dynamic.parent_state()
        return handle

    @classmethod
    def Join(cls, fd):
        """The intercommunicator between this rank and the rank at the
        other end of the connected socket ``fd`` (both call Join)."""
        return Intercomm(dynamic.join(fd))

    def Idup(self, info=None):
        """Dup, returned with its request: (comm, request). The new
        communicator may be used once the request is complete: before,
        any use of it is an error naming the Idup's line (MPI leaves the
        handle undefined until then; Open MPI may crash)."""
        new = self.Dup(info)
        state = new._local
        state.props.pop('dup_hints', None)      # Open MPI's Idup has none
        record = CallRecord('Idup', state.world_rank, None, None, self._s.name,
                            raw=capture(2))
        state.unusable = (
            'rank {} used the communicator of Idup at {} before the '
            "Idup's request completed: wait for it first (MPI leaves the "
            'handle undefined until then)'.format(state.world_rank,
                                                  record.where))
        return new, _IdupRequest(Condition(state.world, state.world_rank,
                                           record, lambda: True), state)

    def Dup_with_info(self, info):
        """Dup with ``info``'s hints (kept, not acted upon)."""
        return self.Dup(info)

    def Get_group(self):
        """The communicator's group."""
        return Group._of(self._local.group)

    group = property(Get_group)

    def Create(self, group):
        """A communicator over ``group`` (a subset of this one, in group
        order); COMM_NULL on the other ranks. Collective on this one."""
        s = self._s
        members = group._m
        missing = [m for m in members if m not in s.group]
        if missing:
            raise MPIException(ERR_GROUP, 'Create: processes {} of the '
                               'group are not in {}'.format(missing, s.name))
        me = s.world_rank
        if me in members:
            # Ranks may pass disjoint groups (MPI 2.2; mpi4py's
            # _commctx_inter does): each group makes its own communicator.
            # On an intercommunicator each side names its own part.
            color = 0 if is_inter(s) else min(members)
            return self._split('Create', color, members.index(me))
        return self._split('Create', UNDEFINED, 0)

    @property
    def is_inter(self):
        """Whether this is an intercommunicator."""
        return self.Is_inter()

    @property
    def is_intra(self):
        """Whether this is an intracommunicator."""
        return self.Is_intra()

    @property
    def is_topo(self):
        """Whether the communicator has a process topology."""
        return self.Get_topology() != UNDEFINED

    topology = property(lambda self: self.Get_topology(),
                        doc='Get_topology().')


class Intracomm(TopologyConstructors, Scans, Comm):
    """The intracommunicator type of mpi4py."""

    __module__ = 'simulator.mpi'

    def __init__(self, comm=None):
        super().__init__(comm)
        if self._state is not None and is_inter(self._state):
            raise TypeError('Intracomm() argument must be an intracommunicator'
                            ', not the intercommunicator {}'.format(
                                self._state.name))

    @classmethod
    def Create_from_group(cls, group, stringtag='org.mpi4py',
                          info=None, errhandler=None):
        """A communicator over ``group`` made by its members alone (MPI
        4, as Open MPI 5 offers it)."""
        from simulator.mpi.session import create_from_group
        return create_from_group(cls, group, stringtag, info, errhandler)

    def Create_group(self, group, tag=0):
        """A communicator over ``group``, made by its members only (in
        the same order on each, per ``tag``)."""
        s = self._s
        members = group._m
        tag = self._tag(tag, False)
        if s.world_rank not in members:
            return COMM_NULL        # as Open MPI answers a non-member
        # Members number their Create_group calls per (group, tag): the
        # n-th call of each member makes the same communicator.
        key = ('Create_group', s.ctx, members, tag)
        counts = current().local.setdefault('mpi.create_group', {})
        counts[key] = n = counts.get(key, 0) + 1
        return self._new(CommState(
            s.world, (s.ctx, 'group', members, tag, n), list(members),
            members.index(s.world_rank),
            '{}.Create_group#{}'.format(s.name, n), title=''))

    def Spawn(self, command, args=None, maxprocs=1, info=None, root=0,
              errcodes=None):
        """Start ``maxprocs`` ranks running ``command args`` (a Python
        interpreter or script: see :mod:`simulator.mpi.dynamic`); returns
        the intercommunicator to them (collective; the arguments count at
        ``root`` only)."""
        apps = None
        # A C int in mpi4py, converted on every rank.
        maxprocs = operator.index(maxprocs)
        if self._s.rank == root:
            apps = dynamic.spawn_apps(command, args, maxprocs, info)
        state, codes = dynamic.spawn(self, apps, root, 'Spawn')
        if errcodes is not None:
            errcodes[:] = codes[0]
        return Intercomm(state)

    def Spawn_multiple(self, command, args=None, maxprocs=None, info=None,
                       root=0, errcodes=None):
        """Spawn several applications as one job (their ranks numbered
        in order; MPI_APPNUM tells them apart)."""
        apps = None
        if self._s.rank == root:
            apps = dynamic.spawn_multiple_apps(command, args, maxprocs, info)
        state, codes = dynamic.spawn(self, apps, root, 'Spawn_multiple')
        if errcodes is not None:
            errcodes[:] = codes
        return Intercomm(state)

    def Accept(self, port_name, info=None, root=0):
        """Wait for a group to Connect on ``port_name`` (significant at
        ``root``); returns the intercommunicator to it."""
        return Intercomm(dynamic.accept_or_connect(self, 'Accept',
                                                   port_name, root))

    def Connect(self, port_name, info=None, root=0):
        """Join the group that Accepts on ``port_name``."""
        return Intercomm(dynamic.accept_or_connect(self, 'Connect',
                                                   port_name, root))

    def Create_intercomm(self, local_leader, peer_comm, remote_leader,
                         tag=0):
        """An intercommunicator between this group and the group whose
        leader is ``remote_leader`` of ``peer_comm`` (collective here;
        the leaders meet on ``peer_comm`` with ``tag``)."""
        return Intercomm(create_intercomm(self, local_leader, peer_comm,
                                          remote_leader, tag))


class Intercomm(InterOps, Comm):
    """The intercommunicator type of mpi4py
    (:mod:`simulator.mpi.intercomm`)."""

    __module__ = 'simulator.mpi'

    def __init__(self, comm=None):
        super().__init__(comm)
        if self._state is not None and not is_inter(self._state):
            raise TypeError('Intercomm() argument must be an intercommunicator'
                            ', not the intracommunicator {}'.format(
                                self._state.name))


def NullComm():  # mirrors the COMM_NULL constant
    """A fresh null communicator handle."""
    return Intracomm(None)


# A Comm, as mpi4py's (null results of Split and others keep their kind).
COMM_NULL = Comm(None)


def _null_constant():
    return COMM_NULL


# -- the rank's own COMM_WORLD and COMM_SELF ---------------------------------
def _rank_context(what):
    ctx = current()
    if ctx is None:
        raise RuntimeError(
            'simulator.mpi.{} used outside a simulated rank: run the code '
            'with simulator.run(fn, size) or python -m simulator -n N '
            'script.py'.format(what))
    return ctx


def _world_states(ctx):
    """The rank's (COMM_WORLD, COMM_SELF) states, made on first use."""
    states = ctx.local.get('mpi')
    if states is None:
        world, rank, job = ctx.world, ctx.rank, ctx.job
        # A spawned job's COMM_WORLD is its own ranks, in a context of
        # its own.
        states = ctx.local['mpi'] = {
            'COMM_WORLD': CommState(world, ('world',) if job.id == 0 else
                                    ('world', job.id), job.ranks,
                                    ctx.job_rank, 'MPI_COMM_WORLD'),
            'COMM_SELF': CommState(world, ('self', rank), [rank], 0,
                                   'MPI_COMM_SELF')}
    return states


def world_comm(ctx):
    """``ctx``'s rank's own COMM_WORLD handle (what simulator.run passes
    to the rank's function)."""
    return Intracomm(_world_states(ctx)['COMM_WORLD'])


def _rank_local(comm):
    """True for COMM_WORLD and COMM_SELF themselves."""
    return '_label' in comm.__dict__


def _rank_local_comm(label):
    """``COMM_WORLD`` / ``COMM_SELF``: an Intracomm naming the calling
    rank's communicator (``Comm._state`` finds its state)."""
    comm = object.__new__(Intracomm)
    comm._label = label
    return comm


COMM_WORLD = _rank_local_comm('COMM_WORLD')
COMM_SELF = _rank_local_comm('COMM_SELF')


class _IdupRequest(Request):
    """Idup's request: completing it makes the new communicator usable."""

    def __init__(self, condition, state):
        super().__init__(condition)
        self._idup_state = state

    def _finish(self, status):
        self._idup_state.unusable = None
        return None
