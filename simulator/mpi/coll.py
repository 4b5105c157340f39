"""Collective methods of ``Comm`` (object and buffer), as a mixin.

The n-th collective call of each rank meets in one engine
:class:`~simulator.engine.collectives.Slot`. Object collectives pickle at
arrival (like mpi4py, so ranks never share objects); buffer collectives
read the other ranks' buffers directly while everybody is inside the call,
then leave together. Reductions combine in Open MPI's order
(:mod:`simulator.engine.reduction_order`).
"""
import copy

import numpy as np

from simulator.engine import activity
from simulator.engine import collectives as coll
from simulator.engine import reduction_order as order
from simulator.engine.reports import register_explainer
from simulator.engine.trace import CallRecord, capture
from simulator.errors import BufferModifiedError, CollectiveMismatchError
from simulator.mpi.constants import ERR_OP, ERR_TRUNCATE, InPlaceType
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.msgspec import (Buffer, WBuffer, held_bytes, parse,
                                   parse_send, parse_vector, still_holds)
from simulator.mpi.naming import describe
from simulator.mpi.ops import OP_NAMES, Op
from simulator.mpi import pickling
from simulator.mpi.commctx import _comm_lock
from simulator.mpi.request import Request, track

__all__ = ['Collectives']

SUM = OP_NAMES['SUM']
# From this many bytes per rank, Allreduce and Reduce share the pieces of
# the reduction among the rank threads (NumPy releases the GIL); below it
# the last arrival does it all before the others wake, which spares them
# a second wake-up. Measured with 4 ranks on 2 cores when each rank did
# its own slice: at 256 KiB one reducer took 421 us a call against 707 us
# split, at 1 MiB 1275 against 1176 us.
_SHARED_REDUCTION_BYTES = 512 * 1024


def _start(comm, op, signature, arg, combine=None, detail=None,
           progress=None, retire=False):
    s = comm._s
    seq = s.next_seq()
    record = CallRecord(op, s.world_rank, None, None, s.name, seq, detail,
                        raw=capture(3))
    if s.world.clock is not None:
        s.world.clock.stamp(record)
    slot = coll.arrive(s, seq, op, signature, arg, record, combine,
                       progress, retire)
    return s, slot, record


def _run(comm, op, signature, arg, finish=None, combine=None,
         stay=False, after=None, watch=None, receives=None):
    """One collective: arrive, wait, finish, leave; ``after(out)`` runs
    on this rank's output once every rank has left.

    An ``I``-named op (``Igather``...) is the same collective started
    without waiting: it returns a request that completes it, and that
    checks then that ``watch`` (the caller's send memory, None when it is
    also written by the call) still holds what it held at the start, and
    that ``receives`` (the receive Buffer or array that ``finish`` or
    ``after`` writes) held still until then.
    """
    if op in _NONBLOCKING:
        # MPI lets every rank complete its request on its own: a rank
        # must not wait for its peers' Wait, so what ``finish`` reads of
        # the others is copied at the start (``combine`` reads it while
        # every rank is still inside its call).
        original = arg
        if combine is None:
            arg = _snapshot(arg)
        guard = None
        if watch is not None:
            same = original is watch and isinstance(arg, np.ndarray) and \
                arg is not original
            guard = _guard(watch, arg if same else None)
        s, slot, record = _start(comm, op, signature, arg, combine)
        return _CollectiveRequest(s, slot, record, finish, after=after,
                                  guard=guard,
                                  posted=_receive_guard(receives))
    # Without ``finish`` the outputs are complete once the slot is ready
    # (or there are none): nobody needs to wait for departures.
    s, slot, record = _start(comm, op, signature, arg, combine,
                             retire=finish is None and not stay)
    coll.wait_ready(s, slot, record)
    if s.world.clock is not None:
        s.world.clock.collective(s.world_rank, slot)
    try:
        out = finish(s, slot) if finish is not None else slot.result
    finally:
        coll.leave(s, slot)
    if stay:
        coll.wait_departed(s, slot, record)
    return out if after is None else after(out)


def _snapshot(arg):
    """A private copy of a contribution that other ranks read later."""
    if isinstance(arg, np.ndarray):
        return arg.copy()
    if isinstance(arg, Buffer) and arg.data is not None:
        twin = copy.copy(arg)
        twin.data = arg.data.copy()
        return twin
    if isinstance(arg, WBuffer):
        return arg.snapshot()
    return arg


def _guard(memory, copy=None):
    """(memory, its bytes now) for a non-blocking call's send buffer
    (``copy``: a copy already taken); None for an empty one."""
    if memory is None or not memory.size:
        return None
    if copy is None or memory.dtype.fields is not None:
        copy = held_bytes(memory)
    return memory, copy


