"""Check that every rank sees the same batch at the same step.

Ranks that should share batches but do not (a forgotten seed, a rank that
skipped a step) train silently wrong models. A check costs one small
``allgather_obj`` of a digest of the batch. The iterators' ``check``
argument: True checks every step, False never, and the default (None)
checks steps 1, 2, 4, 8, ... and the step that ends each epoch: ranks that
part ways do so from the start or at a reshuffle, and a training run of n
steps pays for about log2(n) + epochs checks, in both worlds alike.
"""
import hashlib
import pickle

import numpy

__all__ = ['BatchMismatchError', 'batch_digest', 'verify_same_batch',
           'check_due']


class BatchMismatchError(RuntimeError):
    """Ranks that must share a batch saw different ones."""


def _feed(h, obj):
    if isinstance(obj, numpy.ndarray):
        h.update(str((obj.dtype.str, obj.shape)).encode())
        h.update(numpy.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, (list, tuple)):
        h.update(b'(%d' % len(obj))
        for item in obj:
            _feed(h, item)
    elif isinstance(obj, dict):
        h.update(b'{%d' % len(obj))
        for key in sorted(obj, key=repr):
            _feed(h, key)
            _feed(h, obj[key])
    elif hasattr(obj, '__array__'):
        _feed(h, numpy.asarray(obj))
    else:
        h.update(pickle.dumps(obj, protocol=4))


def batch_digest(batch):
    """A short hex digest of a batch (arrays hashed by dtype/shape/bytes)."""
    h = hashlib.blake2b(digest_size=12)
    _feed(h, batch)
    return h.hexdigest()


def check_due(check, step, ends_epoch=False):
    """Whether to verify the batch of ``step`` (counted from 1) under the
    iterator's ``check`` setting (True, False or None, see above)."""
    if check is not None:
        return bool(check)
    return ends_epoch or step & (step - 1) == 0


def verify_same_batch(communicator, batch, step, what='iterator'):
    """verify_same_batch(communicator, batch, step): raise
    BatchMismatchError on every rank unless all ranks passed equal batches
    at the same step."""
    mine = (int(step), batch_digest(batch))
    seen = communicator.allgather_obj(mine)
    if all(entry == seen[0] for entry in seen):
        return
    groups = {}
    for rank, entry in enumerate(seen):
        groups.setdefault(entry, []).append(rank)
    detail = '; '.join('ranks {} at step {} saw batch {}'.format(
        ranks, entry[0], entry[1]) for entry, ranks in groups.items())
    raise BatchMismatchError('{}: ranks of {!r} disagree on the batch: {}'
                             .format(what, communicator, detail))
