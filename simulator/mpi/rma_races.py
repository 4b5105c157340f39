"""Accesses to one window location whose outcome depends on their order.

Within a fence epoch MPI orders no two operations of different origins:
a Put and a Get of the same bytes may see either order, two Puts leave
either value, two accumulates with different ops either result. The
simulator applies each operation at its call, in one order, so such a
program always gives the same answer here and another on a cluster.
Each window keeps the accesses of its current fence epoch (the bytes
before and after each one); an access from another origin that overlaps
one already made raises :class:`~simulator.errors.RMAConflictError`
when the order would show: the bytes some operation wrote differ in the
overlap (two Puts of the same bytes, as mpi4py's own tests make, or a
Get beside a Put that rewrote a byte with its old value, do not).

The same rule holds within one exposure epoch (``Post`` .. ``Wait``) of
a target (:class:`ExposureLog`): the origins' ``Complete`` does not
complete their accesses at the target, only its ``Wait`` does. In
passive target epochs (:class:`LockLog`) two accesses are reported
only when nothing can have ordered them: the second made while the
first was not yet completed by its origin (Flush, Unlock) nor seen by
anyone (the target blocked in MPI all along, no RMA read of its bytes);
see there for what is left out, and why.

A load/store is the other half: a window's memory written by the
program (not through RMA) in the fence epoch in which an operation
reached the same bytes. Each ``Fence`` keeps a copy of the windows (all
ranks are inside it: nothing moves), and the next one replays the
epoch's accesses over it (:func:`replay_stores`): bytes that differ
from what the accesses saw or left were stored to in between. A
target's exposure epoch is checked the same way: a copy of its memory
at ``Post`` (only the target moves it; the origins' accesses are in the
:class:`ExposureLog`), the epoch's accesses replayed over it at
``Wait``; only other origins' accesses count. In passive target epochs
(:class:`StoreWatch`) each access is watched from its call to its
completion by its origin (``Flush*``, ``Unlock*``): the bytes it left
or read must still hold what RMA left there then. A store ordered
after the completion (a message, a barrier) happens after the check; a
target storing under its exclusive lock of its own window cannot
overlap another's counted epoch; a target that called ``Win.Sync`` may
have seen the access land (the unified memory model) and is trusted.
Windows larger than 64 MiB in all are not copied (their fence and
exposure epochs' stores go unchecked), nor are ``Allocate_shared``
windows watched in passive target epochs (every rank of the node may
store to them), nor stores to bytes of derived target datatypes'
accesses.
"""
import threading

import numpy as np

from simulator.errors import RMAConflictError

__all__ = ['Access', 'EpochLog', 'ExposureLog', 'LockLog', 'StoreWatch',
           'is_padded', 'replay_stores', 'settled_bytes']

_MASKS = {}


def _significant(dtype):
    """Which bytes of a ``dtype`` element hold its value (None: all): not
    a long double's padding nor a pair type's gap, which NumPy leaves
    undefined."""
    if dtype not in _MASKS:
        mask = np.zeros(dtype.itemsize, np.uint8)
        for offset, part in _parts(dtype, 0):
            if part in _EXTENDED:
                # x87 extended precision: 10 bytes of value per real part.
                step = _EXTENDED[part]
                for start in range(offset, offset + part.itemsize, step):
                    mask[start:start + 10] = 0xFF
            else:
                mask[offset:offset + part.itemsize] = 0xFF
        _MASKS[dtype] = None if mask.all() else mask
    return _MASKS[dtype]