def _receive_guard(buf):
    """A :class:`_Posted` of the caller's memory that a pending
    collective will write: receive Buffer ``buf`` (none for IN_PLACE, a
    packed copy or nothing) or an array; None when there is none."""
    if buf is None:
        return None
    if isinstance(buf, np.ndarray):
        parts = [buf]
    elif buf.in_place or buf.scatter is not None or buf.data is None:
        return None
    else:
        parts = [buf.part(i) for i in range(len(buf.counts))] \
            if buf.counts is not None else [buf.head()]
    parts = [_guard(part) for part in parts if part.size]
    return _Posted(parts) if parts else None


class _Posted:
    """The receive memory of a pending non-blocking collective, which
    the program must leave alone until completion: [(part, its bytes)]
    taken at the call, and the result where the simulator wrote it
    before completion (``deliver``); ``check`` compares just before the
    simulator writes it and at completion, and remembers a difference
    (``touched``: BufferModifiedError at the Wait/Test)."""

    __slots__ = ('parts', 'written', 'touched')

    def __init__(self, parts):
        self.parts = parts
        self.written = False
        self.touched = False

    def check(self):
        """Compare with what the memory held; a write clobbering the
        collective's data is undone, so that the data is delivered."""
        if self.touched and not self.written:
            return
        for memory, held in self.parts:
            if not still_holds(memory, held):
                self.touched = True
                if self.written:
                    memory[...] = held

    def deliver(self, result):
        """Write ``result``, a reduction's result computed aside, into
        the memory (one part) maybe long before this rank's Wait (from
        another thread): checked just before, and compared with
        ``result`` from then on."""
        self.check()
        (memory, _), = self.parts
        memory[...] = result
        if memory.dtype.fields is not None:
            result = held_bytes(memory)     # its padding, not result's
        self.parts = [(memory, result)]
        self.written = True


# Non-blocking collectives built by _run from their blocking algorithm.
_NONBLOCKING = frozenset((
    'Igather', 'Igatherv', 'Iscatter', 'Iscatterv', 'Iallgather',
    'Iallgatherv', 'Ialltoall', 'Ialltoallv', 'Ialltoallw', 'Ireduce',
    'Ireduce_scatter', 'Ireduce_scatter_block', 'Iscan', 'Iexscan',
    'Ibcast', 'Ibarrier'))


_DTYPE_NAMES = {}


