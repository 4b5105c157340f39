"""Intercommunicators (MPI 4.0, section 7.6), as Open MPI 5.0 runs them.

An intercommunicator joins two disjoint groups: each rank's ``group`` is
its own (local) group and point-to-point ranks name the other (remote)
group's members, which the engine sees through :attr:`~simulator.engine.
communicator.CommState.peers`. Collectives meet in one engine slot per
call of *both* groups: each :class:`InterState` carries a ``joint`` view
whose group is the two groups one after the other, the group whose rank 0
has the higher world rank first (the order Open MPI 5.0's ``Merge`` takes
when both groups pass the same ``high``). Rooted collectives follow MPI: the
root passes ``ROOT``, the other members of its group ``PROC_NULL``, the
other group the root's rank; every call checks that the ranks agree.
"""
import numpy as np

from simulator.engine import collectives as coll
from simulator.engine import reduction_order as order
from simulator.engine.actors import current
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture
from simulator.errors import CollectiveMismatchError
from simulator.mpi import pickling
from simulator.mpi.coll import (_check_blocks, _check_op, _copy,
                                _CollectiveRequest, _run, _snapshot, _start)
from simulator.mpi.constants import (CONGRUENT, ERR_COMM,
                                     ERR_GROUP, ERR_RANK, ERR_ROOT, IDENT,
                                     PROC_NULL, ROOT, SIMILAR, UNDEFINED,
                                     UNEQUAL)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.group import Group
from simulator.mpi.msgspec import WBuffer, parse, parse_send, parse_vector
from simulator.mpi.naming import describe, is_ours
from simulator.mpi.ops import OP_NAMES

__all__ = ['InterState', 'InterOps', 'is_inter', 'compare',
           'create_intercomm', 'create_from_groups']

SUM = OP_NAMES['SUM']


class InterState(CommState):
    """One rank's view of an intercommunicator: ``group`` is the local
    group, ``peers`` the remote one, ``joint`` the view its collectives
    meet in (both groups; see the module docstring)."""

    __slots__ = ('joint', 'local_offset', 'remote_offset')

    def __init__(self, world, ctx, local, rank, remote, name, title=''):
        local, remote = list(local), list(remote)
        super().__init__(world, ctx, local, rank, name, title)
        self.peers = remote
        local_first = local[0] > remote[0]
        self.local_offset = 0 if local_first else len(remote)
        self.remote_offset = len(local) if local_first else 0
        members = local + remote if local_first else remote + local
        # Its own context: a collective on the local view (say a Scan
        # refused too late) can never meet the joint slots.
        self.joint = CommState(world, (ctx, 'joint'), members,
                               self.local_offset + rank, name)



def _is_comm(obj):
    """Whether ``obj`` is a simulator.mpi communicator handle (by its
    classes' names: comm imports this module, not the other way)."""
    return any(k.__name__ == 'Comm' and is_ours(k)
               for k in type(obj).__mro__)

def is_inter(state):
    """Whether ``state`` is an intercommunicator's."""
    return state.peers is not state.group


def compare(a, b):
    """``Comm.Compare`` of two states, one of them an intercommunicator's:
    CONGRUENT when both groups match in order, SIMILAR when as sets."""
    if a is b:
        return IDENT
    if not (is_inter(a) and is_inter(b)):
        return UNEQUAL
    if a.group == b.group and a.peers == b.peers:
        return CONGRUENT
    if sorted(a.group) == sorted(b.group) and \
            sorted(a.peers) == sorted(b.peers):
        return SIMILAR
    return UNEQUAL


def _disjoint(local, remote, what):
    shared = sorted(set(local) & set(remote))
    if shared:
        raise MPIException(ERR_COMM, '{}: the local and remote groups '
                           'share the processes {} (world ranks); an '
                           'intercommunicator joins disjoint '
                           'groups'.format(what, shared))


def _ctx_pair(local, local_key, remote, remote_key):
    """The new intercommunicator's context, the same in both groups."""
    if local[0] < remote[0]:
        return ('inter', local_key, remote_key)
    return ('inter', remote_key, local_key)


