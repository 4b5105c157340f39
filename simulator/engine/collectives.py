"""Collective matching: one slot per (communicator context, sequence).

Every rank of a communicator (a :class:`~simulator.engine.communicator.
CommState`) numbers its collective calls; the n-th call of every rank
meets in the same :class:`Slot`. The first arrival fixes the
signature (op kind, root, reduction, count, dtype) and every later arrival
must agree, otherwise :class:`~simulator.errors.CollectiveMismatchError`
names the ranks and calls that disagree.

A collective runs in three phases: *arrive* (leave the contribution; the
last arrival may ``combine`` them once), *finish* (each rank computes its
own output outside the lock, reading the others' contributions), and
*depart* (when others read this rank's buffers during finish, it must
stay until everyone is done). A collective whose outputs are complete
once it is ready (``arrive(..., retire=True)``) or once its shared work
is done reads nobody's buffers after that: its slot is *retired* then,
and its ranks skip departure (one lock round trip each).
"""
from simulator.errors import CollectiveMismatchError

__all__ = ['Slot', 'arrive', 'wait_ready', 'share_work', 'leave',
           'wait_departed', 'describe_signature']


class Slot:
    """The meeting point of one collective call on one communicator."""

    __slots__ = ('key', 'size', 'comm_name', 'op', 'signature', 'calls',
                 'args', 'arrived', 'ready', 'result', 'departed',
                 'members', 'stayers', 'index_of', 'retired')

    def __init__(self, key, state, op, signature):
        self.key = key
        self.size = len(state.group)
        self.comm_name = state.name
        self.op = op
        self.signature = signature
        self.calls = [None] * self.size
        self.args = [None] * self.size
        self.arrived = 0
        self.ready = False
        self.result = None
        self.departed = 0
        self.members = state.group
        self.stayers = []       # world ranks blocked in wait_departed
        self.index_of = None    # world rank -> comm rank, built on demand
        self.retired = False    # complete: no departure to wait for


def describe_signature(op, signature):
    """``Bcast(root=0, count=4, dtype=float32)``."""
    return '{}({})'.format(op, ', '.join(
        '{}={}'.format(k, v) for k, v in signature))


def _mismatch(slot, rank, op, signature, record):
    first = next(r for r in range(slot.size) if slot.calls[r] is not None)
    agree = [r for r in range(slot.size) if slot.calls[r] is not None]
    lines = ['collective mismatch on {} (collective call #{} of this '
             'communicator): ranks disagree on the call'.format(
                 slot.comm_name, slot.key[1])]
    first_rec = slot.calls[first]
    if len(agree) == 1:
        lines.append('  rank {} called {} at {}'.format(
            agree[0], describe_signature(slot.op, slot.signature),
            first_rec.where))
    else:
        lines.append('  ranks {} called {} (rank {} at {})'.format(
            ', '.join(map(str, agree)),
            describe_signature(slot.op, slot.signature), first_rec.rank,
            first_rec.where))
    lines.append('  rank {} called {} at {}'.format(
        rank, describe_signature(op, signature), record.where))
    diff = _difference(slot.op, slot.signature, op, signature)
    if diff:
        lines.append('  they differ in: {}'.format(diff))
    return CollectiveMismatchError('\n'.join(lines))


def _difference(op_a, sig_a, op_b, sig_b):
    if op_a != op_b:
        return 'operation ({} vs {})'.format(op_a, op_b)
    a, b = dict(sig_a), dict(sig_b)
    return ', '.join('{} ({} vs {})'.format(k, a.get(k), b.get(k))
                     for k in list(a) + [k for k in b if k not in a]
                     if a.get(k) != b.get(k))