def _dtype_name(dtype):
    """``str(dtype)`` for a signature, remembered for plain dtypes (NumPy
    builds the name anew on every call; equal structured dtypes may print
    differently, so they are not remembered)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = str(dtype)
        if dtype.names is None:
            _DTYPE_NAMES[dtype] = name
    return name


def _check_op(op, dtype=None, where=None, datatype=None):
    """``op`` if it can reduce ``dtype`` elements of ``datatype``."""
    if not isinstance(op, Op):
        raise TypeError('expected a simulator.mpi Op (SUM, MAX...), got '
                        '{}'.format(describe(op)))
    if not op:
        raise MPIException(ERR_OP, '{}: OP_NULL is not a '
                           'reduction'.format(where or 'reduction'))
    if dtype is not None:
        op._check_kind(dtype, where)
    op._check_datatype(datatype, where)
    return op


def _op_name(op):
    """How a collective's record names the ``op`` of an object reduction
    (``allreduce``...): an ``Op`` or any callable of two objects, which
    mpi4py calls as it is, when it has two objects (every rank's lambda
    of one line has one name)."""
    if isinstance(op, Op):
        return op._name
    return getattr(op, '__qualname__', None) or type(op).__name__


class _CollectiveRequest(Request):
    """A non-blocking collective: completes when every rank has joined
    (and, with ``stay``, left: others read this rank's buffers)."""

    def __init__(self, state, slot, record, finish=None, stay=False,
                 after=None, guard=None, posted=None):
        super().__init__(activity.Condition(state.world, record.rank,
                                            record, self._ready))
        self._state_ = state
        self._slot = slot
        self._finish_fn = finish
        self._stay = stay
        self._after = after
        self._left = False
        self._out = None
        self._guard = guard
        self._posted = posted       # the receive memory, see _Posted
        if record.op[0] == 'I':     # the program's non-blocking call
            track(self)

    def _ready(self):
        if not self._slot.ready:
            return False
        if not self._stay or not self._left:
            return True
        return self._slot.departed == self._slot.size

    def _finish(self, status):
        if not self._left:
            self._part()
        if self._stay:
            coll.wait_departed(self._state_, self._slot, self._record)
        return self._done_now()

    def _done_now(self):
        if self._after is not None:
            self._after(self._out)
        guard, self._guard = self._guard, None
        if guard is not None and not still_holds(*guard):
            raise BufferModifiedError(
                'rank {} wrote to the send buffer of {} before the request '
                'completed: MPI forbids changing the buffers of a pending '
                'non-blocking collective (a real MPI may have sent the old '
                'contents or the new, by timing); wait for the request '
                'first'.format(self._record.rank, self._record.describe()))
        posted, self._posted = self._posted, None
        if posted is not None and posted.touched:
            raise BufferModifiedError(
                'rank {} wrote to the receive buffer of {} before the '
                'request completed: MPI forbids touching the buffers of a '
                'pending non-blocking collective (a real MPI may already '
                'have written its data there, which the write clobbers, or '
                'write it later, by timing); wait for the request first '
                '(the buffer now holds the collective\'s data)'.format(
                    self._record.rank, self._record.describe()))
        return None

    def _part(self):
        clock = self._state_.world.clock
        if clock is not None:
            clock.collective(self._state_.world_rank, self._slot)
        # This rank's finish/after write its receive memory now, in the
        # Wait or Test that completes the request (a reduction's
        # combine may have written it already: see _Posted).
        if self._posted is not None:
            self._posted.check()
        try:
            if self._finish_fn is not None:
                self._out = self._finish_fn(self._state_, self._slot)
        finally:
            self._left = True
            coll.leave(self._state_, self._slot)

    def _progress(self):
        """Do this rank's part if possible; True when complete. Never
        blocks (a Test loop must not wait for other ranks' parts)."""
        world = self._state_.world
        slot, schedule = self._slot, world.schedule
        with world.lock:
            world.raise_if_broken(self._record.rank)
            if schedule is not None:    # answered at the next fence
                if not schedule.poll(world, self._record.rank, self._record,
                                     lambda: slot.ready):
                    return False
            elif not slot.ready:
                world.note_poll(self._record)
                return False
        if not self._left:
            self._part()
        if self._stay:
            with world.lock:
                if schedule is not None:
                    if not schedule.poll(
                            world, self._record.rank, self._record,
                            lambda: slot.departed == slot.size):
                        return False
                elif slot.departed != slot.size:
                    world.note_poll(self._record)
                    return False
        return True

    def test(self, status=None):
        if self._done:
            return True, None
        if not self._progress():
            return False, None
        self._done = True
        self._done_now()
        return True, None

    def Get_status(self, status=None):
        return self._done or self._progress()


def _split_items(self, sendobj, op):
    size = len(self._s.group)
    # mpi4py reads None as one None per rank.
    items = [None] * size if sendobj is None else list(sendobj)
    if len(items) != size:
        raise ValueError('{} on {}: expecting {} items, got {}'.format(
            op, self._s.name, size, len(items)))
    return [pickling.dumps(x) for x in items]


def _reduce_objects(op):
    def combine(args):
        tree = order.object_reduce_tree(len(args))
        result = order.evaluate(tree, lambda r: pickling.loads(args[r]), op)
        return pickling.dumps(result)
    return combine


def _prefix(op, exclusive):
    def combine(args):
        def leaf(r):
            return pickling.loads(args[r])
        return [pickling.dumps(None if tree is None else
                             order.evaluate(tree, leaf, op))
                for tree in order.object_scan_trees(len(args), exclusive)]
    return combine


def _copy(dst, src, op, comm_name, to_rank, from_rank):
    """Copy one block between ranks, checking dtype and size."""
    if dst.dtype != src.dtype:
        raise CollectiveMismatchError(
            '{} on {}: rank {} receives {} but rank {} sends {}'.format(
                op, comm_name, to_rank, dst.dtype, from_rank, src.dtype))
    if src.size > dst.size:
        raise MPIException(ERR_TRUNCATE, '{} on {}: rank {} receives {} '
                           'elements where rank {} sends {}'.format(
                               op, comm_name, to_rank, dst.size,
                               from_rank, src.size))
    if src.size != dst.size:
        raise CollectiveMismatchError(
            '{} on {}: rank {} expects {} elements from rank {}, which '
            'sends {}'.format(op, comm_name, to_rank, dst.size, from_rank,
                              src.size))
    dst[...] = src


def _gather(self, op, sendbuf, recvbuf, root, vector):
    root = self._root(root)
    s = self._s
    size = len(s.group)
    at_root = s.rank == root
    recv = parse_vector(recvbuf, size, '{} receive buffer'.format(op),
                        writable=True, packed=True,
                        vector=vector) if at_root else None
    send = parse_send(sendbuf, '{} send buffer'.format(op))
    if send is not None and send.in_place:
        if not at_root:
            raise ValueError('{}: IN_PLACE is only valid at the root '
                             '(rank {} is not root {})'.format(
                                 op, s.rank, root))
        mine = recv.part(s.rank)
    else:
        mine = send.head()

    def finish(st, slot):
        if at_root:
            for r in range(size):
                if r != st.rank or not send.in_place:
                    _copy(recv.part(r), slot.args[r], op, st.name, root, r)
            recv.flush()
    sig = (('root', root),) if vector else (('root', root),)
    return _run(self, op, sig, mine, finish, stay=True,
                watch=None if send.in_place else mine,
                receives=None if send.in_place else recv)


def _scatter(self, op, sendbuf, recvbuf, root):
    root = self._root(root)
    s = self._s
    size = len(s.group)
    at_root = s.rank == root
    send = parse_vector(sendbuf, size, '{} send buffer'.format(op),
                        vector=op.endswith('v'),
                        packed=True) if at_root else None
    recv = parse_send(recvbuf, '{} receive buffer'.format(op),
                      writable=True)
    in_place = recv is not None and recv.in_place
    if in_place and not at_root:
        raise ValueError('{}: IN_PLACE is only valid at the root (rank {} '
                         'is not root {})'.format(op, s.rank, root))

    def finish(st, slot):
        if in_place:
            return
        _copy(recv.head(), slot.args[root].part(st.rank), op, st.name,
              st.rank, root)
        recv.flush()
    return _run(self, op, (('root', root),), send, finish, stay=True,
                watch=send.data if at_root else None,
                receives=None if in_place else recv)


def _allgather(self, op, sendbuf, recvbuf):
    s = self._s
    size = len(s.group)
    recv = parse_vector(recvbuf, size, '{} receive buffer'.format(op),
                        writable=True, packed=True,
                        vector=op.endswith('v'))
    send = parse_send(sendbuf, '{} send buffer'.format(op))
    in_place = send.in_place
    mine = recv.part(s.rank) if in_place else send.head()

    def finish(st, slot):
        for r in range(size):
            if r != st.rank or not in_place:
                _copy(recv.part(r), slot.args[r], op, st.name, st.rank, r)
        recv.flush()
    return _run(self, op, (('dtype', str(recv.dtype)),), mine, finish,
                stay=True, watch=None if in_place else mine,
                receives=None if in_place else recv)


def _alltoall(self, op, sendbuf, recvbuf):
    s = self._s
    size = len(s.group)
    vector = op.endswith('v')
    recv = parse_vector(recvbuf, size, '{} receive buffer'.format(op),
                        writable=True, packed=True,
                        vector=vector)
    in_place = sendbuf is None or isinstance(sendbuf, InPlaceType)
    if in_place:
        # Others read our blocks while we overwrite them: send a snapshot.
        # (counts are in base elements now: a derived datatype would
        # scale them twice, its base type's format does not)
        send = parse_vector([recv.data.copy(), recv.counts, recv.displs,
                             recv.datatype if recv.datatype.is_predefined
                             else None], size, op)
    else:
        send = parse_vector(sendbuf, size, '{} send buffer'.format(op),
                            vector=vector, packed=True)

    def finish(st, slot):
        for r in range(size):
            _copy(recv.part(r), slot.args[r].part(st.rank), op, st.name,
                  st.rank, r)
        recv.flush()
    return _run(self, op, (('dtype', str(recv.dtype)),), send, finish,
                stay=True, watch=None if in_place else send.data,
                receives=None if in_place else recv)


def _alltoallw(self, op, sendbuf, recvbuf):
    s = self._s
    size = len(s.group)
    recv = WBuffer(recvbuf, size, '{} receive buffer'.format(op),
                   writable=True)
    if sendbuf is None or isinstance(sendbuf, InPlaceType):
        # Others read our blocks while we overwrite them: send a snapshot.
        send = recv.snapshot()
    else:
        send = WBuffer(sendbuf, size, '{} send buffer'.format(op))

    def finish(st, slot):
        for r in range(size):
            dst = recv.part(r)
            _copy(dst.data, slot.args[r].part(st.rank).data, op, st.name,
                  st.rank, r)
            dst.flush()
    return _run(self, op, (), send, finish, stay=True)


def _check_same_datatype(send, recv):
    """mpi4py refuses a reduction whose buffers name two datatypes
    (``[a, MPI.INT32_T]`` with an int32 array, which is ``MPI.INT``)."""
    if send is not None and recv is not None and not send.in_place and \
            not recv.in_place and send.datatype != recv.datatype:
        raise ValueError('mismatch in send and receive MPI datatypes')


def _reduction_buffers(self, op_name, sendbuf, recvbuf):
    recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                 writable=True)
    send = parse_send(sendbuf, '{} send buffer'.format(op_name))
    _check_same_datatype(send, recv)
    if send.in_place:
        source = recv.head()
    else:
        source = send.head()
        _check_same_count(send, recv)
    return send, recv, source