def create_intercomm(comm, local_leader, peer_comm, remote_leader, tag):
    """``Intracomm.Create_intercomm``: collective over ``comm``; the two
    leaders swap their groups over ``peer_comm`` (on a context of its own,
    so the program's messages with ``tag`` are not taken)."""
    s = comm._s
    size = len(s.group)
    if not isinstance(local_leader, int) or not 0 <= local_leader < size:
        raise MPIException(ERR_RANK, 'Create_intercomm: local leader {!r} '
                           'is not a rank of {} (size {})'.format(
                               local_leader, s.name, size))
    seq = s.next_seq()
    record = CallRecord('Create_intercomm', s.world_rank, None, None,
                        s.name, seq, raw=capture(2))
    mine = None
    if s.rank == local_leader:
        if not _is_comm(peer_comm):
            raise TypeError('Create_intercomm: peer_comm must be a Comm, '
                            'got {}'.format(describe(peer_comm)))
        peer = peer_comm._s
        remote_leader = peer_comm._peer(remote_leader, 'remote leader',
                                        False)
        if remote_leader == PROC_NULL:
            raise MPIException(ERR_RANK, 'Create_intercomm: remote leader '
                               'PROC_NULL on {}'.format(peer.name))
        tag = comm._tag(tag, False)
        link = CommState(peer.world, (peer.ctx, 'Create_intercomm'),
                         peer.group, peer.rank, peer.name)
        theirs = comm._plain()(link).sendrecv(
            (tuple(s.group), (s.ctx, seq)), remote_leader, tag,
            None, remote_leader, tag)
        _disjoint(s.group, theirs[0], 'Create_intercomm')
        mine = theirs
    world = s.world
    if world.clock is not None:
        world.clock.stamp(record)
    slot = coll.arrive(s, seq, 'Create_intercomm',
                       (('local_leader', local_leader),), mine, record)
    coll.wait_ready(s, slot, record)
    if world.clock is not None:
        world.clock.collective(s.world_rank, slot)
    remote, remote_key = slot.args[local_leader]
    coll.leave(s, slot)
    ctx = _ctx_pair(s.group, (s.ctx, seq), remote, remote_key)
    return InterState(world, ctx, s.group, s.rank, remote,
                      '{}.Create_intercomm#{}'.format(s.name, seq))


def create_from_groups(local_group, local_leader, remote_group,
                       remote_leader, stringtag):
    """``Intercomm.Create_from_groups``: made by the members of the two
    groups alone; the n-th call with the same groups and ``stringtag``
    makes the same intercommunicator in every member."""
    local, remote = local_group._m, remote_group._m
    ctx = current()
    me = ctx.rank
    if me not in local:
        raise MPIException(ERR_GROUP, 'Create_from_groups: rank {} is not '
                           'in the local group {}'.format(me, list(local)))
    for name, leader, group in (('local', local_leader, local),
                                ('remote', remote_leader, remote)):
        if not isinstance(leader, int) or not 0 <= leader < len(group):
            raise MPIException(ERR_RANK, 'Create_from_groups: {} leader '
                               '{!r} is not a rank of a group of size '
                               '{}'.format(name, leader, len(group)))
    if not isinstance(stringtag, str):
        raise TypeError('Create_from_groups: stringtag must be a str, got '
                        '{!r}'.format(stringtag))
    _disjoint(local, remote, 'Create_from_groups')
    first, second = (local, remote) if local[0] < remote[0] else \
        (remote, local)
    key = ('Create_from_groups', first, second, stringtag)
    counts = ctx.local.setdefault('mpi.create_group', {})
    counts[key] = n = counts.get(key, 0) + 1
    return InterState(ctx.world, key + (n,), local, local.index(me), remote,
                      'Create_from_groups#{}'.format(n))


class _Joint:
    """What ``coll._run`` reads of a communicator: the joint view."""

    __slots__ = ('_s',)

    def __init__(self, state):
        self._s = state