def arrive(state, seq, op, signature, arg, record, combine=None,
           progress=None, retire=False):
    """Leave this rank's contribution; return the slot.

    ``combine(args) -> result`` runs once, in the last arriving rank,
    outside the world lock. ``progress(args)`` instead runs on a progress
    thread started by the last arrival (a non-blocking collective that
    moves its data while the ranks compute); the slot is ready when it
    returns. With ``retire`` no rank reads another's contribution once
    the slot is ready: it is retired then (:func:`leave` returns at once).
    """
    world = state.world
    key = (state.ctx, seq)
    me = state.rank
    with world.lock:
        world.raise_if_broken(record.rank)
        slot = world.collectives.get(key)
        if slot is None:
            slot = world.collectives[key] = Slot(key, state, op, signature)
        elif slot.op != op or slot.signature != signature:
            error = _mismatch(slot, me, op, signature, record)
            world.break_with(error)
            raise world.failure.exception_for(record.rank)
        slot.calls[me] = record
        slot.args[me] = arg
        slot.arrived += 1
        world.version += 1
        last = slot.arrived == slot.size
        if last and combine is None and progress is None:
            _mark_ready(world, slot, None, retire)
    if last and progress is not None:
        def done(error):
            if error is not None:
                world.break_with(error)
            else:
                _mark_ready(world, slot, None)
        world.start_progress(lambda: progress(slot.args), done)
    elif last and combine is not None:
        result = combine(slot.args)
        with world.lock:
            _mark_ready(world, slot, result, retire)
    return slot


def _mark_ready(world, slot, result, retire=False):
    world.version += 1
    slot.result = result
    slot.ready = True
    if retire:
        _retire(world, slot)
    for member in slot.members:
        world.wake(member)


def _retire(world, slot):
    """Every rank arrived and nobody reads a contribution any more (lock
    held): forget the slot now instead of counting departures."""
    world.collectives.pop(slot.key, None)
    slot.retired = True


def wait_ready(state, slot, record):
    """Block until every rank has arrived (and combine ran)."""
    if slot.ready:
        return
    world = state.world

    def hopeless():
        # Asked only once some rank has finished; walk the (few) finished
        # ranks, not the (maybe thousands of) members.
        if slot.ready:
            return False
        if slot.index_of is None:
            slot.index_of = {m: i for i, m in enumerate(slot.members)}
        index_of = slot.index_of
        return any(f in index_of and slot.calls[index_of[f]] is None
                   for f in world.finished_ranks)

    with world.lock:
        world.block(lambda: slot.ready, record, hopeless)


def share_work(state, slot):
    """Do pieces of the slot's shared work until none is left to take,
    then wait until every piece is done.

    ``slot.result`` is the work (a :class:`~simulator.engine.
    reduction_order.Reduction`, made by ``combine``): its ``work()`` does
    pieces and returns True in the thread that finished the last one,
    which sets ``done`` and wakes the ranks waiting for it. Once done, no
    rank's buffers are read any more: the slot is retired.
    """
    work = slot.result
    world = state.world
    if work.work():
        with world.lock:
            _retire(world, slot)
            work.done = True
            world.version += 1
            for member in slot.members:
                world.wake(member)
        return
    if work.done:
        return
    with world.lock:
        world.block(lambda: work.done, slot.calls[state.rank])


def leave(state, slot):
    """This rank is done reading the others' contributions."""
    if slot.retired:
        return      # set before this rank was woken (see _retire)
    world = state.world
    with world.lock:
        slot.departed += 1
        world.version += 1
        if slot.departed == slot.size:
            world.collectives.pop(slot.key, None)
            # Only the ranks waiting for departure: waking the others
            # (already blocked in their next call) would cost a spurious
            # wake-up per rank, which dominates at thousands of ranks.
            for member in slot.stayers:
                world.wake(member)


def wait_departed(state, slot, record):
    """Block until every rank has left (its buffers may be reused)."""
    world = state.world
    with world.lock:
        if slot.departed == slot.size:
            return
        slot.stayers.append(record.rank)
        world.block(lambda: slot.departed == slot.size, record)