def _check_same_count(send, recv):
    """mpi4py's check of a reduction's buffers (not in place)."""
    if send.count != recv.count:
        raise ValueError('mismatch in send count {} and receive count '
                         '{}'.format(send.count, recv.count))


def _check_blocks(op_name, name, args):
    first = args[0]
    for r, a in enumerate(args):
        if a.dtype != first.dtype or a.size != first.size:
            raise CollectiveMismatchError(
                '{} on {}: rank 0 contributes {} x {} but rank {} '
                'contributes {} x {}'.format(op_name, name, first.size,
                                             first.dtype, r, a.size,
                                             a.dtype))


def _allreduce_parts(self, op_name, sendbuf, recvbuf, op):
    """``(signature, contribution, reduction, shared)`` of an Allreduce:
    ``reduction(args)`` makes the :class:`~simulator.engine.
    reduction_order.Reduction` that writes every rank's receive buffer
    from the contributions; ``shared`` says whether the ranks should
    share its pieces (else one thread does it all)."""
    s = self._s
    send, recv, source = _reduction_buffers(self, op_name, sendbuf, recvbuf)
    op = _check_op(op, source.dtype, op_name,
                   (recv if send.in_place else send).datatype)
    # In place, the very same view: the reduction then knows without
    # asking NumPy that this rank's output is its input.
    out = source if send.in_place else recv.head(source.size)
    sig = (('op', op._name), ('count', source.size),
           ('dtype', _dtype_name(source.dtype)))
    size = len(s.group)

    def reduction(args):
        # Each rank's result is written once, straight into its receive
        # buffer (no result array, no per-rank copy of one). Nobody
        # reads a range once its piece is written, so in-place buffers
        # are safe. Only the last arrival's reduction runs: it alone
        # works out the plan.
        if op_name == 'Iallreduce':
            plan = order.iallreduce_plan(size, source.size, source.itemsize,
                                         send.in_place, op._commute)
        else:
            plan = order.allreduce_plan(size, source.size, source.itemsize,
                                        op._commute)
        return order.Reduction(plan, op, [a[0] for a in args],
                               [a[1] for a in args])
    shared = source.nbytes >= _SHARED_REDUCTION_BYTES and size > 1
    return sig, (source, out), reduction, shared


