"""Which gradients take part in a mean, checked to agree across ranks.

ChainerMN skips parameters whose grad is None (``zero_fill=False``) or
fills them with zeros (``zero_fill=True``). When a grad is None on some
ranks only, ChainerMN's ranks then reduce different buffers and freeze
(chainer#6133). Here every call first exchanges a tiny fingerprint (one
small Allreduce); if it differs, every rank raises the same error naming
the parameter and the ranks, instead of hanging.
"""
import functools
import operator

import numpy

from chainermn_lite.communicators import _object_collectives

__all__ = ['params_with_data', 'grads_for_mean', 'GradientMismatchError']

_FLOAT_KINDS = 'f'
# Fixed odd weights make the fingerprint position-sensitive.
_WEIGHT_A = 2654435761
_WEIGHT_B = 40503
_WORD = 1 << 62            # keeps every word inside int64


class GradientMismatchError(ValueError):
    """Ranks disagree on which gradients (or shapes) take part in a mean."""


def params_with_data(model):
    """(name, param) pairs in name order, skipping uninitialised params."""
    return [(name, p) for name, p in sorted(model.namedparams())
            if p.data is not None]


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


def _agree(mpi_comm, module, words):
    """One Allreduce(MAX) of [w, -w]: True when every rank sent ``words``."""
    both = numpy.concatenate([words, -words])
    out = numpy.empty_like(both)
    mpi_comm.Allreduce(both, out, op=module.MAX)
    k = words.size
    return bool((out[:k] == -out[k:]).all())


def _describe_mismatch(table, zero_fill, max_buf_len, rank):
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
    return 'multi_node_mean_grad (rank {}): ranks disagree on the ' \
        'gradients to average:\n  '.format(rank) + '\n  '.join(lines)


def grads_for_mean(mpi_comm, module, model, zero_fill, max_buf_len):
    """The grads to average, after the cross-rank agreement check.

    With ``zero_fill`` a None grad becomes zeros (assigned to the param);
    without it, params whose grad is None are left out, which must then be
    the case on every rank.
    """
    named = params_with_data(model)
    entries = []
    for _, p in named:
        g = p.grad
        if g is None:
            entries.append((0 if not zero_fill else 1, p.data.size,
                            ord(p.data.dtype.char)))
        else:
            entries.append((1, g.size, ord(g.dtype.char)))
    if mpi_comm.Get_size() > 1 and not _agree(
            mpi_comm, module, _fingerprint(entries)):
        mine = [(name, p.grad is not None, tuple(p.data.shape),
                 str((p.grad if p.grad is not None else p.data).dtype))
                for name, p in named]
        table = _object_collectives.allgather_obj(mpi_comm, mine,
                                                  max_buf_len)
        raise GradientMismatchError(_describe_mismatch(
            table, zero_fill, max_buf_len, mpi_comm.Get_rank()))
    grads = []
    for name, p in named:
        g = p.grad
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
        grads.append(g)
    return grads
