"""Point-to-point methods of ``Comm`` (objects and buffers), as a mixin.

Object methods (lowercase) pickle like mpi4py; buffer methods
(capitalised) take mpi4py buffer specs and copy the data at call time.
Matching is the engine's (:mod:`simulator.engine.p2p`); this module turns
payloads into messages and messages back into objects or buffer contents,
with mpi4py's errors. The mixin relies on ``Comm``'s ``_s`` (the rank's
:class:`~simulator.engine.communicator.CommState`) and argument checks.
"""
import sys
import warnings

import numpy as np

from simulator.engine import activity, p2p
from simulator.engine.reports import Report, register_explainer
from simulator.engine.world import EAGER_BYTES
from simulator.engine.buffering import note_eager_send
from simulator.engine.trace import CallRecord, capture, user_frame
from simulator.errors import (BufferedExchangeWarning,
                              BufferModifiedError, MessageMismatchError,
                              OverlappingBuffersError,
                              UnmatchedMessageError)
from simulator.engine.actors import current
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, BSEND_OVERHEAD,
                                     ERR_BUFFER, ERR_TRUNCATE)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import PROC_NULL
from simulator.mpi import pickling
from simulator.mpi.cargs import INT_MAX as _INT_MAX
from simulator.mpi.msgspec import held_bytes, parse_p2p, still_holds
from simulator.mpi.request import (ProcNullRequest, Request, check_status,
                                   track)

__all__ = ['PointToPoint', 'OBJECT', 'BUFFER', 'SendRequest', 'checked_send',
           'guard_receive', 'replace_peer', 'wait_for_buffered_sends']

OBJECT = 'object'
BUFFER = 'buffer'
# Sends that complete into the attached buffer, never waiting for their
# receive (Bsend_init is Send_init here: its starts are standard sends).
_BUFFERED = frozenset(('Bsend', 'Ibsend', 'bsend', 'ibsend'))


def replace_peer(dest, source):
    """The peer mpi4py reads a Sendrecv_replace buffer for: the source,
    or the destination when the source is PROC_NULL."""
    return dest if source == PROC_NULL else source


def checked_send(request, b, sent):
    """``request`` (the :class:`SendRequest` of a send of buffer ``b``,
    whose data ``sent`` went out), now checking the caller's memory when
    it completes; as it is where ``b`` is a packed copy, not that
    memory."""
    if type(request) is SendRequest and b.scatter is None:
        request._memory, request._sent = b.data[:b.count], sent
    return request


def _user_memory(b):
    """The caller's memory that buffer ``b`` stands for, or None where
    ``b`` is a packed copy (a derived datatype's) or empty."""
    if b is None or b.scatter is not None or not b.count:
        return None
    return b.data[:b.count]


def _shares(a, b):
    if not np.may_share_memory(a, b):
        return False
    try:
        return np.shares_memory(a, b, max_work=1000)
    except np.exceptions.TooHardError:
        return False        # not provably shared: say nothing


def _owner(memory):
    """What finally holds ``memory``'s bytes: only arrays with the same
    owner can overlap, so each call compares with those alone (a rank
    with thousands of pending receives checks in constant time)."""
    while isinstance(memory, np.ndarray) and memory.base is not None:
        memory = memory.base
    return id(memory)


def check_overlap(world, rank, memory, record, verb):
    """Raise if ``memory`` (a call's buffer; ``verb``: what the call does
    with it, 'sends from') is memory a pending receive of ``rank``
    writes into."""
    by_owner = world.pending_receives.get(rank)
    if not by_owner or memory is None:
        return
    pending = by_owner.get(_owner(memory))
    if not pending:
        return
    pending[:] = [p for p in pending if not p[0]._done]
    for request, theirs in pending:
        if _shares(memory, theirs):
            raise OverlappingBuffersError(
                'rank {}\'s {} {} memory that its pending {} receives '
                'into: MPI forbids a buffer in two operations while one is '
                'pending (what ends up there, or what is sent, depends on '
                'timing); use separate buffers or wait for the receive '
                'first'.format(rank, record.describe(), verb,
                               request._record.describe()))


