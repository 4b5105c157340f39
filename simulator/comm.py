"""``Comm``: mpi4py's communicator API over a simulated world.

Each rank holds its own ``Comm`` objects; ranks of one communicator share
a context id (``ctx``) and a group (comm rank -> world rank). Object
methods (lowercase) pickle like mpi4py; buffer methods (capitalised) take
mpi4py buffer specs. Collectives live in :mod:`simulator.comm_coll`.
"""
import pickle

from simulator import collectives as coll
from simulator import p2p
from simulator.constants import (ANY_SOURCE, ANY_TAG, COMM_TYPE_SHARED,
                                 CONGRUENT, ERR_COMM, ERR_RANK, ERR_ROOT,
                                 ERR_TAG, IDENT, PROC_NULL, SIMILAR,
                                 UNDEFINED, UNEQUAL)
from simulator.constants import Exception as MPIException
from simulator.datatypes import parse
from simulator.checks import Report
from simulator.errors import AbortError, UnmatchedMessageError
from simulator.request import Request
from simulator.trace import CallRecord, capture

__all__ = ['CommState', 'Comm', 'Intracomm', 'NullComm']

_PICKLE = pickle.HIGHEST_PROTOCOL


class CommState:
    """One rank's view of a communicator (never shared between ranks)."""

    __slots__ = ('world', 'ctx', 'group', 'rank', 'name', 'seq', 'freed',
                 'world_rank', 'title')

    def __init__(self, world, ctx, group, rank, name, title=None):
        self.world = world
        self.ctx = ctx
        self.group = group
        self.rank = rank
        self.world_rank = group[rank]
        # ``name`` tells people which communicator a report is about;
        # ``title`` is what Get_name returns: like Open MPI, '' for a
        # communicator made by Split or Dup until Set_name names it.
        self.name = name
        self.title = name if title is None else title
        self.seq = 0
        self.freed = False

    def next_seq(self):
        self.seq += 1
        return self.seq


