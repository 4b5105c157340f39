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
Passive target (Lock) and Post/Start epochs are not checked.

A load/store is the other half: a window's memory written by the
program (not through RMA) in the fence epoch in which an operation
reached the same bytes. Each ``Fence`` keeps a copy of the windows (all
ranks are inside it: nothing moves), and the next one replays the
epoch's accesses over it: bytes that differ from what the accesses saw
or left were stored to in between.
"""
import threading

import numpy as np

from simulator.errors import RMAConflictError

__all__ = ['Access', 'EpochLog', 'is_padded', 'settled_bytes']

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
    ``kind`` 'get', 'put' or an accumulate's op name; ``before`` and
    ``after`` the bytes there around it."""

    __slots__ = ('origin', 'kind', 'start', 'end', 'before', 'after',
                 'record', 'padded')

    def __init__(self, origin, kind, start, before, after, record,
                 padded=False):
        self.origin = origin
        self.kind = kind
        self.start = start
        self.end = start + len(before)
        self.before = before
        self.after = after
        self.record = record
        self.padded = padded    # settled bytes: not the memory's own

    def _part(self, data, lo, hi):
        return data[lo - self.start:hi - self.start]

    def changed(self, lo, hi):
        return self._part(self.before, lo, hi) != \
            self._part(self.after, lo, hi)


def _conflict(a, b, lo, hi):
    if a.kind == 'put' and b.kind == 'put':
        return a._part(a.after, lo, hi) != b._part(b.after, lo, hi)
    if a.kind == b.kind and a.kind != 'get':
        return False        # accumulates with one op: atomic, any order
    return a.changed(lo, hi) or b.changed(lo, hi)


# Accesses are found by the 64-byte blocks they touch; one over more than
# _WIDE blocks is checked against all the epoch's accesses instead.
_BLOCK = 6
_WIDE = 256


class EpochLog:
    """The accesses of a window's current fence epoch (all its ranks)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._epoch = 0
        self._copies = None     # the windows as the epoch began
        self._reset()

    def _reset(self):
        self._all = []
        self._blocks = {}
        self._wide = []

    def boundary(self, epoch, memories):
        """At a Fence, all ranks inside it: raise RMAConflictError if the
        program stored to bytes the ending epoch's accesses reached; then
        keep a copy of ``memories`` (window rank -> uint8 array) for the
        epoch ``epoch`` that begins."""
        with self._lock:
            if self._epoch == epoch - 1 and self._all:
                self._check_stores(memories)
            self._epoch = epoch
            self._reset()
            total = sum(m.nbytes for m in memories)
            self._copies = None if total > _COPY_LIMIT else [
                m.copy() for m in memories]

    def _check_stores(self, memories):
        copies = self._copies
        if copies is None:
            return
        bases = [m.__array_interface__['data'][0] for m in memories]
        replay, reached = {}, {}
        for access in self._all:
            where = _locate(bases, memories, access)
            if where is None or access.padded:
                continue
            target, lo, hi = where
            seen = replay.setdefault(target, copies[target].copy())
            if seen[lo:hi].tobytes() != access.before:
                raise RMAConflictError(_stored(target, access, 'before'))
            seen[lo:hi] = np.frombuffer(access.after, np.uint8)
            reached.setdefault(target, []).append((lo, hi, access))
        for target, spans in reached.items():
            now, seen = memories[target], replay[target]
            for lo, hi, access in spans:
                if not np.array_equal(now[lo:hi], seen[lo:hi]):
                    raise RMAConflictError(_stored(target, access, 'after'))

    def note(self, epoch, access):
        """Keep ``access`` (made in fence epoch ``epoch``); raise
        RMAConflictError if its order against another origin's shows."""
        first = access.start >> _BLOCK
        last = (access.end - 1) >> _BLOCK
        wide = last - first >= _WIDE
        with self._lock:
            if epoch != self._epoch:
                # A rank in a newer epoch: every rank has left the older.
                self._epoch = epoch
                self._reset()
            if wide:
                candidates = self._all
            else:
                candidates = list(self._wide)
                for block in range(first, last + 1):
                    candidates += self._blocks.get(block, ())
            for other in candidates:
                if other.origin == access.origin:
                    continue
                lo = max(other.start, access.start)
                hi = min(other.end, access.end)
                if lo < hi and _conflict(other, access, lo, hi):
                    raise RMAConflictError(_describe(other, access, lo, hi))
            self._all.append(access)
            if wide:
                self._wide.append(access)
            else:
                for block in range(first, last + 1):
                    self._blocks.setdefault(block, []).append(access)


# Windows larger than this (all ranks' memory) are not copied at each
# Fence: their stores go unchecked.
_COPY_LIMIT = 64 << 20


def _locate(bases, memories, access):
    for target, (base, memory) in enumerate(zip(bases, memories)):
        if base <= access.start and access.end <= base + memory.nbytes:
            return target, access.start - base, access.end - base
    return None


def _stored(target, access, when):
    return ('rank {}\'s window memory was written by a store (not an RMA '
            'call) in the fence epoch in which rank {} {} reached the same '
            'bytes ({} it): MPI forbids a load/store to window bytes that '
            'an RMA operation of the same epoch accesses (a real MPI may '
            'see or keep either value). Separate them with a Fence'.format(
                target, access.record.rank, access.record.describe(), when))


def _describe(first, second, lo, hi):
    return ('rank {} {} and rank {} {} reach the same {} byte(s) of a '
            'window in one fence epoch, and their order shows in the '
            'result: MPI leaves it undefined (a real MPI may apply either '
            'first). Separate them with a Fence, or use accumulates with '
            'one op'.format(
                first.record.rank, first.record.describe(),
                second.record.rank, second.record.describe(), hi - lo))