def watch_receive(world, rank, request, b):
    """Check a non-blocking receive's buffer against the rank's pending
    receives, then keep it among them."""
    memory = _user_memory(b)
    if memory is None:
        return request
    check_overlap(world, rank, memory, request._record, 'receives into')
    world.pending_receives.setdefault(rank, {}).setdefault(
        _owner(memory), []).append((request, memory))
    return guard_receive(request, b)


def guard_receive(request, b):
    """``request`` (a non-blocking receive into buffer ``b``), made to
    check when it completes that the program left ``b`` alone meanwhile:
    the simulator delivers at completion, where a real MPI may already
    have written the message, which a write of the program's clobbers
    (or overwrites, by timing)."""
    memory = _user_memory(b)
    if memory is not None and request._activity.source != PROC_NULL:
        request._posted = (memory, held_bytes(memory))
    return request


class SendRequest(Request):
    """A non-blocking send. With ``memory`` (a buffer send's) the caller's
    buffer must still hold what was ``sent`` when it completes (MPI
    forbids writing it before; the simulator copies at the call, so a
    write would go unseen here and be sent or not under a real MPI, by
    message size and timing). A rendezvous send's virtual time is
    charged when it completes."""

    __module__ = 'simulator.mpi'

    def __init__(self, send, memory, sent):
        super().__init__(send)
        self._memory = memory
        self._sent = sent

    def _finish(self, status):
        memory, sent = self._memory, self._sent
        self._memory = self._sent = None
        if memory is not None and memory.size and \
                not still_holds(memory, sent):
            record = self._activity.record
            raise BufferModifiedError(
                'rank {} wrote to the buffer of {} before the send '
                'completed: MPI forbids changing a pending send\'s buffer '
                '(a real MPI may send the old contents or the new, by '
                'message size and timing); wait for the request first'
                .format(record.rank, record.describe()))
        send = self._activity
        if send.rendezvous and send.world.clock is not None:
            send.world.clock.rendezvous_sent(send)
        return super()._finish(status)


