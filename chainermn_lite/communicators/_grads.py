"""Which gradients take part in a mean, checked to agree across ranks.

ChainerMN skips parameters whose grad is None (``zero_fill=False``) or
fills them with zeros (``zero_fill=True``). When a grad is None on some
ranks only, ChainerMN's ranks then reduce different buffers and freeze
(chainer#6133). Here every call first exchanges a tiny fingerprint (one
small Allreduce); if it differs, every rank raises the same error naming
the parameter and the ranks, instead of hanging.

The same exchange tells whether every rank's grads live in its
``GradArena`` (one flat buffer per dtype), in which case the mean is taken
over those buffers where they lie: one chunked Allreduce per buffer, no
packing, no call per array.
"""
import functools
import operator
import threading
import weakref

import numpy

from chainermn_lite import _device
from chainermn_lite.communicators import _object_collectives

__all__ = ['params_with_data', 'grads_for_mean', 'GradArena',
           'GradientMismatchError', 'check_same_data']

_FLOAT_KINDS = 'f'
# Fixed odd weights make the fingerprint position-sensitive.
_WEIGHT_A = 2654435761
_WEIGHT_B = 40503
_WORD = 1 << 62            # keeps every word inside int64


class GradientMismatchError(ValueError):
    """Ranks disagree on which gradients (or shapes) take part in a mean,
    or on the parameters whose data ``bcast_data`` broadcasts."""


def params_with_data(model):
    """(name, param) pairs in name order, skipping uninitialised params."""
    # raw_array: half the cost of .data, which mean_grad and bcast_data
    # pay for every parameter at every call.
    return [(name, p) for name, p in sorted(model.namedparams())
            if p.raw_array is not None]


@functools.lru_cache(maxsize=32)
def _weights(n):
    """Two fixed position weights per parameter (Python ints: at the few
    parameters of a small model, NumPy's per-call cost dominated)."""
    index = range(1, n + 1)
    return ([(i * _WEIGHT_A) % 1000003 for i in index],
            [(i * _WEIGHT_B) % 999983 for i in index])


def _dot(xs, ws):
    return sum(map(operator.mul, xs, ws)) % _WORD


def _fingerprint(entries):
    """int64 words summarising (present, size, dtype) of every parameter."""
    n = len(entries)
    if not n:
        return numpy.zeros(6, dtype=numpy.int64)
    present, sizes, codes = zip(*entries)
    wa, wb = _weights(n)
    return numpy.array([
        n, _dot(present, wa), _dot(present, wb),
        _dot(map(operator.mul, sizes, present), wa), _dot(sizes, wb),
        _dot(codes, wa)], dtype=numpy.int64)


def _max_min(mpi_comm, module, words):
    """Every rank's largest and smallest value of each of ``words``, with
    one Allreduce(MAX) of [w, -w]."""
    both = numpy.concatenate([words, -words])
    out = numpy.empty_like(both)
    mpi_comm.Allreduce(both, out, op=module.MAX)
    k = words.size
    return out[:k], -out[k:]


def _agree(mpi_comm, module, words):
    """True when every rank sent the same ``words`` (one Allreduce)."""
    high, low = _max_min(mpi_comm, module, words)
    return bool((high == low).all())