class Comm:
    """A communicator, with mpi4py's method names and argument order."""

    __module__ = 'simulator.mpi'
    simulated = True

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

    def _record(self, op, peer=None, tag=None, seq=None, detail=None):
        s = self._s
        return CallRecord(op, s.world_rank, peer, tag, s.name, seq, detail,
                          raw=capture(2))

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
        from simulator import mpi
        return mpi.ERRORS_RETURN

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
        """Stop the whole world: raises AbortError in this rank."""
        s = self._s
        raise AbortError('rank {} called Abort({}) on {}'.format(
            s.world_rank, errorcode, s.name), errorcode=errorcode)

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

    # -- point to point -------------------------------------------------
    def _isend(self, op, kind, payload, datatype, dest, tag, sync=False):
        s = self._s
        if type(dest) is not int or not 0 <= dest < len(s.group):
            dest = self._peer(dest, 'destination', False)
        if type(tag) is not int or tag < 0:
            tag = self._tag(tag, False)
        record = CallRecord(op, s.world_rank, dest, tag, s.name,
                            raw=capture(3))
        world = s.world
        if dest == PROC_NULL:
            return Request(world, s.world_rank, record)._as_done()
        msg = p2p.Message(s.rank, tag, kind, payload, datatype, record)
        rendezvous = sync or world.send_mode == 'rendezvous'
        with world.lock:
            world.raise_if_broken(s.world_rank)
            request = p2p.post_send(world, s.ctx, s.group[dest], msg,
                                    rendezvous)
            if world.finished[s.group[dest]]:
                # Certain already: nobody will ever receive it.
                report = Report.from_world(world, kind='unmatched')
                world.break_with(UnmatchedMessageError(report.format(
                    'rank {} sent a message to rank {}, which has already '
                    'finished'.format(s.world_rank, s.group[dest])),
                    report=report))
                world.raise_if_broken(s.world_rank)
            return request

    def _irecv(self, op, kind, buf, source, tag, block=False):
        s = self._s
        if type(source) is not int or not 0 <= source < len(s.group):
            source = self._peer(source, 'source', True)
        if type(tag) is not int or tag < 0:
            tag = self._tag(tag, True)
        record = CallRecord(op, s.world_rank, source, tag, s.name,
                            raw=capture(3))
        world = s.world
        request = p2p.RecvRequest(world, s.world_rank, record, source, tag,
                                  kind, buf, s.name)
        request.group = s.group
        if source == PROC_NULL:
            request.message = p2p.Message(
                PROC_NULL, ANY_TAG, kind,
                pickle.dumps(None) if kind == p2p.OBJECT else
                buf.data[:0].copy(), buf and buf.datatype, record)
            # Nothing was received: the status counts 0 bytes, even for
            # an object receive (whose payload is a pickled None).
            request.message.nbytes = 0
            return request
        with world.lock:
            world.raise_if_broken(s.world_rank)
            p2p.post_recv(world, s.ctx, request)
            if block:
                # One lock round trip for a blocking receive.
                world.block(s.world_rank, request._ready, record,
                            request._hopeless)
        return request

    def _send_buffer(self, op, buf, dest, tag, sync=False):
        b = parse(buf, op)
        return self._isend(op, p2p.BUFFER, b.data[:b.count].copy(),
                           b.datatype,
                           dest, tag, sync)

    def send(self, obj, dest, tag=0):
        """Send a picklable object (eager: returns at once)."""
        self._isend('send', p2p.OBJECT, pickle.dumps(obj, _PICKLE), None,
                    dest, tag).wait()

    def ssend(self, obj, dest, tag=0):
        """Send an object; return only once it is received."""
        self._isend('ssend', p2p.OBJECT, pickle.dumps(obj, _PICKLE), None,
                    dest, tag, sync=True).wait()

    def isend(self, obj, dest, tag=0):
        """Start sending an object; ``wait()`` returns None."""
        return self._isend('isend', p2p.OBJECT, pickle.dumps(obj, _PICKLE),
                           None, dest, tag)

    def issend(self, obj, dest, tag=0):
        """Start a synchronous object send."""
        return self._isend('issend', p2p.OBJECT,
                           pickle.dumps(obj, _PICKLE), None, dest, tag,
                           sync=True)

    def recv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Receive and return an object."""
        return self._irecv('recv', p2p.OBJECT, None, source, tag,
                           True)._complete(status)

    def irecv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG):
        """Start receiving an object; ``wait()`` returns it."""
        return self._irecv('irecv', p2p.OBJECT, None, source, tag)

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None,
                 source=ANY_SOURCE, recvtag=ANY_TAG, status=None):
        """Send ``sendobj`` to ``dest`` and receive an object."""
        sreq = self._isend('sendrecv', p2p.OBJECT,
                           pickle.dumps(sendobj, _PICKLE), None, dest,
                           sendtag)
        obj = self._irecv('sendrecv', p2p.OBJECT, None, source,
                          recvtag).wait(status)
        sreq.wait()
        return obj

    def Send(self, buf, dest, tag=0):  # noqa: N802
        """Send a buffer (copied now)."""
        self._send_buffer('Send', buf, dest, tag).Wait()

    def Ssend(self, buf, dest, tag=0):  # noqa: N802
        """Send a buffer; return once it is received."""
        self._send_buffer('Ssend', buf, dest, tag, sync=True).Wait()

    def Isend(self, buf, dest, tag=0):  # noqa: N802
        """Start sending a buffer."""
        return self._send_buffer('Isend', buf, dest, tag)

    def Issend(self, buf, dest, tag=0):  # noqa: N802
        """Start a synchronous buffer send."""
        return self._send_buffer('Issend', buf, dest, tag, sync=True)

    def Recv(self, buf, source=ANY_SOURCE, tag=ANY_TAG,  # noqa: N802
             status=None):
        """Receive into a buffer."""
        b = parse(buf, 'Recv buffer')
        self._irecv('Recv', p2p.BUFFER, b, source, tag, True)._complete(
            status)

    def Irecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG):  # noqa: N802
        """Start receiving into a buffer."""
        b = parse(buf, 'Irecv buffer')
        return self._irecv('Irecv', p2p.BUFFER, b, source, tag)

    def Sendrecv(self, sendbuf, dest, sendtag=0,  # noqa: N802
                 recvbuf=None, source=ANY_SOURCE, recvtag=ANY_TAG,
                 status=None):
        """Send one buffer and receive another."""
        sreq = self._send_buffer('Sendrecv', sendbuf, dest, sendtag)
        b = parse(recvbuf, 'Sendrecv receive buffer')
        self._irecv('Sendrecv', p2p.BUFFER, b, source, recvtag).Wait(status)
        sreq.Wait()

    def Sendrecv_replace(self, buf, dest, sendtag=0,  # noqa: N802
                         source=ANY_SOURCE, recvtag=ANY_TAG, status=None):
        """Send a buffer, then receive into the same buffer."""
        sreq = self._send_buffer('Sendrecv_replace', buf, dest, sendtag)
        b = parse(buf, 'Sendrecv_replace buffer')
        self._irecv('Sendrecv_replace', p2p.BUFFER, b, source,
                    recvtag).Wait(status)
        sreq.Wait()

    def _probe(self, op, source, tag, status, block):
        s = self._s
        source = self._peer(source, 'source', True)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return True
        world = s.world
        found = []

        def arrived():
            msg = p2p.find_message(world, s.world_rank, s.ctx, source, tag,
                                   False)
            if msg is not None:
                found.append(msg)
            return msg is not None

        with world.lock:
            world.raise_if_broken(s.world_rank)
            if block:
                world.block(s.world_rank, arrived, CallRecord(
                    op, s.world_rank, source, tag, s.name, raw=capture(3)))
            elif not arrived():
                world.note_poll(s.world_rank, CallRecord(
                    op, s.world_rank, source, tag, s.name, raw=capture(3)))
                return False
        msg = found[-1]
        if status is not None:
            status._fill(msg.source, msg.tag, msg.nbytes)
        return True

    def Probe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):  # noqa
        """Block until a matching message is queued."""
        return self._probe('Probe', source, tag, status, True)

    def Iprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):  # noqa
        """True when a matching message is queued."""
        return self._probe('Iprobe', source, tag, status, False)

    def probe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Block until a matching message is queued."""
        return self._probe('probe', source, tag, status, True)

    def iprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """True when a matching message is queued."""
        return self._probe('iprobe', source, tag, status, False)

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

        slot = coll.arrive(s, seq, op, (), (color, key), record, combine)
        coll.wait_ready(s, slot, record)
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
        slot = coll.arrive(s, seq, 'Dup', (), None, record)
        coll.wait_ready(s, slot, record)
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


def _install_collectives():
    from simulator import comm_coll, comm_scan
    for module in (comm_coll, comm_scan):
        for name in module.__all__:
            setattr(Comm, name, getattr(module, name))


_install_collectives()