def _joint_call(comm, op, arg, combine=None, s=None):
    """One collective call of both groups that only builds something:
    ``(state, seq, result)``, ``result`` being ``combine(args)`` (the
    contributions in joint order) or None. ``s``: the state, where not
    ``comm._s`` (a revoked communicator's, for Shrink)."""
    s = comm._s if s is None else s
    joint = s.joint
    seq = joint.next_seq()
    record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                        raw=capture(3))
    world = s.world
    if world.clock is not None:
        world.clock.stamp(record)
    slot = coll.arrive(joint, seq, op, (), arg, record, combine)
    coll.wait_ready(joint, slot, record)
    if world.clock is not None:
        world.clock.collective(s.world_rank, slot)
    result = slot.result
    coll.leave(joint, slot)
    return s, seq, result


def _run_inter(comm, op, arg, finish):
    """A data collective over both groups (``coll._run`` on the joint
    view): every rank stays until all have read what they need. An
    ``I``-named op returns its request at once."""
    joint = _Joint(comm._s.joint)
    if op[0] != 'I':
        return _run(joint, op, (), arg, finish, stay=finish is not None)
    # The others may read it after this rank's request completed.
    arg = tuple(_snapshot(a) for a in arg)
    s, slot, record = _start(joint, op, (), arg)
    return _CollectiveRequest(s, slot, record, finish)


def _role(comm, root, op):
    """ROOT, PROC_NULL or the remote root's rank, checked."""
    s = comm._s
    if root in (ROOT, PROC_NULL):
        return root
    if not isinstance(root, int) or not 0 <= root < len(s.peers):
        raise MPIException(ERR_ROOT, '{}: root {!r} on intercommunicator '
                           '{} must be MPI.ROOT, MPI.PROC_NULL or a rank of '
                           'the remote group (size {})'.format(
                               op, root, s.name, len(s.peers)))
    return root


def _check_roots(s, slot, op):
    """Raise unless exactly one rank passed ROOT, the others of its group
    PROC_NULL and every member of the other group the root's rank."""
    roles = [a[0] for a in slot.args]
    here = slice(s.local_offset, s.local_offset + len(s.group))
    there = slice(s.remote_offset, s.remote_offset + len(s.peers))
    for mine, theirs in ((roles[here], roles[there]),
                         (roles[there], roles[here])):
        if ROOT in mine:
            root = mine.index(ROOT)
            if all(x == PROC_NULL for i, x in enumerate(mine)
                   if i != root) and all(x == root for x in theirs):
                return
    name = {ROOT: 'ROOT', PROC_NULL: 'PROC_NULL'}
    raise CollectiveMismatchError(
        '{} on intercommunicator {}: the roots do not agree (one rank '
        'passes MPI.ROOT, the rest of its group MPI.PROC_NULL, the other '
        'group its rank); this group passed {}, the other {}'.format(
            op, s.name, [name.get(x, x) for x in roles[here]],
            [name.get(x, x) for x in roles[there]]))


def _rooted(comm, op, role, payload, finish):
    """A rooted collective: ``finish(slot)`` runs once the roots are
    checked (in every rank)."""
    def done(st, slot):
        _check_roots(comm._s, slot, op)
        return finish(slot)
    return _run_inter(comm, op, (role, payload), done)


def _from_root(s, slot, root):
    return slot.args[s.remote_offset + root][1]


def _remote_args(s, slot):
    return [a[1] for a in slot.args[s.remote_offset:
                                    s.remote_offset + len(s.peers)]]


def _reduce_into(op_name, name, blocks, op, out):
    """``out`` gets ``op`` over ``blocks`` in Open MPI's order for an
    intercommunicator: the group's own Reduce to its rank 0."""
    _check_blocks(op_name, name, blocks)
    if blocks[0].dtype != out.dtype or blocks[0].size != out.size:
        raise CollectiveMismatchError(
            '{} on {}: the receive buffer holds {} x {} but the remote '
            'group contributes {} x {}'.format(
                op_name, name, out.size, out.dtype, blocks[0].size,
                blocks[0].dtype))
    plan = order.reduce_plan(len(blocks), out.size, out.itemsize, 0,
                             op._commute)
    tmp = np.empty(out.size, dtype=out.dtype)
    order.reduce_plan_into(plan, op, blocks, tmp, 0, out.size)
    out[...] = tmp