class RecvRequest(Request):
    """A receive: on completion the message becomes an object (lowercase
    calls) or is copied into the receive buffer."""

    __module__ = 'simulator.mpi'

    def __init__(self, recv, kind, buf):
        super().__init__(recv)
        self._kind = kind
        self._buf = buf
        self._posted = None     # (the buffer, its bytes at the post)

    def Cancel(self):
        """Withdraw the receive if no message has matched it yet."""
        recv = self._activity
        world = recv.world
        with world.lock:
            if world.schedule is None:
                p2p.cancel(recv)
            else:
                # Whether a message matched first is timing: cancel at
                # the next fence, where the schedule's state is settled.
                world.schedule.await_choice(
                    world, recv.rank, recv.record,
                    lambda: [p2p.cancel(recv)], poll=True)

    def _finish(self, status):
        recv = self._activity
        if recv.cancelled:
            if status is not None:
                status.cancelled = True
            return None
        msg = recv.message
        if recv.world.clock is not None:
            recv.world.clock.receive(
                recv.rank, msg.record, msg.nbytes,
                recv.record if msg.send is not None and msg.send.rendezvous
                else None)
        if status is not None:
            status._fill(msg.source, msg.tag, msg.nbytes)
        if msg.kind == BUFFER and self._kind == OBJECT and \
                msg.payload.dtype.itemsize == 1:
            # mpi4py's recv unpickles whatever bytes arrive: an empty
            # message is None, a byte buffer holding a pickle its object.
            data = msg.payload.tobytes()
            self._fit(msg, data)
            return pickling.loads(data) if data else None
        if msg.kind != self._kind:
            raise MessageMismatchError(
                'rank {} received with {} a {} message from rank {} (tag '
                '{}, comm {}) sent by {}: object (lowercase) and buffer '
                '(capitalised) calls do not mix'.format(
                    recv.record.rank, recv.record.op, msg.kind, msg.source,
                    msg.tag, recv.comm_name, msg.record.describe()))
        if msg.kind == OBJECT:
            self._fit(msg, msg.payload)
            return pickling.loads(msg.payload)
        posted, self._posted = self._posted, None
        touched = posted is not None and not still_holds(*posted)
        self._deliver_buffer(msg)
        if touched:
            record = recv.record
            raise BufferModifiedError(
                'rank {} wrote to the buffer of {} before the receive '
                'completed: MPI forbids touching a pending receive\'s '
                'buffer (a real MPI may already have written the message '
                'there, and the write clobbers it, or write it later, '
                'over the write, by message size and timing); wait for the '
                'request first (the buffer now holds the message from rank '
                '{}, tag {})'.format(record.rank, record.describe(),
                                      msg.source, msg.tag))
        return None

    def _fit(self, msg, data):
        """The object receive's room (an ``_ObjectRoom``), if sized, takes
        the pickle ``data``; MPI_ERR_TRUNCATE if it is too small."""
        room = self._buf
        if room is None or msg.source == PROC_NULL:
            return          # (from PROC_NULL: nothing arrives)
        if len(data) > room.nbytes:
            recv = self._activity
            raise _truncated(recv.record, msg, recv.comm_name, room.nbytes,
                             len(data), 'bytes ({})'.format(room.source))
        room.hold(data)

    def _deliver_buffer(self, msg):
        buf = self._buf
        data = msg.payload
        record = self._activity.record
        comm_name = self._activity.comm_name
        if buf.datatype._dtype != data.dtype and (
                _untyped(buf.datatype) or _untyped(msg.datatype)):
            # MPI_BYTE / MPI_PACKED carry any data as its bytes.
            raw = data.view(np.uint8).reshape(-1)
            room = buf.data[:buf.count].view(np.uint8).reshape(-1)
            if raw.size > room.size:
                raise _truncated(record, msg, comm_name, room.size,
                                 raw.size, 'bytes')
            room[:raw.size] = raw
            buf.flush()
            return
        if buf.datatype._dtype != data.dtype:
            raise MessageMismatchError(
                'rank {} {}: receive buffer holds {} ({}) but the message '
                'from rank {} (tag={}, comm={}) holds {} ({}); sent by {} '
                'at {}'.format(
                    record.rank, record.describe(), buf.datatype.name,
                    buf.datatype._dtype, msg.source, msg.tag, comm_name,
                    msg.datatype.name, data.dtype, msg.record.op,
                    msg.record.where))
        if data.size > buf.count:
            raise _truncated(record, msg, comm_name, buf.count, data.size,
                             'elements')
        buf.data[:data.size] = data
        buf.flush()


def _take_buffer_space(world, op, dest, record, msg):
    """Hold room in the attached buffer (Attach_buffer) for ``msg``, a
    buffered send too big to go eagerly: as in Open MPI, that copy stays
    there until the message is received; MPI_ERR_BUFFER without room.
    (Open MPI sends eager-sized ones at once, with no buffer at all.)"""
    local = current().local
    attached = local.get('mpi.buffer')
    size = 0 if attached is None else memoryview(attached).nbytes
    held = [(copy, nbytes) for copy, nbytes in local.get('mpi.buffer.held',
                                                          ())
            if not copy.matched]
    used = sum(nbytes + BSEND_OVERHEAD for _, nbytes in held)
    if used + msg.nbytes + BSEND_OVERHEAD > size:
        raise MPIException(ERR_BUFFER, '{}: {} bytes (+{} overhead) to rank '
                           '{}, above the eager limit, need room in the '
                           'attached buffer: {}'.format(
                               op, msg.nbytes, BSEND_OVERHEAD, dest,
                               'none is attached (MPI.Attach_buffer)'
                               if attached is None else '{} of its {} bytes '
                               'are held by {} message(s) not yet '
                               'received'.format(used, size, len(held))))
    # Matched (and its rank woken) when the message is received.
    copy = msg.send = p2p.Send(world, record.rank, record, dest)
    local['mpi.buffer.held'] = held + [(copy, msg.nbytes)]


