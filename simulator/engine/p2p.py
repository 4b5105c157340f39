"""Point-to-point matching: envelopes, FIFO order, eager and rendezvous.

Each world rank has, per communicator context, a queue of arrived but
unreceived messages and a queue of posted but unmatched receives. A send
first looks for a posted receive (in posting order), otherwise queues;
a receive first looks for a queued message (in arrival order), otherwise
posts. Scanning in order gives MPI's non-overtaking rule per (source, tag).
Under a schedule (:mod:`simulator.engine.schedule`) a receive from
``ANY_SOURCE`` is matched only at a fence, by the scheduler, and holds
back the messages it could take (:func:`candidates`, :func:`match`).

The engine never looks inside a payload: the facade copies it at send
time and interprets it (unpickles, copies into a buffer) on delivery.
Every function here runs with the world lock held.
"""
import collections

from simulator.engine.activity import Activity
from simulator.engine.buffering import note_received

__all__ = ['ANY_SOURCE', 'ANY_TAG', 'PROC_NULL', 'Message', 'Send', 'Recv',
           'post_send', 'post_recv', 'find_message', 'cancel', 'candidates',
           'recv_candidates', 'match', 'take_message']

# The wildcard and null peers, with MPI's (and Open MPI's) values.
ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2

PROBES = ('Probe', 'probe', 'Mprobe', 'mprobe')
_HISTORY = 4            # senders remembered per channel, for reports


class Message:
    """An envelope (source, tag) and the sender's private payload copy.

    ``kind`` labels the payload for the facade (object or buffer),
    ``nbytes`` is its size as a Status reports it, ``record`` the send's
    CallRecord; ``send`` the rendezvous Send still waiting for a receive.
    """

    __slots__ = ('source', 'tag', 'kind', 'payload', 'datatype', 'record',
                 'send', 'nbytes', 'received_by')

    def __init__(self, source, tag, kind, payload, datatype, record,
                 nbytes):
        self.source = source
        self.tag = tag
        self.kind = kind
        self.payload = payload
        self.datatype = datatype
        self.record = record
        self.send = None
        self.nbytes = nbytes
        self.received_by = None     # the Recv that took it (or True)

    def matches(self, source, tag):
        return (source == ANY_SOURCE or source == self.source) and \
            (tag == ANY_TAG or tag == self.tag)


class Send(Activity):
    """Ready at once in eager mode, when received in rendezvous mode.

    ``nbytes`` is the message's size; ``partner`` the CallRecord of the
    receive that matched a rendezvous send (its virtual post time is
    when the data can start to move).
    """

    __slots__ = ('matched', 'dest', 'nbytes', 'rendezvous', 'partner')

    def __init__(self, world, rank, record, dest, nbytes=0,
                 rendezvous=False):
        super().__init__(world, rank, record)
        self.matched = False
        self.dest = dest
        self.nbytes = nbytes
        self.rendezvous = rendezvous
        self.partner = None

    def ready(self):
        return self.matched

    def hopeless(self):
        return not self.matched and self.world.finished[self.dest]


class Recv(Activity):
    """A posted receive; ``message`` is set when a send matches it.

    ``group`` maps comm ranks to world ranks (to know whom it waits for),
    ``comm_name`` names the communicator in reports.
    """

    __slots__ = ('source', 'tag', 'group', 'comm_name', 'message', 'ctx',
                 'cancelled', 'posted_at')

    def __init__(self, world, rank, record, source, tag, group, comm_name):
        super().__init__(world, rank, record)
        self.source = source
        self.tag = tag
        self.group = group
        self.comm_name = comm_name
        self.message = None
        self.ctx = None         # set while posted (unmatched)
        self.cancelled = False
        self.posted_at = 0      # world.version when posted

    def ready(self):
        return self.message is not None or self.cancelled

    def hopeless(self):
        finished = self.world.finished
        if self.ready() or self.source == PROC_NULL:
            return False
        if self.source != ANY_SOURCE:
            needed = finished[self.group[self.source]]
        else:
            needed = all(finished[p] for p in self.group if p != self.rank)
        # Under a schedule a queued message may wait for a fence.
        return needed and not any(
            m.matches(self.source, self.tag)
            for m in self.world.unexpected[self.rank].get(self.ctx, ()))


def _remember(world, recv, msg):
    """Keep the sender's record on the receiver's channel (reports name
    the line of a send whose message is long gone)."""
    key = (recv.rank, recv.comm_name, msg.source, msg.tag)
    recent = world.history.get(key)
    if recent is None:
        recent = world.history[key] = collections.deque(maxlen=_HISTORY)
    recent.append(msg.record)