class InterOps:
    """``Intercomm``'s own methods and its collectives' semantics; mixed
    in before ``Comm``."""

    # -- the remote group, construction -------------------------------
    def Get_remote_group(self):
        """The remote group."""
        return Group._of(self._s.peers)

    def Get_remote_size(self):
        """Number of ranks in the remote group."""
        return len(self._s.peers)

    remote_group = property(Get_remote_group)
    remote_size = property(Get_remote_size)

    @classmethod
    def Create_from_groups(cls, local_group, local_leader, remote_group,
                           remote_leader, stringtag='org.mpi4py',
                           info=None, errhandler=None):
        """An intercommunicator between two disjoint groups, made by
        their members alone (MPI 4)."""
        new = cls(create_from_groups(local_group, local_leader,
                                     remote_group, remote_leader,
                                     stringtag))
        if errhandler is not None:
            new.Set_errhandler(errhandler)
        return new

    def Merge(self, high=False):
        """An intracommunicator over both groups: the group passing
        ``high=False`` first (with equal values, the group whose rank 0
        has the higher world rank, as Open MPI 5.0 does)."""
        s = self._s
        n_first = len(s.group) if s.local_offset == 0 else len(s.peers)

        def combine(args):
            # Each group's leader (its rank 0) speaks for the group.
            return bool(args[0]) and not args[n_first]
        s, seq, swap = _joint_call(self, 'Merge', bool(high), combine)
        joint = s.joint
        members = list(joint.group)
        if swap:
            members = members[n_first:] + members[:n_first]
        return self._new(CommState(
            s.world, (s.ctx, seq, 'merge'), members,
            members.index(s.world_rank),
            '{}.Merge#{}'.format(s.name, seq), title=''))

    def Dup(self, info=None):
        """A new intercommunicator over the same groups."""
        s, seq, _ = _joint_call(self, 'Dup', None)
        new = type(self)(InterState(
            s.world, (s.ctx, seq, 'dup'), s.group, s.rank, s.peers,
            '{}.Dup#{}'.format(s.name, seq)))
        self._inherit(new)
        if info is not None and info:
            new.Set_info(info)
        return new

    Clone = Dup

    def Shrink(self):
        """A new intercommunicator of the live ranks (all of them here),
        even once revoked."""
        s, seq, _ = _joint_call(self, 'Shrink', None, s=self._local)
        return type(self)(InterState(
            s.world, (s.ctx, seq, 'shrink'), s.group, s.rank, s.peers,
            '{}.Shrink#{}'.format(s.name, seq)))

    def _agree_parts(self):
        """Return (helper, combine, pick) of an agreement, which on an
        intercommunicator gives each group the AND of the other's flags
        (as Open MPI 5.0 does)."""
        from simulator.mpi.ulfm import _Agreements, _and_all
        s = self._local
        n_first = len(s.group) if s.local_offset == 0 else len(s.peers)

        def combine(args):
            return _and_all(args[:n_first]), _and_all(args[n_first:])
        other = 1 if s.local_offset == 0 else 0
        return _Agreements(s), combine, lambda result: result[other]

    def Agree(self, flag):
        """The bitwise AND of the other group's int flags."""
        if not isinstance(flag, int):
            raise TypeError('Agree: flag must be an int, got {!r}'.format(
                flag))
        helper, combine, pick = self._agree_parts()
        return _run(helper, 'Agree', (), int(flag),
                    lambda st, slot: pick(slot.result), combine=combine)

    def Iagree(self, flag):
        """Agree on the C int in the buffer ``flag``, which receives the
        other group's AND once the request completes."""
        from simulator.mpi.ulfm import _int_flag
        array = _int_flag(flag)
        helper, combine, pick = self._agree_parts()
        s, slot, record = _start(helper, 'Iagree', (), int(array[0]),
                                 combine)

        def store(result):
            array[0] = result
        return _CollectiveRequest(s, slot, record,
                                  finish=lambda _s, sl: pick(sl.result),
                                  after=store)

    def _split(self, op, color, key):
        """Split, Split_type and Create: each group splits by color; the
        parts of one color in both groups make an intercommunicator (a
        color one group lacks gives COMM_NULL)."""
        self._check_split(op, color, key)
        s = self._s
        n_first = len(s.group) if s.local_offset == 0 else len(s.peers)

        def combine(args):
            sides = []
            for part in (args[:n_first], args[n_first:]):
                by_color = {}
                for r, (c, k) in enumerate(part):
                    if c != UNDEFINED:
                        by_color.setdefault(c, []).append((k, r))
                sides.append({c: sorted(m) for c, m in by_color.items()})
            return sides

        s, seq, sides = _joint_call(self, op, (color, key), combine)
        here, there = (sides[0], sides[1]) if s.local_offset == 0 else \
            (sides[1], sides[0])
        if color == UNDEFINED or color not in there:
            return self._plain()(None)      # COMM_NULL's kind
        local = [s.group[r] for _, r in here[color]]
        remote = [s.peers[r] for _, r in there[color]]
        return type(self)(InterState(
            s.world, (s.ctx, seq, color), local,
            local.index(s.world_rank), remote,
            '{}.{}#{}(color={})'.format(s.name, op, seq, color)))

    # -- collectives ---------------------------------------------------
    def Barrier(self):
        """Wait until every rank of both groups arrives."""
        _run_inter(self, 'Barrier', (None,), None)

    def Ibarrier(self):
        """Non-blocking Barrier."""
        return _run_inter(self, 'Ibarrier', (None,), None)

    def barrier(self):
        """Wait until every rank of both groups arrives."""
        _run_inter(self, 'barrier', (None,), None)

    def _bcast(self, op, buf, root):
        role = _role(self, root, op)
        b = None if role == PROC_NULL else parse(
            buf, '{} buffer'.format(op), writable=role != ROOT,
            packed=True)
        s = self._s

        def finish(slot):
            if role not in (ROOT, PROC_NULL):
                _copy(b.head(), _from_root(s, slot, role), op, s.name,
                      s.rank, role)
                b.flush()
        return _rooted(self, op, role, b.head() if role == ROOT else None,
                       finish)

    def Bcast(self, buf, root=0):
        """Root's buffer (root=ROOT) into every buffer of the other
        group (root=the root's rank there)."""
        self._bcast('Bcast', buf, root)

    def Ibcast(self, buf, root=0):
        """Non-blocking Bcast."""
        return self._bcast('Ibcast', buf, root)

    def _gather(self, op, sendbuf, recvbuf, root):
        role = _role(self, root, op)
        s = self._s
        recv = send = None
        if role == ROOT:
            recv = parse_vector(recvbuf, len(s.peers),
                                '{} receive buffer'.format(op),
                                writable=True, packed=True,
                                vector=op.endswith('v'))
        elif role != PROC_NULL:
            send = parse_send(sendbuf, '{} send buffer'.format(op)).head()

        def finish(slot):
            if role == ROOT:
                for r, block in enumerate(_remote_args(s, slot)):
                    _copy(recv.part(r), block, op, s.name, s.rank, r)
                recv.flush()
        return _rooted(self, op, role, send, finish)

    def Gather(self, sendbuf, recvbuf, root=0):
        """The root (ROOT) receives a block from each rank of the other
        group, in rank order."""
        self._gather('Gather', sendbuf, recvbuf, root)

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather with per-rank counts/displacements at the root."""
        self._gather('Gatherv', sendbuf, recvbuf, root)

    def Igather(self, sendbuf, recvbuf, root=0):
        """Non-blocking Gather."""
        return self._gather('Igather', sendbuf, recvbuf, root)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        """Non-blocking Gatherv."""
        return self._gather('Igatherv', sendbuf, recvbuf, root)

    def _scatter(self, op, sendbuf, recvbuf, root):
        role = _role(self, root, op)
        s = self._s
        send = recv = None
        if role == ROOT:
            send = parse_vector(sendbuf, len(s.peers),
                                '{} send buffer'.format(op), packed=True,
                                vector=op.endswith('v'))
        elif role != PROC_NULL:
            recv = parse_send(recvbuf, '{} receive buffer'.format(op),
                              writable=True)

        def finish(slot):
            if recv is not None:
                _copy(recv.head(), _from_root(s, slot, role).part(s.rank),
                      op, s.name, s.rank, role)
                recv.flush()
        return _rooted(self, op, role, send, finish)

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Rank ``i`` of the other group receives block ``i`` of the
        root's (ROOT's) buffer."""
        self._scatter('Scatter', sendbuf, recvbuf, root)

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter with per-rank counts/displacements at the root."""
        self._scatter('Scatterv', sendbuf, recvbuf, root)

    def Iscatter(self, sendbuf, recvbuf, root=0):
        """Non-blocking Scatter."""
        return self._scatter('Iscatter', sendbuf, recvbuf, root)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        """Non-blocking Scatterv."""
        return self._scatter('Iscatterv', sendbuf, recvbuf, root)

    def _allgather(self, op, sendbuf, recvbuf):
        s = self._s
        recv = parse_vector(recvbuf, len(s.peers),
                            '{} receive buffer'.format(op), writable=True,
                            packed=True, vector=op.endswith('v'))
        send = parse_send(sendbuf, '{} send buffer'.format(op)).head()

        def finish(st, slot):
            for r, block in enumerate(_remote_args(s, slot)):
                _copy(recv.part(r), block, op, s.name, s.rank, r)
            recv.flush()
        return _run_inter(self, op, (None, send), finish)

    def Allgather(self, sendbuf, recvbuf):
        """Every rank receives a block from each rank of the other
        group, in rank order."""
        self._allgather('Allgather', sendbuf, recvbuf)

    def Allgatherv(self, sendbuf, recvbuf):
        """Allgather with per-rank counts/displacements."""
        self._allgather('Allgatherv', sendbuf, recvbuf)

    def Iallgather(self, sendbuf, recvbuf):
        """Non-blocking Allgather."""
        return self._allgather('Iallgather', sendbuf, recvbuf)

    def Iallgatherv(self, sendbuf, recvbuf):
        """Non-blocking Allgatherv."""
        return self._allgather('Iallgatherv', sendbuf, recvbuf)

    def _alltoall(self, op, sendbuf, recvbuf):
        s = self._s
        n = len(s.peers)
        if op.endswith('w'):
            recv = WBuffer(recvbuf, n, '{} receive buffer'.format(op),
                           writable=True)
            send = WBuffer(sendbuf, n, '{} send buffer'.format(op))
        else:
            vector = op.endswith('v')
            recv = parse_vector(recvbuf, n, '{} receive buffer'.format(op),
                                writable=True, packed=True, vector=vector)
            send = parse_vector(sendbuf, n, '{} send buffer'.format(op),
                                packed=True, vector=vector)

        def finish(st, slot):
            for r, theirs in enumerate(_remote_args(s, slot)):
                dst, src = recv.part(r), theirs.part(s.rank)
                if op.endswith('w'):
                    _copy(dst.data, src.data, op, s.name, s.rank, r)
                    dst.flush()
                else:
                    _copy(dst, src, op, s.name, s.rank, r)
            if not op.endswith('w'):
                recv.flush()
        return _run_inter(self, op, (None, send), finish)

    def Alltoall(self, sendbuf, recvbuf):
        """Block ``j`` of rank ``i`` goes to block ``i`` of rank ``j`` of
        the other group."""
        self._alltoall('Alltoall', sendbuf, recvbuf)

    def Alltoallv(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts/displacements."""
        self._alltoall('Alltoallv', sendbuf, recvbuf)

    def Alltoallw(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts, displacements and datatypes."""
        self._alltoall('Alltoallw', sendbuf, recvbuf)

    def Ialltoall(self, sendbuf, recvbuf):
        """Non-blocking Alltoall."""
        return self._alltoall('Ialltoall', sendbuf, recvbuf)

    def Ialltoallv(self, sendbuf, recvbuf):
        """Non-blocking Alltoallv."""
        return self._alltoall('Ialltoallv', sendbuf, recvbuf)

    def Ialltoallw(self, sendbuf, recvbuf):
        """Non-blocking Alltoallw."""
        return self._alltoall('Ialltoallw', sendbuf, recvbuf)

    def _allreduce(self, op_name, sendbuf, recvbuf, op):
        s = self._s
        send = parse(sendbuf, '{} send buffer'.format(op_name))
        recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                     writable=True)
        op = _check_op(op, send.dtype, op_name, send.datatype)
        out = recv.head(send.count)

        def finish(st, slot):
            _reduce_into(op_name, s.name, _remote_args(s, slot), op, out)
            recv.flush()
        return _run_inter(self, op_name, (None, send.head()), finish)

    def Allreduce(self, sendbuf, recvbuf, op=SUM):
        """Each group's receive buffers get ``op`` over the other group's
        send buffers."""
        self._allreduce('Allreduce', sendbuf, recvbuf, op)

    def Iallreduce(self, sendbuf, recvbuf, op=SUM):
        """Non-blocking Allreduce."""
        return self._allreduce('Iallreduce', sendbuf, recvbuf, op)

    def _reduce(self, op_name, sendbuf, recvbuf, op, root):
        op = _check_op(op)
        role = _role(self, root, op_name)
        s = self._s
        recv = send = None
        if role == ROOT:
            recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                         writable=True)
            _check_op(op, recv.dtype, op_name, recv.datatype)
        elif role != PROC_NULL:
            send = parse(sendbuf, '{} send buffer'.format(op_name))
            _check_op(op, send.dtype, op_name, send.datatype)

        def finish(slot):
            if recv is not None:
                blocks = _remote_args(s, slot)
                _reduce_into(op_name, s.name, blocks, op,
                             recv.head(blocks[0].size))
                recv.flush()
        return _rooted(self, op_name, role,
                       None if send is None else send.head(), finish)

    def Reduce(self, sendbuf, recvbuf, op=SUM, root=0):
        """The root (ROOT) gets ``op`` over the other group's send
        buffers."""
        self._reduce('Reduce', sendbuf, recvbuf, op, root)

    def Ireduce(self, sendbuf, recvbuf, op=SUM, root=0):
        """Non-blocking Reduce."""
        return self._reduce('Ireduce', sendbuf, recvbuf, op, root)

    def _reduce_scatter(self, op_name, sendbuf, recvbuf, counts, op):
        s = self._s
        send = parse(sendbuf, '{} send buffer'.format(op_name))
        recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                     writable=True)
        op = _check_op(op, send.dtype, op_name, send.datatype)
        lsize = len(s.group)
        # mpi4py's checks: the send buffer holds this group's blocks.
        if counts is None:
            if send.count != recv.count * lsize:
                raise ValueError('mismatch in send count {} and receive '
                                 'count {}'.format(send.count // lsize,
                                                   recv.count))
            counts = [recv.count] * lsize
        counts = [int(c) for c in counts]
        if len(counts) != lsize:
            raise ValueError('{}: {} receive counts for a local group of '
                             '{}'.format(op_name, len(counts), lsize))
        if send.count != sum(counts):
            raise ValueError('mismatch in send count {} and sum(counts) '
                             '{}'.format(send.count, sum(counts)))
        if recv.count != counts[s.rank]:
            raise ValueError('mismatch in receive count {} and counts[{}] '
                             '{}'.format(recv.count, s.rank, counts[s.rank]))
        lo = sum(counts[:s.rank])
        hi = lo + counts[s.rank]

        def finish(st, slot):
            blocks = _remote_args(s, slot)
            whole = np.empty(blocks[0].size, dtype=blocks[0].dtype)
            _reduce_into(op_name, s.name, blocks, op, whole)
            if whole.size != sum(counts):
                raise CollectiveMismatchError(
                    '{} on {}: the remote group reduces {} elements but '
                    'this group receives {} in all'.format(
                        op_name, s.name, whole.size, sum(counts)))
            _copy(recv.data[:hi - lo], whole[lo:hi], op_name, s.name,
                  s.rank, 0)
            recv.flush()
        return _run_inter(self, op_name, (None, send.head()), finish)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=SUM):
        """Rank ``i`` gets block ``i`` of ``op`` over the other group's
        send buffers."""
        self._reduce_scatter('Reduce_scatter_block', sendbuf, recvbuf,
                             None, op)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=SUM):
        """Reduce_scatter_block with this group's ``recvcounts``."""
        self._reduce_scatter('Reduce_scatter', sendbuf, recvbuf,
                             recvcounts, op)

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=SUM):
        """Non-blocking Reduce_scatter_block."""
        return self._reduce_scatter('Ireduce_scatter_block', sendbuf,
                                    recvbuf, None, op)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=SUM):
        """Non-blocking Reduce_scatter."""
        return self._reduce_scatter('Ireduce_scatter', sendbuf, recvbuf,
                                    recvcounts, op)

    # -- object collectives --------------------------------------------
    def bcast(self, obj, root=0):
        """The root's (ROOT's) object, in every rank of the other group;
        None in the root's group."""
        role = _role(self, root, 'bcast')
        s = self._s
        return _rooted(self, 'bcast', role,
                       pickling.dumps(obj) if role == ROOT else None,
                       lambda slot: None if role in (ROOT, PROC_NULL) else
                       pickling.loads(_from_root(s, slot, role)))

    def gather(self, sendobj, root=0):
        """At the root (ROOT), the other group's objects in rank order."""
        role = _role(self, root, 'gather')
        s = self._s
        return _rooted(self, 'gather', role,
                       None if role in (ROOT, PROC_NULL) else
                       pickling.dumps(sendobj),
                       lambda slot: [pickling.loads(a) for a in
                                     _remote_args(s, slot)]
                       if role == ROOT else None)

    def scatter(self, sendobj, root=0):
        """Item ``i`` of the root's (ROOT's) sequence to rank ``i`` of
        the other group."""
        role = _role(self, root, 'scatter')
        s = self._s
        mine = None
        if role == ROOT:
            items = [None] * len(s.peers) if sendobj is None else \
                list(sendobj)
            if len(items) != len(s.peers):
                raise ValueError('scatter on {}: expecting {} items (the '
                                 'remote group), got {}'.format(
                                     s.name, len(s.peers), len(items)))
            mine = [pickling.dumps(x) for x in items]
        return _rooted(self, 'scatter', role, mine,
                       lambda slot: None if role in (ROOT, PROC_NULL) else
                       pickling.loads(_from_root(s, slot, role)[s.rank]))

    def allgather(self, sendobj):
        """The other group's objects, in rank order."""
        s = self._s
        return _run_inter(self, 'allgather', (None, pickling.dumps(sendobj)),
                          lambda st, slot: [pickling.loads(a) for a in
                                            _remote_args(s, slot)])

    def alltoall(self, sendobj):
        """Item ``j`` of rank ``i``'s sequence to rank ``j`` of the other
        group; each rank gets the other group's items for it."""
        s = self._s
        items = [None] * len(s.peers) if sendobj is None else list(sendobj)
        if len(items) != len(s.peers):
            raise ValueError('alltoall on {}: expecting {} items (the '
                             'remote group), got {}'.format(
                                 s.name, len(s.peers), len(items)))
        mine = [pickling.dumps(x) for x in items]
        return _run_inter(self, 'alltoall', (None, mine),
                          lambda st, slot: [pickling.loads(a[s.rank]) for a
                                            in _remote_args(s, slot)])

    def allreduce(self, sendobj, op=SUM):
        """Reduce the other group's objects with ``op`` (mpi4py's tree)."""
        s = self._s

        def finish(st, slot):
            blocks = _remote_args(s, slot)
            tree = order.object_reduce_tree(len(blocks))
            return order.evaluate(tree, lambda r: pickling.loads(blocks[r]),
                                  op)
        return _run_inter(self, 'allreduce', (None, pickling.dumps(sendobj)),
                          finish)

    def reduce(self, sendobj, op=SUM, root=0):
        """At the root (ROOT), ``op`` over the other group's objects."""
        role = _role(self, root, 'reduce')
        s = self._s

        def finish(slot):
            if role != ROOT:
                return None
            blocks = _remote_args(s, slot)
            tree = order.object_reduce_tree(len(blocks))
            return order.evaluate(tree, lambda r: pickling.loads(blocks[r]),
                                  op)
        return _rooted(self, 'reduce', role,
                       None if role in (ROOT, PROC_NULL) else
                       pickling.dumps(sendobj), finish)