# Padded long doubles (x86: 16 bytes for 10) and the step of a real part.
_EXTENDED = {d: d.itemsize // (2 if d.kind == 'c' else 1)
             for d in (np.dtype(np.longdouble), np.dtype(np.clongdouble))
             if d.itemsize // (2 if d.kind == 'c' else 1) > 10}


def _parts(dtype, offset):
    """(offset, dtype) of each scalar within ``dtype``."""
    if dtype.fields:
        for field, field_offset, *_ in dtype.fields.values():
            yield from _parts(field, offset + field_offset)
    elif dtype.subdtype is not None:
        base, shape = dtype.subdtype
        for i in range(int(np.prod(shape))):
            yield from _parts(base, offset + i * base.itemsize)
    else:
        yield offset, dtype


def is_padded(dtype):
    """Whether ``dtype``'s elements hold bytes that are no part of their
    value (which :func:`settled_bytes` zeroes)."""
    return _significant(dtype) is not None


def settled_bytes(view):
    """The bytes of array ``view`` with its elements' padding zeroed."""
    mask = _significant(view.dtype)
    if mask is None:
        return view.tobytes()
    raw = np.ascontiguousarray(view).view(np.uint8).reshape(
        -1, view.dtype.itemsize)
    return (raw & mask).tobytes()


class Access:
    """One operation on a window's bytes ``start``..``end`` (addresses):
    ``kind`` 'get', 'put', 'compare-and-swap' or 'accumulate ' and an
    accumulate's op name ('accumulate MPI_NO_OP' reads); ``before`` and
    ``after`` the bytes there around it; ``origin`` and ``target``
    window ranks, ``base`` the address of the target memory (or attached
    region) that holds it."""

    __slots__ = ('origin', 'kind', 'start', 'end', 'before', 'after',
                 'record', 'padded', 'target', 'base', 'retired', 'quiet',
                 'observed')

    def __init__(self, origin, kind, start, before, after, record,
                 padded=False, target=None, base=None):
        self.origin = origin
        self.kind = kind
        self.start = start
        self.end = start + len(before)
        self.before = before
        self.after = after
        self.record = record
        self.padded = padded    # settled bytes: not the memory's own
        self.target = target
        self.base = start if base is None else base
        self.retired = False    # completed: races with nothing now
        # Passive target: what the target's threads were blocked in
        # when it was made (None: one ran), and whether an RMA read saw
        # its bytes since (LockLog).
        self.quiet = None
        self.observed = False

    def _part(self, data, lo, hi):
        return data[lo - self.start:hi - self.start]

    def changed(self, lo, hi):
        return self._part(self.before, lo, hi) != \
            self._part(self.after, lo, hi)


def _conflict(a, b, lo, hi):
    if a.origin == b.origin:
        # Unordered in MPI as well, but only passive target epochs
        # check one origin's accesses (_passive_conflict).
        return False
    return _order_shows(a, b, lo, hi)


def _order_shows(a, b, lo, hi):
    if a.kind == 'put' and b.kind == 'put':
        return a._part(a.after, lo, hi) != b._part(b.after, lo, hi)
    if a.kind == b.kind and a.kind != 'get':
        return False        # accumulates with one op: atomic, any order
    return a.changed(lo, hi) or b.changed(lo, hi)


# Accesses are found by the 64-byte blocks they touch; one over more than
# _WIDE blocks is checked against all the log's accesses instead.
_BLOCK = 6
_WIDE = 256


class _Index:
    """Accesses by the window bytes they touch. :meth:`retire` drops
    accesses (marked, then compacted away once they are half the index),
    so a log that keeps only what can still race stays that size."""

    def __init__(self):
        self.all = []
        self._blocks = {}
        self._wide = []
        self._retired = 0

    def overlapping(self, access):
        """(other, lo, hi) for each live access sharing bytes ``lo``..
        ``hi`` with ``access`` (anything with ``start`` and ``end``)."""
        first, last, wide = _span(access)
        if wide:
            candidates = self.all
        else:
            candidates = list(self._wide)
            for block in range(first, last + 1):
                candidates += self._blocks.get(block, ())
            if first != last:
                # One over both blocks is in each: once is enough.
                candidates = list(dict.fromkeys(candidates))
        for other in candidates:
            if other.retired:
                continue
            lo = max(other.start, access.start)
            hi = min(other.end, access.end)
            if lo < hi:
                yield other, lo, hi

    def clashes(self, access, conflict):
        """The first live access overlapping ``access`` where
        ``conflict(other, access, lo, hi)``: (other, lo, hi) or None."""
        for other, lo, hi in self.overlapping(access):
            if conflict(other, access, lo, hi):
                return other, lo, hi
        return None

    def add(self, access):
        first, last, wide = _span(access)
        self.all.append(access)
        if wide:
            self._wide.append(access)
        else:
            for block in range(first, last + 1):
                self._blocks.setdefault(block, []).append(access)

    def retire(self, accesses):
        for access in accesses:
            access.retired = True
        self._retired += len(accesses)
        if self._retired * 2 > len(self.all):
            live = [a for a in self.all if not a.retired]
            self.all, self._blocks, self._wide = [], {}, []
            self._retired = 0
            for access in live:
                self.add(access)


class _Span:
    __slots__ = ('start', 'end')

    def __init__(self, start, end):
        self.start, self.end = start, end


def _span(access):
    first = access.start >> _BLOCK
    last = (access.end - 1) >> _BLOCK
    return first, last, last - first >= _WIDE


class EpochLog:
    """The accesses of a window's current fence epoch (all its ranks)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._epoch = 0
        self._copies = None     # the windows as the epoch began
        self._index = _Index()

    def boundary(self, epoch, memories):
        """At a Fence, all ranks inside it: raise RMAConflictError if the
        program stored to bytes the ending epoch's accesses reached; then
        keep a copy of ``memories`` (window rank -> uint8 array) for the
        epoch ``epoch`` that begins."""
        with self._lock:
            if self._epoch == epoch - 1 and self._index.all:
                self._check_stores(memories)
            self._epoch = epoch
            self._index = _Index()
            total = sum(m.nbytes for m in memories)
            self._copies = None if total > _COPY_LIMIT else [
                m.copy() for m in memories]

    def _check_stores(self, memories):
        copies = self._copies
        if copies is None:
            return
        found = replay_stores(dict(enumerate(copies)),
                              dict(enumerate(memories)), self._index.all)
        if found is not None:
            raise RMAConflictError(_stored(*found, epoch=_FENCE_EPOCH))

    def note(self, epoch, access):
        """Keep ``access`` (made in fence epoch ``epoch``); raise
        RMAConflictError if its order against another origin's shows."""
        with self._lock:
            if epoch != self._epoch:
                # A rank in a newer epoch: every rank has left the older.
                self._epoch = epoch
                self._index = _Index()
            clash = self._index.clashes(access, _conflict)
            if clash is not None:
                other, lo, hi = clash
                raise RMAConflictError(_describe(
                    other, access, lo, hi, _FENCE))
            self._index.add(access)


class ExposureLog:
    """The accesses of each open exposure epoch (``Post`` .. ``Wait``) of
    a window's ranks. MPI completes them at the target only at its
    ``Wait``: a ``Complete`` and a message after it do not order one
    origin's accesses before another's, so within one exposure epoch
    they are as unordered as in a fence epoch (the same rule). The
    target's own stores are checked as a fence's are: a copy of its
    memory taken at ``Post``, the epoch's accesses replayed over it at
    ``Wait``."""

    def __init__(self):
        self._lock = threading.Lock()
        self._epochs = {}       # (target, exposure number) -> _Index
        self._copies = {}       # (target, exposure number) -> its memory

    def begin(self, target, exposure, memory):
        """``target`` posts exposure epoch ``exposure`` over ``memory``
        (uint8; no origin can reach it yet): keep a copy to replay the
        epoch's accesses over at its end."""
        if memory.nbytes <= _COPY_LIMIT:
            with self._lock:
                self._copies[(target, exposure)] = memory.copy()

    def note(self, target, exposure, access):
        """Keep ``access`` (to ``target`` in its exposure epoch number
        ``exposure``); raise RMAConflictError if its order against
        another origin's shows."""
        with self._lock:
            index = self._epochs.setdefault((target, exposure), _Index())
            clash = index.clashes(access, _conflict)
            if clash is not None:
                other, lo, hi = clash
                raise RMAConflictError(_describe(
                    other, access, lo, hi, _EXPOSURE, target))
            index.add(access)

    def end(self, target, exposure, memory):
        """``target``'s Wait ended exposure epoch ``exposure``: raise
        RMAConflictError if it stored to ``memory`` (its window, uint8)
        where another origin's access of the epoch reached."""
        with self._lock:
            index = self._epochs.pop((target, exposure), None)
            copy = self._copies.pop((target, exposure), None)
        if index is None or copy is None:
            return
        # The target's own accesses to itself are left out: its program
        # orders them against its stores (or not) by itself.
        found = replay_stores({target: copy}, {target: memory}, index.all,
                              report=lambda a: a.origin != target)
        if found is not None:
            raise RMAConflictError(_stored(*found, epoch=_EXPOSURE_EPOCH))


class LockLog:
    """The accesses made in shared passive target epochs (``Lock`` with
    ``LOCK_SHARED``, ``Lock_all``) that their origin has not completed
    yet (``Flush``/``Unlock`` of the target).

    Two accesses to one location are ordered if the first's origin
    completes it (Flush/Unlock) and then, by a message, a barrier or
    anything else, the second's origin learns of it; or if someone sees
    the first's bytes land and passes that on: in the unified memory
    model the target may poll its window with loads and act on what it
    sees (``mpi4py.util.sync`` hands its lock over so), and any rank may
    read them with an RMA read. The simulator keeps no happens-before
    relation, so it reports only pairs that need none: the second made
    while the first is not yet completed by its origin, no RMA read has
    seen the first's bytes since it was made, and every thread of the
    target was blocked in one MPI call all along, from the first to the
    second (so it loaded nothing). Nothing can order such a pair, so a
    correct program is never reported; a racy one passes when its ranks
    happen not to overlap so (a target that keeps computing, or spins,
    while others race on its window; an epoch that ended first). Windows
    of ``Allocate_shared`` are not checked: every rank of the node may
    load their memory.

    One origin's own accesses are unordered too until it completes them
    (two Puts of different bytes before a Flush), but for its
    accumulates, which MPI orders. Exclusive locks serialize epochs:
    their accesses are neither kept nor checked. Request-based reads
    (``Rget``, ``Rget_accumulate``) complete with their request, so they
    are checked and not kept. Among accumulate-family calls of different
    origins MPI makes those with one op, or ``NO_OP``, atomic
    (``REPLACE`` with ``Compare_and_swap`` too, as ``mpi4py.util.sync``
    relies on): their order is no race. The target's own loads and
    stores are not checked against these accesses."""

    def __init__(self):
        self._lock = threading.Lock()
        self._index = _Index()
        self._open = {}         # (origin, target) -> its accesses kept

    def note(self, access, quiet, reads, keep=True):
        """Check ``access`` (from ``access.origin`` to ``access.target``)
        against the accesses not completed yet, raising RMAConflictError
        on a conflict; keep it (``keep``) until its origin completes it
        (:meth:`complete`). ``quiet``: what the target's threads are
        blocked in now (None: one is not blocked); ``reads``: the access
        returns the bytes it reached (it sees those accesses land)."""
        access.quiet = quiet
        with self._lock:
            clash = self._index.clashes(access, _passive_conflict)
            if clash is not None:
                other, lo, hi = clash
                raise RMAConflictError(_describe(
                    other, access, lo, hi, _PASSIVE,
                    other.record.rank, other.target))
            if reads:
                self._observe(access)
            if keep:
                self._index.add(access)
                self._open.setdefault((access.origin, access.target),
                                      []).append(access)

    def seen(self, start, end):
        """An RMA read returned bytes ``start``..``end`` (addresses) that
        is not checked itself (a derived target datatype's)."""
        with self._lock:
            self._observe(_Span(start, end))

    def _observe(self, read):
        for other, _, _ in self._index.overlapping(read):
            other.observed = True

    def complete(self, origin, target=None):
        """``origin`` completed its accesses to ``target`` (None: to
        every target) by a Flush or Unlock: they can race no more."""
        with self._lock:
            keys = [(origin, target)] if target is not None else [
                key for key in self._open if key[0] == origin]
            done = []
            for key in keys:
                done += self._open.pop(key, ())
            if done:
                self._index.retire(done)


class _Watched:
    """An access of a passive target epoch not completed yet: the bytes
    RMA calls left in its range (``expected``), its target's memory
    there, and the first range a store changed before another access
    landed (``stored``)."""

    __slots__ = ('access', 'start', 'end', 'expected', 'memory', 'itemsize',
                 'stored', 'exempt', 'retired')

    def __init__(self, access, view, exempt):
        self.access = access
        self.start, self.end = access.start, access.end
        self.expected = bytearray(access.after)
        self.memory = view.reshape(-1).view(np.uint8)
        self.itemsize = view.dtype.itemsize
        self.stored = None
        self.exempt = exempt
        self.retired = False


class StoreWatch:
    """The target's own stores to bytes that passive target accesses
    (``Lock``, ``Lock_all``; exclusive or shared) reached before their
    origin completed them (``Flush*``, ``Unlock*``).

    An access lands at its call here; until its completion, the bytes it
    left (a Put's, an accumulate's) or read (a Get's) must stay what it,
    and the RMA calls made since, left there: the target's store
    meanwhile may land before or after it on a real MPI. Each such
    access is watched (:meth:`open`) with the bytes RMA left in its
    range, updated by every later access (:meth:`landed`), and compared
    with the memory at its completion (:meth:`complete`). A store
    ordered after the completion (a message, a barrier) is not seen at
    all, and one under the target's exclusive lock of its own window
    cannot overlap a counted lock's epoch. In the unified memory model a
    target that synchronizes its window copies (``Win.Sync``) may see an
    access land and then store over it (``mpi4py.util.sync``'s Condition
    resets its flag so): the accesses open at a target's ``Sync``, and
    those landing while it is in an epoch on its own window in which it
    called ``Sync``, are not checked. Nor are an origin's accesses to
    itself, a request-based read's (complete with its request), padded
    types' and derived target types' (their bytes are taken as they are
    after them). All methods run under the window's mutex."""

    def __init__(self):
        self._index = {}        # target -> _Index of _Watched
        self._open = {}         # (origin, target) -> [_Watched]
        self.synced = set()     # targets whose own epoch had a Sync

    def busy(self, target):
        """Whether accesses to ``target`` are watched."""
        return bool(self._index.get(target) and self._index[target].all)

    def landed(self, target, access=None, span=None):
        """An RMA ``access`` landed on ``target`` (or, with ``span``, one
        whose bytes ``span`` (start, end) are taken as they are now)."""
        index = self._index.get(target)
        if not index:
            return
        reach = access if access is not None else _Span(*span)
        for watched, lo, hi in index.overlapping(reach):
            mine = slice(lo - watched.start, hi - watched.start)
            if access is None or access.padded:
                watched.expected[mine] = watched.memory[mine].tobytes()
                continue
            theirs = slice(lo - access.start, hi - access.start)
            if watched.stored is None and not watched.exempt:
                watched.stored = _differ(watched, lo, access.before[theirs])
            watched.expected[mine] = access.after[theirs]

    def open(self, access, view):
        """Watch ``access`` (landed at ``view``, the array it reached)
        until its origin completes it."""
        if access.padded or access.origin == access.target:
            return
        watched = _Watched(access, view, access.target in self.synced)
        self._index.setdefault(access.target, _Index()).add(watched)
        self._open.setdefault((access.origin, access.target),
                              []).append(watched)

    def sync(self, target, in_epoch):
        """``target`` called ``Win.Sync`` (``in_epoch``: in a passive
        target epoch on its own window): it may load what landed."""
        index = self._index.get(target)
        for watched in index.all if index else ():
            watched.exempt = True
        if in_epoch:
            self.synced.add(target)

    def complete(self, origin, target, closing, reads=False):
        """``origin`` completed its accesses to ``target`` (None: every
        target; ``reads``: only its reads, locally) by ``closing`` (the
        call's name): raise RMAConflictError if the target stored where
        one reached meanwhile. They are watched no more."""
        keys = [(origin, target)] if target is not None else [
            key for key in self._open if key[0] == origin]
        found = None
        for key in keys:
            watched = self._open.pop(key, ())
            if reads:
                kept = [w for w in watched if not _reads(w.access)]
                watched = [w for w in watched if _reads(w.access)]
                if kept:
                    self._open[key] = kept
            for one in watched:
                if found is None and not one.exempt:
                    found = _store_in(one)
            if watched:
                self._index[key[1]].retire(watched)
        if found is not None:
            raise RMAConflictError(_passive_store(closing, *found))


def _reads(access):
    return access.kind in ('get', 'accumulate MPI_NO_OP')


def _store_in(watched):
    """(access, lo, hi): the elements of ``watched`` a store changed, or
    None."""
    stored = watched.stored or _differ(watched, watched.start,
                                       watched.memory.tobytes())
    return None if stored is None else (watched.access,) + stored


def _differ(watched, lo, now):
    """The addresses (lo, hi) of the elements of ``watched`` where bytes
    ``now`` (from address ``lo``) differ from what RMA left, or None."""
    at = lo - watched.start
    expected = watched.expected[at:at + len(now)]
    if now == expected:
        return None
    changed = np.flatnonzero(np.frombuffer(now, np.uint8) !=
                             np.frombuffer(expected, np.uint8)) + at
    size = watched.itemsize
    first = int(changed[0]) // size * size
    last = (int(changed[-1]) // size + 1) * size
    return watched.start + first, watched.start + last


def _passive_store(closing, access, lo, hi):
    return ('rank {}\'s window memory was written by a store (not an RMA '
            'call) at bytes {}..{}, which rank {} {} reached before its '
            '{} completed it (in a passive target epoch): MPI forbids a '
            'load/store to window bytes an RMA operation reaches until it '
            'completes at the target (a real MPI may see or keep either '
            'value). Complete the access (Flush or Unlock) and tell the '
            'target (a message, a barrier) before it stores, or store under '
            'its exclusive lock of its own window'.format(
                access.target, lo - access.base, hi - access.base - 1,
                access.record.rank, access.record.describe(), closing))


def _atomic_op(access):
    """An accumulate-family access's op ('MPI_SUM', 'MPI_NO_OP', 'CAS'),
    or None for a Put or Get."""
    if access.kind.startswith('accumulate '):
        return access.kind[len('accumulate '):]
    return 'CAS' if access.kind == 'compare-and-swap' else None


def _passive_conflict(a, b, lo, hi):
    if a.quiet is None or a.quiet != b.quiet or a.observed:
        return False    # something may have ordered them (LockLog)
    ops = {_atomic_op(a), _atomic_op(b)}
    if None not in ops and (a.origin == b.origin or len(ops) == 1 or
                            'MPI_NO_OP' in ops or
                            ops == {'MPI_REPLACE', 'CAS'}):
        # MPI orders one origin's accumulates to a location, and makes
        # those of one op (or NO_OP) atomic against each other.
        return False
    return _order_shows(a, b, lo, hi)


# Windows larger than this (all ranks' memory) are not copied at each
# Fence: their stores go unchecked.
_COPY_LIMIT = 64 << 20


def replay_stores(copies, memories, accesses, report=None):
    """Replay ``accesses`` (in the order they were made) over ``copies``
    of the memories they reached (window rank -> uint8 array, as the
    epoch began) and compare with ``memories`` (the same ranks, now):
    bytes that differ from what an access saw or left were written by a
    store meanwhile. Return (target, access, 'before' or 'after') for the
    first such access for which ``report(access)`` (default: all), else
    None."""
    ranks = list(memories)
    bases = [memories[r].__array_interface__['data'][0] for r in ranks]
    sizes = [memories[r].nbytes for r in ranks]
    replay, reached = {}, {}
    for access in accesses:
        where = _locate(ranks, bases, sizes, access)
        if where is None or access.padded:
            continue
        target, lo, hi = where
        seen = replay.setdefault(target, copies[target].copy())
        if seen[lo:hi].tobytes() != access.before and (
                report is None or report(access)):
            return target, access, 'before'
        seen[lo:hi] = np.frombuffer(access.after, np.uint8)
        if report is None or report(access):
            reached.setdefault(target, []).append((lo, hi, access))
    for target, spans in reached.items():
        now, seen = memories[target], replay[target]
        for lo, hi, access in spans:
            if not np.array_equal(now[lo:hi], seen[lo:hi]):
                return target, access, 'after'
    return None


def _locate(ranks, bases, sizes, access):
    for target, base, size in zip(ranks, bases, sizes):
        if base <= access.start and access.end <= base + size:
            return target, access.start - base, access.end - base
    return None


_FENCE_EPOCH = ('the fence epoch', 'Separate them with a Fence')
_EXPOSURE_EPOCH = ('its exposure epoch (Post .. Wait)',
                   'Store before the Post or after the Wait')


def _stored(target, access, when, epoch):
    return ('rank {}\'s window memory was written by a store (not an RMA '
            'call) in {} in which rank {} {} reached the same bytes ({} '
            'it): MPI forbids a load/store to window bytes that an RMA '
            'operation of the same epoch accesses (a real MPI may see or '
            'keep either value). {}'.format(
                target, epoch[0], access.record.rank,
                access.record.describe(), when, epoch[1]))


_FENCE = 'in one fence epoch'
_EXPOSURE = ('in one exposure epoch (Post .. Wait) of rank {}, where MPI '
             'orders no two origins\' accesses (a Complete does not '
             'complete them at the target: only its Wait does)')
_PASSIVE = ('in concurrent passive target epochs (shared locks): the '
            'first was not completed yet by a Flush or Unlock of rank {}, '
            'nor its bytes read, and rank {} was blocked in one call all '
            'along, when the second was made, so nothing orders them')
_REMEDY = {
    _FENCE: 'Separate them with a Fence, or use accumulates with one op',
    _EXPOSURE: 'Put them in different exposure epochs (Post .. Wait), or '
               'use accumulates with one op',
    _PASSIVE: 'Complete the first (Flush or Unlock) before the second '
              'is made (from another rank: then tell that rank, by a '
              'message or a barrier), lock with LOCK_EXCLUSIVE, or use '
              'accumulates with one op',
}


def _describe(first, second, lo, hi, epoch, *args):
    """The report of ``first`` and ``second`` clashing on addresses
    ``lo``..``hi``, in an epoch described by template ``epoch``
    (formatted with ``args``)."""
    return ('rank {} {} and rank {} {} reach the same {} byte(s) of {} '
            'window (bytes {}..{}) {}, and their order shows in the '
            'result: MPI leaves it undefined (a real MPI may apply either '
            'first). {}'.format(
                first.record.rank, first.record.describe(),
                second.record.rank, second.record.describe(), hi - lo,
                'a' if first.target is None else
                'rank {}\'s'.format(first.target),
                lo - first.base, hi - first.base - 1,
                epoch.format(*args), _REMEDY[epoch]))