def _describe_mismatch(table, zero_fill, rank, what='multi_node_mean_grad',
                       items='gradients to average'):
    """Error text from every rank's [(name, has_grad, shape, dtype)]."""
    names = sorted({e[0] for rows in table for e in rows})
    by_rank = [{e[0]: e[1:] for e in rows} for rows in table]
    lines = []
    for name in names:
        seen = [r.get(name) for r in by_rank]
        missing = [i for i, s in enumerate(seen) if s is None]
        if missing:
            lines.append('parameter {} is uninitialised or absent on ranks '
                         '{}'.format(name, missing))
            continue
        if not zero_fill:
            none_on = [i for i, s in enumerate(seen) if not s[0]]
            if none_on and len(none_on) < len(seen):
                lines.append(
                    'parameter {} has grad None on ranks {} but not on the '
                    'others (pass zero_fill=True to treat a missing grad as '
                    'zeros)'.format(name, none_on))
                continue
        shapes = {(s[1], s[2]) for s in seen if zero_fill or s[0]}
        if len(shapes) > 1:
            lines.append('parameter {} differs across ranks: {}'.format(
                name, ', '.join('rank {}: shape {} dtype {}'.format(
                    i, s[1], s[2]) for i, s in enumerate(seen))))
    if not lines:
        lines.append('parameter lists differ across ranks')
    return '{} (rank {}): ranks disagree on the {}:\n  '.format(
        what, rank, items) + '\n  '.join(lines)


def check_same_data(mpi_comm, module, named, max_buf_len):
    """Raise GradientMismatchError on every rank unless every rank holds
    parameters (``named``: :func:`params_with_data`) of the same sizes
    and dtypes, in the same order: ``bcast_data`` moves their bytes end
    to end, and a rank with another layout would get another rank's
    bytes in its arrays (under MPI, silently). One small Allreduce."""
    if mpi_comm.Get_size() == 1:
        return
    arrays = [p.raw_array for _, p in named]
    entries = [(1, a.size, ord(a.dtype.char)) for a in arrays]
    if _agree(mpi_comm, module, _fingerprint(entries)):
        return
    mine = [(name, True, tuple(a.shape), str(a.dtype))
            for (name, _), a in zip(named, arrays)]
    table = _object_collectives.allgather_obj(mpi_comm, mine, max_buf_len)
    raise GradientMismatchError(_describe_mismatch(
        table, True, mpi_comm.Get_rank(), 'bcast_data',
        'parameters to broadcast'))


def grads_for_mean(mpi_comm, module, model, zero_fill, max_buf_len,
                   arena=None):
    """``(params, grads, in_arenas)``: the grads to average and their
    params, after the cross-rank agreement check; ``in_arenas`` is True
    when on every rank they are exactly ``arena``'s views (so that the
    mean may be taken over ``arena.flats()`` instead).

    With ``zero_fill`` a None grad becomes zeros (assigned to the param);
    without it, params whose grad is None are left out, which must then be
    the case on every rank.
    """
    named = params_with_data(model)
    current = [p.grad for _, p in named]
    entries = []
    for (_, p), g in zip(named, current):
        if g is None:
            entries.append((0 if not zero_fill else 1, p.data.size,
                            ord(p.data.dtype.char)))
        else:
            entries.append((1, g.size, ord(g.dtype.char)))
    held = arena is not None and arena.holds(current)
    agreed = True
    if mpi_comm.Get_size() > 1:
        words = numpy.append(_fingerprint(entries), int(held))
        high, low = _max_min(mpi_comm, module, words)
        agreed = bool((high[:-1] == low[:-1]).all())
        held = bool(low[-1] == 1)
    if not agreed:
        mine = [(name, p.grad is not None, tuple(p.data.shape),
                 str((p.grad if p.grad is not None else p.data).dtype))
                for name, p in named]
        table = _object_collectives.allgather_obj(mpi_comm, mine,
                                                  max_buf_len)
        raise GradientMismatchError(_describe_mismatch(
            table, zero_fill, mpi_comm.Get_rank()))
    if held:
        return [p for _, p in named], current, True
    params, grads = [], []
    for (name, p), g in zip(named, current):
        if g is None:
            if not zero_fill:
                continue
            g = p.xp.zeros_like(p.data)
            p.grad = g
        if g.dtype.kind not in _FLOAT_KINDS:
            raise TypeError('multi_node_mean_grad (rank {}): parameter {} '
                            'has a {} grad; only float16/32/64 grads can be '
                            'averaged'.format(mpi_comm.Get_rank(), name,
                                              g.dtype))
        params.append(p)
        grads.append(g)
    return params, grads, False