def wait_for_buffered_sends(op):
    """Block until the calling rank's buffered sends that hold room in
    its attached buffer are received, as ``Detach_buffer`` does; they
    then no longer hold it."""
    context = current()
    world = context.world
    copies = [copy for copy, _ in context.local.pop('mpi.buffer.held', ())
              if not copy.matched]
    if not copies:
        return
    record = CallRecord(op, context.rank, detail='waits until its {} '
                        'buffered message(s) to rank(s) {} are received'
                        .format(len(copies), sorted({c.dest for c in copies})),
                        raw=capture(2))
    with world.lock:
        world.block(lambda: all(c.matched for c in copies), record,
                    lambda: any(c.hopeless() for c in copies))


class _ObjectRoom:
    """What an object receive (``recv(buf)``, ``irecv``) receives into,
    as mpi4py sizes it: ``buf`` bytes, or a writable buffer (which then
    holds the pickle); no ``buf``: ``mpi4py.rc.irecv_bufsz`` bytes."""

    def __init__(self, buf):
        self._memory = None
        if buf is None:
            self.nbytes = _irecv_bufsz()
            self.source = 'mpi4py.rc.irecv_bufsz, irecv\'s default'
        elif isinstance(buf, (int, np.integer)):
            self.nbytes = int(buf)
            self.source = 'the buf argument'
        else:
            self._memory = memoryview(buf).cast('B')
            if self._memory.readonly:
                raise BufferError('object receive: buf is read-only')
            self.nbytes = self._memory.nbytes
            self.source = 'the buf argument'

    def hold(self, data):
        if self._memory is not None:
            self._memory[:len(data)] = data


def _irecv_bufsz():
    rc = getattr(sys.modules.get('mpi4py'), 'rc', None)
    return int(getattr(rc, 'irecv_bufsz', 32768))


def _truncated(record, msg, comm_name, room, sent, unit):
    """MPI_ERR_TRUNCATE for a receive of ``room`` ``unit`` that the message
    of ``sent`` overflows, naming both ranks, the tag and the communicator."""
    return MPIException(ERR_TRUNCATE, 'rank {}: {} of {} {} cannot hold the '
                        '{} sent by rank {} with tag {} on {}'.format(
                            record.rank, record.op, room, unit, sent,
                            msg.source, msg.tag, comm_name))


def _untyped(datatype):
    return datatype is not None and datatype.name in ('MPI_BYTE',
                                                      'MPI_PACKED')


# Blocking standard sends: under the 'openmpi' send mode, one still
# pending in a deadlock waits because its message is above the eager limit.
_STANDARD = frozenset(('Send', 'send', 'Rsend'))


@register_explainer
def _explain_eager_limit(report):
    """The hint for a deadlock where a blocking standard send waits for
    its receive because of its size (Open MPI's eager limit)."""
    if report.kind != 'deadlock' or report.send_mode != 'openmpi':
        return None
    waiting = {id(r): rank for rank, r in report.pending.items()
               if r.op in _STANDARD}
    sizes = [(waiting[id(m.record)], m.record.op, m.nbytes)
             for _, m in report.unmatched if id(m.record) in waiting]
    if not sizes:
        return None
    rank, op, nbytes = sizes[0]
    return ('rank {}\'s {} of {} bytes waits for its receive: Open MPI 5 '
            'buffers a standard send only up to its eager limit ({} bytes '
            'to a rank of the same node, {} to another node, {} to itself) '
            'and the simulator does the same; post the receive first '
            '(Irecv), or use Sendrecv or Isend'.format(
                rank, op, nbytes, EAGER_BYTES['node'],
                EAGER_BYTES['network'], EAGER_BYTES['self']))


# Blocking sends that MPI lets wait for their receive (a buffered one,
# Bsend, never does; a ready one's receive is posted already).
_UNBUFFERED_BY_MPI = frozenset(('Send', 'send'))


def _warn_unsafe(text, record):
    filename, lineno, _ = user_frame(record.frames)
    warnings.warn_explicit(BufferedExchangeWarning(text),
                           BufferedExchangeWarning, filename, lineno)