def post_send(world, ctx, dest, msg, rendezvous):
    """Deliver or queue ``msg`` for world rank ``dest``; return its Send."""
    world.version += 1
    if world.schedule is not None:
        world.schedule.sent(dest, ctx, msg)
    send = Send(world, msg.record.rank, msg.record, dest, msg.nbytes,
                rendezvous)
    if rendezvous:
        msg.send = send
    else:
        send.matched = True
    posted = world.posted[dest].get(ctx)
    if posted:
        for i, recv in enumerate(posted):
            if msg.matches(recv.source, recv.tag):
                if world.schedule is not None and \
                        recv.source == ANY_SOURCE:
                    break           # the next fence decides
                del posted[i]
                _deliver(world, recv, msg)
                return send
    world.unexpected[dest].setdefault(ctx, []).append(msg)
    # A rank blocked in Probe waits for queued messages too.
    for actor in world.actors[dest]:
        if actor.waiting is not None and actor.waiting.op in PROBES:
            world.wake(dest)
            break
    return send


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


def post_recv(world, ctx, recv):
    """Match ``recv`` with a queued message or post it."""
    rank = recv.rank
    world.version += 1
    recv.posted_at = world.version
    schedule = world.schedule
    if schedule is None:
        msg = find_message(world, rank, ctx, recv.source, recv.tag, True)
    elif schedule.defer(recv):
        msg = None
    else:
        msg = _eligible(world, rank, ctx, recv.source, recv.tag,
                        world.posted[rank].get(ctx, ()))
        if msg is not None:
            world.unexpected[rank][ctx].remove(msg)
    if msg is None:
        recv.ctx = ctx
        world.posted[rank].setdefault(ctx, []).append(recv)
        return recv
    # The receiving thread is the caller: nobody of its rank waits for a
    # receive that was not posted yet, so there is no one to wake.
    _deliver(world, recv, msg, wake_receiver=False)
    return recv


def _deliver(world, recv, msg, wake_receiver=True):
    """``recv`` takes ``msg`` (both already out of their queues)."""
    recv.message = msg
    msg.received_by = recv
    note_received(world, recv, msg)
    _remember(world, recv, msg)
    send = msg.send
    if send is not None:
        send.matched = True
        send.partner = recv.record
        world.wake(send.rank)
    if wake_receiver:
        world.wake(recv.rank)


def _eligible(world, rank, ctx, source, tag, earlier):
    """The first queued message matching (source, tag) that none of the
    ``earlier`` posted receives could take (they come first in MPI's
    posting order, or a pending wildcard among them may still take it)."""
    for msg in world.unexpected[rank].get(ctx, ()):
        if msg.matches(source, tag) and not any(
                msg.matches(r.source, r.tag) for r in earlier):
            return msg
    return None


def candidates(world, rank, ctx, source, tag, earlier):
    """The messages a receive (or probe) for (source, tag) may take at a
    fence, in sender order: each sender's earliest matching message
    (non-overtaking), unless one of the ``earlier`` posted receives could
    take it."""
    out = {}
    for msg in world.unexpected[rank].get(ctx, ()):
        if msg.source not in out and msg.matches(source, tag):
            out[msg.source] = None if any(
                msg.matches(r.source, r.tag) for r in earlier) else msg
    return [out[s] for s in sorted(out) if out[s] is not None]


def recv_candidates(world, recv):
    """:func:`candidates` of a posted receive."""
    posted = world.posted[recv.rank].get(recv.ctx, [])
    return candidates(world, recv.rank, recv.ctx, recv.source, recv.tag,
                      posted[:posted.index(recv)])


def match(world, recv, msg):
    """The scheduler's choice: posted ``recv`` takes queued ``msg``;
    receives it held back may then match."""
    world.version += 1
    world.posted[recv.rank][recv.ctx].remove(recv)
    world.unexpected[recv.rank][recv.ctx].remove(msg)
    _deliver(world, recv, msg)
    _rematch(world, recv.rank, recv.ctx)


def _rematch(world, rank, ctx):
    posted = world.posted[rank].get(ctx, [])
    i = 0
    while i < len(posted):
        recv = posted[i]
        msg = None
        if recv.source != ANY_SOURCE:
            msg = _eligible(world, rank, ctx, recv.source, recv.tag,
                            posted[:i])
        if msg is None:
            i += 1
            continue
        del posted[i]
        world.unexpected[rank][ctx].remove(msg)
        _deliver(world, recv, msg)


def cancel(recv):
    """Withdraw a posted receive no message has matched; True if done."""
    world = recv.world
    if recv.message is not None or recv.cancelled:
        return False
    posted = world.posted[recv.rank].get(recv.ctx, ())
    if recv not in posted:
        return False
    posted.remove(recv)
    recv.cancelled = True
    world.version += 1
    if world.schedule is not None:
        _rematch(world, recv.rank, recv.ctx)
    return True


def take_message(world, rank, ctx, source, tag):
    """Remove and return the first queued message for ``rank`` matching
    (source, tag), as a matched probe does; a rendezvous send it belongs
    to completes. None when nothing matches."""
    msg = find_message(world, rank, ctx, source, tag, True)
    if msg is None:
        return None
    world.version += 1
    msg.received_by = True      # a matched probe's Message receives it
    send = msg.send
    if send is not None:
        send.matched = True
        world.wake(send.rank)
    return msg