_ARENA_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


class GradArena:
    """One flat buffer per dtype (and GPU, for CuPy arrays) for params'
    arrays that stay the same.

    When a mean is taken over the very grad arrays of the previous mean
    (grads updated in place, a benchmark's model), ``settle`` moves them
    into one flat buffer per dtype and makes the params' ``.grad`` views of
    it; from then on the mean runs over those buffers where they lie (on a
    GPU: no packing kernels, NCCL reduces the buffer in place). A
    grad replaced by another array (Chainer's backward makes new ones) is
    simply not the arena's any more and the usual path takes it. The arena
    holds weak references only: the buffers live as long as the params'
    views of them. There is one per model, whatever the communicator (two
    communicators averaging one model would otherwise take its grads from
    each other's buffer at every call). ``attr='data'`` does the same for
    the params' data (``bcast_data``).
    """

    _of_model = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    @classmethod
    def of(cls, model, attr='grad'):
        """The arena of ``model``'s ``attr`` arrays (made on first use; a
        model that cannot be a weak dict key gets a fresh one each time,
        which never holds anything: the usual path)."""
        with cls._lock:
            try:
                arenas = cls._of_model.get(model)
                if arenas is None:
                    arenas = cls._of_model[model] = {}
            except TypeError:      # unhashable (__eq__ only) or no weakref
                return cls(attr)
            if attr not in arenas:
                arenas[attr] = cls(attr)
            return arenas[attr]

    def __init__(self, attr='grad'):
        self._attr = attr
        self._views = ()       # weak references to the bound views
        self._flats = ()       # weak references to the flat buffers
        self._previous = ()    # weak references to the last mean's grads

    def holds(self, grads):
        """Whether ``grads`` are exactly the arena's views, in order."""
        views = self._views
        return bool(views) and len(views) == len(grads) and all(
            g is not None and r() is g for r, g in zip(views, grads))

    def flats(self):
        """The flat buffers, one per dtype (valid while ``holds``)."""
        return [r() for r in self._flats]

    def settle(self, params, grads):
        """After a mean of ``params``' ``grads`` outside the arena: if they
        are the previous mean's arrays again, move them into the arena."""
        if self.holds(grads):
            return     # another rank's were not: already where they go
        previous, self._previous = self._previous, ()
        kind = type(grads[0]) if grads else None
        if kind is None or not (kind is numpy.ndarray or
                                _device.is_device_array(grads[0])) or \
                not all(type(g) is kind and g.dtype in _ARENA_DTYPES
                        for g in grads):
            return
        if len(previous) != len(grads) or not all(
                r() is g for r, g in zip(previous, grads)):
            self._previous = [weakref.ref(g) for g in grads]
            return
        if len(set(map(id, grads))) != len(grads):
            return             # one array for two params: keep it shared
        on_device = kind is not numpy.ndarray
        by_place = {}
        for p, g in zip(params, grads):
            place = (g.device.id if on_device else None, g.dtype)
            by_place.setdefault(place, []).append((p, g))
        views, flats = [None] * len(grads), []
        position = {id(p): k for k, p in enumerate(params)}
        for (device_id, dtype), members in by_place.items():
            flat = _empty(kind, device_id, sum(g.size for _, g in members),
                          dtype)
            offset = 0
            for p, g in members:
                view = flat[offset:offset + g.size].reshape(g.shape)
                view[...] = g
                setattr(p, self._attr, view)
                views[position[id(p)]] = view
                offset += g.size
            flats.append(flat)
        self._views = [weakref.ref(v) for v in views]
        self._flats = [weakref.ref(f) for f in flats]


def _empty(kind, device_id, n, dtype):
    """A flat array of ``kind`` (NumPy's or CuPy's), on ``device_id``."""
    if device_id is None:
        return numpy.empty(n, dtype)
    import cupy
    with cupy.cuda.Device(device_id):
        return cupy.empty(n, dtype)
