"""Point-to-point matching: envelopes, FIFO order, eager and rendezvous.

Each world rank has, per communicator context, a queue of arrived but
unreceived messages and a queue of posted but unmatched receives. A send
first looks for a posted receive (in posting order), otherwise queues;
a receive first looks for a queued message (in arrival order), otherwise
posts. Scanning in order gives MPI's non-overtaking rule per (source, tag).
Payloads are copied by the sender at call time; the receiver copies into
its own buffer outside the world lock.
"""
import collections
import pickle

from simulator.constants import ANY_SOURCE, ANY_TAG, ERR_TRUNCATE, PROC_NULL
from simulator.constants import Exception as MPIException
from simulator.errors import MessageMismatchError
from simulator.request import Request

__all__ = ['Message', 'SendRequest', 'RecvRequest', 'post_send',
           'post_recv', 'find_message', 'OBJECT', 'BUFFER']

PROBES = ('Probe', 'probe')
OBJECT = 'object'
BUFFER = 'buffer'


class Message:
    """An envelope (source, tag, context) and a private payload copy."""

    __slots__ = ('source', 'tag', 'kind', 'payload', 'datatype', 'record',
                 'send_request', 'nbytes')

    def __init__(self, source, tag, kind, payload, datatype, record):
        self.source = source
        self.tag = tag
        self.kind = kind
        self.payload = payload
        self.datatype = datatype
        self.record = record
        self.send_request = None
        self.nbytes = len(payload) if kind == OBJECT else payload.nbytes

    def matches(self, source, tag):
        return (source == ANY_SOURCE or source == self.source) and \
            (tag == ANY_TAG or tag == self.tag)


class SendRequest(Request):
    """Done at once in eager mode, when received in rendezvous mode."""

    def __init__(self, world, rank, record):
        super().__init__(world, rank, record)
        self.matched = False
        self.dest = None

    def _ready(self):
        return self.matched

    def _hopeless(self):
        return not self.matched and self._world.finished[self.dest]


class RecvRequest(Request):
    """A posted receive; ``message`` is set when a send matches it."""

    def __init__(self, world, rank, record, source, tag, kind, buf,
                 comm_name):
        super().__init__(world, rank, record)
        self.source = source
        self.tag = tag
        self.kind = kind
        self.buf = buf
        self.comm_name = comm_name
        self.message = None
        self.ctx = None         # set while posted (unmatched)
        self.cancelled = False
        self.group = ()         # comm rank -> world rank

    def _ready(self):
        return self.message is not None or self.cancelled

    def _hopeless(self):
        finished = self._world.finished
        if self._ready() or self.source == PROC_NULL:
            return False
        if self.source != ANY_SOURCE:
            return finished[self.group[self.source]]
        return all(finished[p] for p in self.group if p != self._rank)

    def Cancel(self):  # noqa: N802
        """Withdraw the receive if no message has matched it yet."""
        world = self._world
        with world.lock:
            if self.message is not None or self.cancelled:
                return
            posted = world.posted[self._rank].get(self.ctx, ())
            if self in posted:
                posted.remove(self)
                self.cancelled = True
                world.version += 1

    def _finish(self, status):
        if self.cancelled:
            if status is not None:
                status.cancelled = True
            return None
        msg = self.message
        key = (self._rank, self.comm_name, msg.source, msg.tag)
        recent = self._world.delivered.get(key)
        if recent is None:
            recent = self._world.delivered[key] = collections.deque(
                maxlen=4)
        recent.append(msg.record)
        if status is not None:
            status._fill(msg.source, msg.tag, msg.nbytes)
        if msg.kind != self.kind:
            raise MessageMismatchError(
                'rank {} received with {} a {} message from rank {} (tag '
                '{}, comm {}) sent by {}: object (lowercase) and buffer '
                '(capitalised) calls do not mix'.format(
                    self.record.rank, self.record.op, msg.kind, msg.source,
                    msg.tag, self.comm_name, msg.record.describe()))
        if msg.kind == OBJECT:
            return pickle.loads(msg.payload)
        return self._deliver_buffer(msg)

    def _deliver_buffer(self, msg):
        buf = self.buf
        data = msg.payload
        if buf.datatype.dtype != data.dtype:
            raise MessageMismatchError(
                'rank {} {}: receive buffer holds {} ({}) but the message '
                'from rank {} (tag={}, comm={}) holds {} ({}); sent by {} '
                'at {}'.format(
                    self.record.rank, self.record.describe(),
                    buf.datatype.name, buf.datatype.dtype, msg.source,
                    msg.tag, self.comm_name, msg.datatype.name, data.dtype,
                    msg.record.op, msg.record.where))
        if data.size > buf.count:
            raise MPIException(ERR_TRUNCATE, 'rank {}: {} of {} elements '
                               'cannot hold the {} sent by rank {} with tag '
                               '{} on {}'.format(
                                   self.record.rank, self.record.op,
                                   buf.count, data.size, msg.source,
                                   msg.tag, self.comm_name))
        buf.data[:data.size] = data
        return None


def post_send(world, ctx, dest, msg, rendezvous):
    """Deliver or queue ``msg`` for world rank ``dest`` (lock held)."""
    world.version += 1
    request = SendRequest(world, msg.record.rank, msg.record)
    request.dest = dest
    posted = world.posted[dest].get(ctx)
    if posted:
        for i, recv in enumerate(posted):
            if msg.matches(recv.source, recv.tag):
                del posted[i]
                recv.message = msg
                request.matched = request._done = True
                world.wake(dest)
                return request
    world.unexpected[dest].setdefault(ctx, []).append(msg)
    if rendezvous:
        msg.send_request = request
    else:
        request.matched = request._done = True
    # A rank blocked in Probe waits for queued messages too.
    waiting = world.waiting[dest]
    if waiting is not None and waiting.op in PROBES:
        world.wake(dest)
    return request


def find_message(world, rank, ctx, source, tag, remove):
    """The first queued message for ``rank`` matching (source, tag)."""
    queue = world.unexpected[rank].get(ctx)
    if queue:
        for i, msg in enumerate(queue):
            if msg.matches(source, tag):
                if remove:
                    del queue[i]
                return msg
    return None


def post_recv(world, ctx, request):
    """Match ``request`` with a queued message or post it (lock held)."""
    rank = request._rank
    world.version += 1
    msg = find_message(world, rank, ctx, request.source, request.tag, True)
    if msg is None:
        request.ctx = ctx
        world.posted[rank].setdefault(ctx, []).append(request)
        return request
    request.message = msg
    sender = msg.send_request
    if sender is not None:
        sender.matched = True
        world.wake(sender._rank)
    return request