def _whole(reduction):
    """A ``combine`` that does all of ``reduction`` in one thread."""
    def combine(args):
        reduction(args).work()
    return combine


def _run_reduction(comm, op, signature, arg, reduction, shared):
    """A blocking reduction collective: with ``shared`` the last arrival
    cuts the work into pieces and every rank does pieces until none is
    left, then waits for the rest; otherwise the last arrival does it
    all."""
    if shared:
        return _run(comm, op, signature, arg, coll.share_work, reduction)
    return _run(comm, op, signature, arg, combine=_whole(reduction))


def _start_reduction(comm, op, signature, source, out, reduction,
                     in_place, progress=False):
    """Start non-blocking reduction ``op`` (Iallreduce, Ireduce) of
    ``source`` into ``out`` (None where nothing is received):
    ``reduction(args)`` writes every rank's ``out`` when the last rank
    arrives, or with ``progress`` on a progress thread started then,
    maybe long before the Wait. The request checks the send buffer at
    completion and ``out`` around that write (:class:`_Posted`)."""
    guard = None if in_place else _guard(source)
    if guard is not None:
        # The others read it when the last rank arrives: what this
        # rank sent is what it held at its call, whatever it writes.
        source = guard[1]
    posted = _receive_guard(out)
    combine = _watched(reduction)
    arg = (source, out, posted)
    if progress:
        s, slot, record = _start(comm, op, signature, arg,
                                 progress=combine)
    else:
        s, slot, record = _start(comm, op, signature, arg, combine)
    return _CollectiveRequest(s, slot, record, guard=guard, posted=posted)


def _watched(reduction):
    """The ``combine`` of a :func:`_start_reduction`: the results of the
    ranks whose receive memory is watched (a :class:`_Posted`, the third
    item of the contribution) are computed aside and then delivered, so
    that a write of the program's while the reduction runs (on another
    thread) is seen, not overwritten."""
    def combine(args):
        aside = [None if a[2] is None else np.empty_like(a[1])
                 for a in args]
        reduction([a if r is None else (a[0], r) + a[2:]
                   for a, r in zip(args, aside)]).work()
        for a, r in zip(args, aside):
            if r is not None:
                a[2].deliver(r)
    return combine