class PointToPoint:
    """Sends, receives and probes; mixed into ``simulator.mpi.Comm``."""

    def _isend(self, op, kind, payload, datatype, dest, tag, sync=False,
                block=False):
        """Post a send; its Request, or with ``block`` wait for it to
        complete (in the same lock hold) and return None."""
        s = self._s
        if type(dest) is not int or not 0 <= dest < len(s.peers):
            dest = self._peer(dest, 'destination', False)
        if type(tag) is not int or not 0 <= tag <= _INT_MAX:
            tag = self._tag(tag, False)
        record = CallRecord(op, s.world_rank, dest, tag, s.name,
                            raw=capture(3))
        world = s.world
        if dest == PROC_NULL:
            return ProcNullRequest()
        msg = p2p.Message(s.rank, tag, kind, payload, datatype, record,
                          len(payload) if kind == OBJECT else
                          payload.nbytes)
        # A buffered send never waits; a standard one as the world says.
        rendezvous = sync or (op not in _BUFFERED and world.send_waits(
            s.world_rank, s.peers[dest], msg.nbytes))
        if world.clock is not None:
            world.clock.send(record, s.peers[dest], msg.nbytes, rendezvous)
        with world.lock:
            world.raise_if_broken(s.world_rank)
            if op in _BUFFERED and world.above_eager_limit(
                    s.world_rank, s.peers[dest], msg.nbytes):
                _take_buffer_space(world, op, s.peers[dest], record, msg)
            send = p2p.post_send(world, s.ctx, s.peers[dest], msg,
                                 rendezvous)
            unsafe = None
            if block and not rendezvous and op in _UNBUFFERED_BY_MPI:
                unsafe = note_eager_send(world, s.world_rank,
                                         s.peers[dest], msg)
            if world.finished[s.peers[dest]] and world.schedule is None:
                # Certain already: nobody will ever receive it.
                report = Report.from_world(world, kind='unmatched')
                world.break_with(UnmatchedMessageError(report.format(
                    'rank {} sent a message to rank {}, which has already '
                    'finished'.format(s.world_rank, s.peers[dest])),
                    report=report))
                world.raise_if_broken(s.world_rank)
            if block:
                # One lock round trip for a blocking send (an eager one
                # is complete already).
                world.block(send.ready, record, send.hopeless)
        if block:
            if rendezvous and world.clock is not None:
                world.clock.rendezvous_sent(send)
            if unsafe is not None:
                _warn_unsafe(unsafe, record)
            return None
        return SendRequest(send, None, None)

    def _irecv(self, op, kind, buf, source, tag, block=False):
        s = self._s
        if type(source) is not int or not 0 <= source < len(s.peers):
            source = self._peer(source, 'source', True)
        if type(tag) is not int or not 0 <= tag <= _INT_MAX:
            tag = self._tag(tag, True)
        record = CallRecord(op, s.world_rank, source, tag, s.name,
                            raw=capture(3))
        world = s.world
        if world.clock is not None:
            world.clock.stamp(record)
        recv = p2p.Recv(world, s.world_rank, record, source, tag, s.peers,
                        s.name)
        request = RecvRequest(recv, kind, buf)
        if source == PROC_NULL:
            # Nothing is received: the status counts 0 bytes, even for
            # an object receive (whose payload is a pickled None).
            recv.message = p2p.Message(
                PROC_NULL, ANY_TAG, kind,
                pickling.dumps(None) if kind == OBJECT else
                buf.data[:0].copy(), None if kind == OBJECT else
                buf.datatype, record, 0)
            return request
        with world.lock:
            world.raise_if_broken(s.world_rank)
            p2p.post_recv(world, s.ctx, recv)
            if block:
                # One lock round trip for a blocking receive.
                world.block(recv.ready, record, recv.hopeless)
        return request

    def _check_pending(self, op, b, peer, tag, verb):
        """Run ``check_overlap`` for the caller's ``op`` on buffer ``b``
        (its record made only while the rank has pending receives)."""
        s = self._s
        if s.world.pending_receives:
            check_overlap(s.world, s.world_rank, _user_memory(b),
                          CallRecord(op, s.world_rank, peer, tag, s.name,
                                     raw=capture(3)), verb)

    def _send_buffer(self, op, buf, dest, tag, sync=False, block=False,
                     checked=False):
        """Send ``buf``; ``checked``: the caller's request, whose buffer
        must be left alone until it completes (:class:`SendRequest`)."""
        b = parse_p2p(buf, dest, op, packed=True)
        self._check_pending(op, b, dest, tag, 'sends from')
        sent = held_bytes(b.data[:b.count])
        request = self._isend(op, BUFFER, sent, b.datatype, dest, tag, sync,
                              block)
        return track(checked_send(request, b, sent)) if checked \
            else request

    def send(self, obj, dest, tag=0):
        """Send a picklable object (returns once buffered or received)."""
        self._isend('send', OBJECT, pickling.dumps(obj), None,
                    dest, tag, block=True)

    def ssend(self, obj, dest, tag=0):
        """Send an object; return only once it is received."""
        self._isend('ssend', OBJECT, pickling.dumps(obj), None,
                    dest, tag, sync=True, block=True)

    def isend(self, obj, dest, tag=0):
        """Start sending an object; ``wait()`` returns None."""
        return track(self._isend('isend', OBJECT, pickling.dumps(obj),
                                 None, dest, tag))

    def issend(self, obj, dest, tag=0):
        """Start a synchronous object send."""
        return track(self._isend('issend', OBJECT, pickling.dumps(obj),
                                 None, dest, tag, sync=True))

    def recv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Receive and return an object (into ``buf``, deprecated: the
        pickle must fit it)."""
        if status is not None:
            check_status(status)
        room = None
        if buf is not None:
            warnings.warn("the 'buf' argument is deprecated", UserWarning,
                          stacklevel=2)
            room = _ObjectRoom(buf)
        return self._irecv('recv', OBJECT, room, source, tag,
                           True)._complete(status)

    def irecv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG):
        """Start receiving an object; ``wait()`` returns it. The pickle
        must fit ``buf`` (bytes, or a writable buffer); by default
        ``mpi4py.rc.irecv_bufsz`` bytes, as in mpi4py."""
        return track(self._irecv('irecv', OBJECT, _ObjectRoom(buf), source,
                                 tag))

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None,
                 source=ANY_SOURCE, recvtag=ANY_TAG, status=None):
        """Send ``sendobj`` to ``dest`` and receive an object."""
        if status is not None:
            check_status(status)
        room = None
        if recvbuf is not None:
            warnings.warn("the 'buf' argument is deprecated", UserWarning,
                          stacklevel=2)
            room = _ObjectRoom(recvbuf)
        sreq = self._isend('sendrecv', OBJECT,
                           pickling.dumps(sendobj), None, dest,
                           sendtag)
        obj = self._irecv('sendrecv', OBJECT, room, source,
                          recvtag).wait(status)
        sreq.wait()
        return obj

    def Send(self, buf, dest, tag=0):
        """Send a buffer (copied now)."""
        self._send_buffer('Send', buf, dest, tag, block=True)

    def Bsend(self, buf, dest, tag=0):
        """Buffered send: returns at once (never out of buffer)."""
        self._send_buffer('Bsend', buf, dest, tag, block=True)

    def Rsend(self, buf, dest, tag=0):
        """Ready send: a standard send here."""
        self._send_buffer('Rsend', buf, dest, tag, block=True)

    def Ibsend(self, buf, dest, tag=0):
        """Start a buffered send."""
        return self._send_buffer('Ibsend', buf, dest, tag,
                                 checked=True)

    def Irsend(self, buf, dest, tag=0):
        """Start a ready send."""
        return self._send_buffer('Irsend', buf, dest, tag,
                                 checked=True)

    def bsend(self, obj, dest, tag=0):
        """Buffered object send: returns at once."""
        self._isend('bsend', OBJECT, pickling.dumps(obj), None,
                    dest, tag, block=True)

    def ibsend(self, obj, dest, tag=0):
        """Start a buffered object send."""
        return track(self._isend('ibsend', OBJECT, pickling.dumps(obj),
                                 None, dest, tag))

    def Ssend(self, buf, dest, tag=0):
        """Send a buffer; return once it is received."""
        self._send_buffer('Ssend', buf, dest, tag, sync=True, block=True)

    def Isend(self, buf, dest, tag=0):
        """Start sending a buffer."""
        return self._send_buffer('Isend', buf, dest, tag,
                                 checked=True)

    def Issend(self, buf, dest, tag=0):
        """Start a synchronous buffer send."""
        return self._send_buffer('Issend', buf, dest, tag, sync=True,
                                 checked=True)

    def Recv(self, buf, source=ANY_SOURCE, tag=ANY_TAG,
             status=None):
        """Receive into a buffer."""
        if status is not None:
            check_status(status)
        b = parse_p2p(buf, source, 'Recv buffer', writable=True,
                      packed=True)
        self._check_pending('Recv', b, source, tag, 'receives into')
        self._irecv('Recv', BUFFER, b, source, tag, True)._complete(status)

    def Irecv(self, buf, source=ANY_SOURCE, tag=ANY_TAG):
        """Start receiving into a buffer."""
        b = parse_p2p(buf, source, 'Irecv buffer', writable=True,
                      packed=True)
        s = self._s
        return track(watch_receive(
            s.world, s.world_rank,
            self._irecv('Irecv', BUFFER, b, source, tag), b))

    def Sendrecv(self, sendbuf, dest, sendtag=0,
                 recvbuf=None, source=ANY_SOURCE, recvtag=ANY_TAG,
                 status=None):
        """Send one buffer and receive another."""
        if status is not None:
            check_status(status)
        # mpi4py reads the receive buffer first: a bad one sends nothing.
        b = parse_p2p(recvbuf, source, 'Sendrecv receive buffer',
                      writable=True, packed=True)
        sreq = self._send_buffer('Sendrecv', sendbuf, dest, sendtag)
        self._irecv('Sendrecv', BUFFER, b, source, recvtag).Wait(status)
        sreq.Wait()

    def Sendrecv_replace(self, buf, dest, sendtag=0,
                         source=ANY_SOURCE, recvtag=ANY_TAG, status=None):
        """Send a buffer, then receive into the same buffer."""
        if status is not None:
            check_status(status)
        sreq = self._send_buffer('Sendrecv_replace', buf, dest, sendtag)
        b = parse_p2p(buf, replace_peer(dest, source),
                      'Sendrecv_replace buffer', writable=True, packed=True)
        self._irecv('Sendrecv_replace', BUFFER, b, source,
                    recvtag).Wait(status)
        sreq.Wait()

    def _probe(self, op, source, tag, status, block):
        if status is not None:
            check_status(status)
        s = self._s
        source = self._peer(source, 'source', True)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return True
        world = s.world
        record = CallRecord(op, s.world_rank, source, tag, s.name,
                            raw=capture(3))
        if world.schedule is not None:
            # Which message a probe sees is the schedule's choice.
            with world.lock:
                world.raise_if_broken(s.world_rank)
                msg = world.schedule.await_choice(
                    world, s.world_rank, record, lambda: p2p.candidates(
                        world, s.world_rank, s.ctx, source, tag,
                        world.posted[s.world_rank].get(s.ctx, ())),
                    poll=not block)
            if msg is None:
                return False
            if status is not None:
                status._fill(msg.source, msg.tag, msg.nbytes)
            return True
        found = []

        def arrived():
            msg = p2p.find_message(world, s.world_rank, s.ctx, source, tag,
                                   False)
            if msg is not None:
                found.append(msg)
            return msg is not None

        if block:
            activity.wait(activity.Condition(world, s.world_rank, record,
                                             arrived))
        elif not activity.test(activity.Condition(world, s.world_rank,
                                                  record, arrived)):
            return False
        msg = found[-1]
        if status is not None:
            status._fill(msg.source, msg.tag, msg.nbytes)
        return True

    def Probe(self, source=ANY_SOURCE, tag=ANY_TAG,
              status=None):
        """Block until a matching message is queued."""
        return self._probe('Probe', source, tag, status, True)

    def Iprobe(self, source=ANY_SOURCE, tag=ANY_TAG,
               status=None):
        """True when a matching message is queued."""
        return self._probe('Iprobe', source, tag, status, False)

    def probe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Block until a matching message is queued."""
        return self._probe('probe', source, tag, status, True)

    def iprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """True when a matching message is queued."""
        return self._probe('iprobe', source, tag, status, False)
