"""Exchanges that complete only because small sends are buffered.

Two ranks that each ``Send`` to the other before they ``Recv`` (or a ring
of them) get through Open MPI, and the simulator's default send mode,
while their messages fit its eager limit: each send is buffered and
returns. MPI does not promise that buffering (MPI 4.1, 3.5: such a
program is unsafe), and the same code deadlocks with bigger messages or
on an MPI that buffers less. ``--send-mode rendezvous`` shows the
deadlock; this module warns about it in a run that gets through.

It follows what each rank would be doing if every blocking standard send
waited for its receive: a rank whose send completed without a matching
receive would still be in that send (its later calls have not happened
there yet), and so would one whose send was taken by a receive that its
peer posted while blocked so. When a new such wait closes a cycle of
ranks waiting on one another, the run would deadlock there.
"""

__all__ = ['Waits', 'note_eager_send', 'note_received']


class _Wait:
    """A rank in a blocking send it would still be in: until
    ``message`` is received (``received_by`` set), or, when its receive
    was posted while the receiver would be in a send of its own, until
    that ``after`` wait is over."""

    __slots__ = ('dest', 'message', 'after', 'record', 'since')

    def __init__(self, dest, message, record, since, after=None):
        self.dest, self.message, self.after = dest, message, after
        self.record, self.since = record, since

    def over(self):
        if self.after is not None:
            return self.after.over()
        return self.message.received_by is not None


class Waits(dict):
    """World rank -> the _Wait it would be in (a world's)."""

    def __init__(self):
        super().__init__()
        self.reported = False


def note_eager_send(world, rank, dest, msg):
    """A blocking standard send of ``msg`` from ``rank`` to ``dest`` has
    completed without waiting for its receive (world lock held). Returns
    the warning's text when it closes a cycle of waits, once per world;
    None otherwise."""
    waits = world.send_waits_without_buffering
    mine = waits.get(rank)
    if mine is not None and not mine.over():
        return None     # still in an earlier send: this one is not yet
    recv, after = msg.received_by, None
    if recv is not None:
        after = waits.get(dest)
        if after is None or after.over() or recv.posted_at < after.since:
            return None     # a receive the peer had posted anyway
    waits[rank] = _Wait(dest, msg, msg.record, world.version, after)
    cycle = _cycle(waits, rank)
    if cycle is None or waits.reported:
        return None
    waits.reported = True
    return _describe(cycle, waits)


def note_received(world, recv, msg):
    """``recv`` took ``msg`` (world lock held). If the receiver would
    still be in a send of its own when it posted ``recv``, so would the
    sender waiting for ``msg``: until the receiver's send is received."""
    waits = world.send_waits_without_buffering
    if not waits:
        return
    sender = waits.get(msg.record.rank)
    if sender is None or sender.message is not msg or \
            sender.after is not None:
        return
    mine = waits.get(recv.rank)
    if mine is not None and not mine.over() and mine.since < recv.posted_at:
        sender.after = mine


def _cycle(waits, rank):
    """The ranks from ``rank`` round a cycle of waits back to it."""
    ranks, peer = [rank], waits[rank].dest
    while peer != rank:
        wait = waits.get(peer)
        if wait is None or wait.over() or peer in ranks:
            return None
        ranks.append(peer)
        peer = wait.dest
    return ranks


def _describe(cycle, waits):
    sends = '; '.join('rank {}: {}'.format(r, waits[r].record.describe())
                      for r in sorted(cycle))
    who = 'rank {} sends to itself'.format(cycle[0]) if len(cycle) == 1 \
        else 'ranks {} each send to the next'.format(
            ' -> '.join(str(r) for r in cycle + cycle[:1]))
    return ('{} (a blocking standard send) before receiving: {}. This '
            'completes only because the messages are buffered (Open MPI '
            'does so up to its eager limit, 4016 bytes to a rank of the '
            'same node); with bigger messages, or under an MPI that '
            'buffers less, it deadlocks (python -m simulator --send-mode '
            'rendezvous shows it). Post the receives first (Irecv), or use '
            'Sendrecv'.format(who, sends))