def _reduce_scatter(self, op_name, sendbuf, recvbuf, counts, op):
    op = _check_op(op)
    s = self._s
    size = len(s.group)
    recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                 writable=True)
    send = parse_send(sendbuf, '{} send buffer'.format(op_name))
    _check_same_datatype(send, recv)
    in_place = send.in_place
    source = recv.data if in_place else send.data
    _check_op(op, source.dtype, op_name,
              (recv if in_place else send).datatype)
    if counts is None and op_name in ('Reduce_scatter', 'Ireduce_scatter') \
            and not in_place:
        # mpi4py learns the counts with an Allgather of the receive
        # buffers' counts, a collective of its own on the communicator.
        counts = np.empty(size, np.int64)
        self.Allgather(np.array([recv.count], np.int64), counts)
    uniform = counts is None
    if uniform:
        if source.size < recv.count * size and not in_place:
            raise ValueError('{}: send buffer holds {} elements, needs {} '
                             'x {}'.format(op_name, source.size, size,
                                           recv.count))
        block = (source.size // size) if in_place else recv.count
        counts = [block] * size
    counts = [int(c) for c in counts]
    if not uniform and not in_place and send.count != sum(counts):
        raise ValueError('mismatch in send count {} and sum(counts) '
                         '{}'.format(send.count, sum(counts)))
    if not uniform and not in_place and recv.count != counts[s.rank]:
        # mpi4py checks this before communicating, on every rank.
        raise ValueError('mismatch in receive count {} and counts[{}] '
                         '{}'.format(recv.count, s.rank, counts[s.rank]))
    displs = np.concatenate([[0], np.cumsum(counts)]).astype(int).tolist()
    total = displs[-1]
    lo, hi = displs[s.rank], displs[s.rank + 1]
    dest = recv.data[:hi - lo]

    if op_name.startswith('I'):
        plan = order.ireduce_scatter_plan(size, sum(counts), op._commute)
    elif uniform:
        plan = order.reduce_scatter_block_plan(size, counts[0],
                                               source.itemsize, op._commute)
    else:
        plan = order.reduce_scatter_plan(size, counts, source.itemsize,
                                         op._commute)

    def finish(st, slot):
        args = slot.args
        _check_blocks(op_name, st.name, args)
        tmp = np.empty(hi - lo, dtype=source.dtype)
        order.reduce_plan_into(plan, op, args, tmp, lo, hi)
        return tmp

    sig = (('op', op._name), ('counts', tuple(counts)),
           ('dtype', _dtype_name(source.dtype)))
    def after(tmp):
        # Written only after everyone left: with IN_PLACE our buffer was
        # input.
        dest[...] = tmp
    # With IN_PLACE all of the buffer is input, the first block output.
    return _run(self, op_name, sig, source[:total], finish, stay=True,
                after=after, watch=None if in_place else source[:total],
                receives=source[:total] if in_place else dest)


def _reduce(self, name, sendbuf, recvbuf, op, root):
    op = _check_op(op)
    root = self._root(root)
    s = self._s
    at_root = s.rank == root
    send = parse_send(sendbuf, '{} send buffer'.format(name))
    recv = parse(recvbuf, '{} receive buffer'.format(name),
                 writable=True) \
        if at_root else None
    if send.in_place:
        if not at_root:
            raise ValueError('{}: IN_PLACE is only valid at the root'.format(
                name))
        source = recv.head()
    else:
        source = send.head()
    _check_op(op, source.dtype, name,
              (recv if send.in_place else send).datatype)
    if at_root:
        _check_same_datatype(send, recv)
        if not send.in_place:
            # mpi4py checks this at the root before communicating.
            _check_same_count(send, recv)
    out = None if not at_root else source if send.in_place else \
        recv.head(source.size)

    def reduction(args):
        # Straight into the root's receive buffer: no result array.
        sources = [a[0] for a in args]
        _check_blocks(name, s.name, sources)
        plan = (order.ireduce_plan if name == 'Ireduce' else
                order.reduce_plan)(len(args), source.size, source.itemsize,
                                   root, op._commute)
        return order.Reduction(plan, op, sources, [args[root][1]])

    sig = (('op', op._name), ('root', root), ('count', source.size),
           ('dtype', _dtype_name(source.dtype)))
    if name == 'Ireduce':
        return _start_reduction(self, name, sig, source, out, reduction,
                                send.in_place)
    shared = len(s.group) > 1 and source.nbytes >= _SHARED_REDUCTION_BYTES
    return _run_reduction(self, name, sig, (source, out), reduction, shared)


@register_explainer
def _explain_collective_order(report):
    """The hint for ranks that wait in collectives on different
    communicators, each missing ranks: they call them in different
    orders."""
    if report.kind != 'deadlock':
        return None
    waiting = {rank: record for rank, record in report.pending.items()
               if record.seq is not None and
               report.missing.get((record.comm, record.seq))}
    if len({record.comm for record in waiting.values()}) < 2:
        return None
    shown = ['rank {} in {} on {}'.format(rank, record.op, record.comm)
             for rank, record in sorted(waiting.items())]
    return ('{}{}: the ranks call collectives on these communicators in '
            'different orders. MPI requires an order that cannot deadlock '
            'whether or not a collective synchronizes (MPI 4.1, 6.14): call '
            'them in the same order on every rank. Under mpiexec a small '
            'bcast or reduce may return before the others arrive, so the '
            'program may get through there and hang at another size or on '
            'another MPI'.format('; '.join(shown[:4]),
                                 '...' if len(shown) > 4 else ''))


class Collectives:
    """Object and buffer collectives; mixed into ``simulator.mpi.Comm``."""

    def barrier(self):
        """Wait until every rank of the communicator arrives."""
        _run(self, 'barrier', (), None)

    def Barrier(self):
        """Wait until every rank of the communicator arrives."""
        _run(self, 'Barrier', (), None)

    def Ibarrier(self):
        """Start a barrier; the request completes when all ranks arrived."""
        s, slot, record = _start(self, 'Ibarrier', (), None)
        return _CollectiveRequest(s, slot, record)

    def bcast(self, obj, root=0):
        """Broadcast a picklable object from ``root``; all ranks return
        it."""
        root = self._root(root)
        mine = pickling.dumps(obj) if self._s.rank == root else None
        # mpi4py holds the rank's lock of (comm, 'bcast') around its two
        # messages; threads of a rank see the same serialization here.
        with _comm_lock(self, 'bcast'):
            return _run(self, 'bcast', (('root', root),), mine,
                        lambda s, slot: pickling.loads(slot.args[root]))

    def gather(self, sendobj, root=0):
        """A list of every rank's object at ``root``; None elsewhere."""
        root = self._root(root)

        def finish(s, slot):
            if s.rank != root:
                return None
            return [pickling.loads(a) for a in slot.args]
        mine = pickling.dumps(sendobj)
        with _comm_lock(self, 'gather'):
            return _run(self, 'gather', (('root', root),), mine, finish)

    def scatter(self, sendobj, root=0):
        """Item ``i`` of root's sequence goes to rank ``i``."""
        root = self._root(root)
        mine = _split_items(self, sendobj, 'scatter') \
            if self._s.rank == root else None
        with _comm_lock(self, 'scatter'):
            return _run(self, 'scatter', (('root', root),), mine,
                        lambda s, slot: pickling.loads(
                            slot.args[root][s.rank]))

    def allgather(self, sendobj):
        """Every rank's object, in rank order, on every rank."""
        mine = pickling.dumps(sendobj)
        with _comm_lock(self, 'allgather'):
            return _run(self, 'allgather', (), mine, lambda s, slot: [
                pickling.loads(a) for a in slot.args])

    def alltoall(self, sendobj):
        """Rank ``i`` gets item ``i`` of every rank's sequence."""
        mine = _split_items(self, sendobj, 'alltoall')
        with _comm_lock(self, 'alltoall'):
            return _run(self, 'alltoall', (), mine, lambda s, slot: [
                pickling.loads(a[s.rank]) for a in slot.args])

    def allreduce(self, sendobj, op=SUM):
        """Reduce every rank's object with ``op`` (mpi4py's binomial tree,
        lower ranks on the left); all ranks get it."""
        return _run(self, 'allreduce', (('op', _op_name(op)),),
                    pickling.dumps(sendobj),
                    lambda s, slot: pickling.loads(slot.result),
                    combine=_reduce_objects(op))

    def reduce(self, sendobj, op=SUM, root=0):
        """Reduce every rank's object with ``op`` at ``root``; None
        elsewhere."""
        root = self._root(root)
        return _run(self, 'reduce', (('op', _op_name(op)), ('root', root)),
                    pickling.dumps(sendobj),
                    lambda s, slot: pickling.loads(slot.result)
                    if s.rank == root else None,
                    combine=_reduce_objects(op))

    def Bcast(self, buf, root=0):
        """Copy root's buffer into every rank's buffer."""
        root = self._root(root)
        b = parse(buf, 'Bcast buffer', writable=self._s.rank != root,
                  packed=True)
        mine = b.head()

        def finish(s, slot):
            if s.rank != root:
                _copy(mine, slot.args[root], 'Bcast', s.name, s.rank, root)
                b.flush()
        _run(self, 'Bcast', (('root', root), ('count', b.count),
                             ('dtype', str(mine.dtype))), mine, finish,
             stay=True)

    def Ibcast(self, buf, root=0):
        """Non-blocking Bcast; the data is in place once the request is
        done."""
        root = self._root(root)
        b = parse(buf, 'Ibcast buffer', writable=self._s.rank != root,
                  packed=True)
        mine = b.head()

        def finish(s, slot):
            if s.rank != root:
                _copy(mine, slot.args[root], 'Ibcast', s.name, s.rank, root)
                b.flush()
        # The root's data is copied at the start: others may complete
        # after the root has reused its buffer (see _run).
        at_root = self._s.rank == root
        sent = mine.copy() if at_root else None
        s, slot, record = _start(self, 'Ibcast', (
            ('root', root), ('count', b.count), ('dtype', str(mine.dtype))),
            sent)
        return _CollectiveRequest(s, slot, record, finish,
                                  guard=_guard(mine, sent) if at_root
                                  else None,
                                  posted=None if at_root
                                  else _receive_guard(b))

    def Gather(self, sendbuf, recvbuf, root=0):
        """Root receives every rank's block, in rank order."""
        _gather(self, 'Gather', sendbuf, recvbuf, root, False)

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather with per-rank counts/displacements at the root."""
        _gather(self, 'Gatherv', sendbuf, recvbuf, root, True)

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Rank ``i`` receives block ``i`` of root's buffer."""
        _scatter(self, 'Scatter', sendbuf, recvbuf, root)

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter with per-rank counts/displacements at the root."""
        _scatter(self, 'Scatterv', sendbuf, recvbuf, root)

    def Allgather(self, sendbuf, recvbuf):
        """Every rank receives every rank's block, in rank order."""
        _allgather(self, 'Allgather', sendbuf, recvbuf)

    def Allgatherv(self, sendbuf, recvbuf):
        """Allgather with per-rank counts/displacements."""
        _allgather(self, 'Allgatherv', sendbuf, recvbuf)

    def Alltoall(self, sendbuf, recvbuf):
        """Block ``j`` of rank ``i`` goes to block ``i`` of rank ``j``."""
        _alltoall(self, 'Alltoall', sendbuf, recvbuf)

    def Alltoallv(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts/displacements."""
        _alltoall(self, 'Alltoallv', sendbuf, recvbuf)

    def Allreduce(self, sendbuf, recvbuf, op=SUM):
        """Every rank's ``recvbuf`` gets ``op`` over every rank's
        ``sendbuf``."""
        sig, arg, reduction, shared = _allreduce_parts(
            self, 'Allreduce', sendbuf, recvbuf, op)
        _run_reduction(self, 'Allreduce', sig, arg, reduction, shared)

    def Iallreduce(self, sendbuf, recvbuf, op=SUM):
        """Non-blocking Allreduce; ``recvbuf`` is valid once it is done."""
        sig, (source, out), reduction, shared = _allreduce_parts(
            self, 'Iallreduce', sendbuf, recvbuf, op)
        # A large one on a progress thread started by the last arrival:
        # the ranks compute meanwhile, and Wait only waits.
        return _start_reduction(self, 'Iallreduce', sig, source, out,
                                reduction, out is source, progress=shared)

    def Reduce(self, sendbuf, recvbuf, op=SUM, root=0):
        """Root's ``recvbuf`` gets ``op`` over every rank's ``sendbuf``."""
        _reduce(self, 'Reduce', sendbuf, recvbuf, op, root)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=SUM):
        """Rank ``i`` gets block ``i`` of the ``op``-reduction of all sends."""
        _reduce_scatter(self, 'Reduce_scatter_block', sendbuf, recvbuf, None,
                        op)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None,
                       op=SUM):
        """Reduce_scatter with per-rank ``recvcounts``."""
        _reduce_scatter(self, 'Reduce_scatter', sendbuf, recvbuf, recvcounts,
                        op)

    def Igather(self, sendbuf, recvbuf, root=0):
        """Non-blocking Gather."""
        return _gather(self, 'Igather', sendbuf, recvbuf, root, False)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        """Non-blocking Gatherv."""
        return _gather(self, 'Igatherv', sendbuf, recvbuf, root, True)

    def Iscatter(self, sendbuf, recvbuf, root=0):
        """Non-blocking Scatter."""
        return _scatter(self, 'Iscatter', sendbuf, recvbuf, root)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        """Non-blocking Scatterv."""
        return _scatter(self, 'Iscatterv', sendbuf, recvbuf, root)

    def Iallgather(self, sendbuf, recvbuf):
        """Non-blocking Allgather."""
        return _allgather(self, 'Iallgather', sendbuf, recvbuf)

    def Iallgatherv(self, sendbuf, recvbuf):
        """Non-blocking Allgatherv."""
        return _allgather(self, 'Iallgatherv', sendbuf, recvbuf)

    def Ialltoall(self, sendbuf, recvbuf):
        """Non-blocking Alltoall."""
        return _alltoall(self, 'Ialltoall', sendbuf, recvbuf)

    def Ialltoallv(self, sendbuf, recvbuf):
        """Non-blocking Alltoallv."""
        return _alltoall(self, 'Ialltoallv', sendbuf, recvbuf)

    def Ireduce(self, sendbuf, recvbuf, op=SUM, root=0):
        """Non-blocking Reduce."""
        return _reduce(self, 'Ireduce', sendbuf, recvbuf, op, root)

    def Ireduce_scatter_block(self, sendbuf, recvbuf,
                              op=SUM):
        """Non-blocking Reduce_scatter_block."""
        return _reduce_scatter(self, 'Ireduce_scatter_block', sendbuf,
                               recvbuf, None, op)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None,
                        op=SUM):
        """Non-blocking Reduce_scatter."""
        return _reduce_scatter(self, 'Ireduce_scatter', sendbuf, recvbuf,
                               recvcounts, op)

    def Alltoallw(self, sendbuf, recvbuf):
        """Alltoall with per-rank counts, byte displacements and
        datatypes."""
        _alltoallw(self, 'Alltoallw', sendbuf, recvbuf)

    def Ialltoallw(self, sendbuf, recvbuf):
        """Non-blocking Alltoallw."""
        return _alltoallw(self, 'Ialltoallw', sendbuf, recvbuf)
