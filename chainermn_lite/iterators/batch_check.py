"""Check that every rank sees the same batch at the same step.

Ranks that should share batches but do not (a forgotten seed, a rank that
skipped a step) train silently wrong models. The check costs one small
``allgather_obj`` of a digest per batch; the iterators run it by default
on the simulator (``mpi_comm.simulated``) and on request on real MPI.
"""
import hashlib
import pickle

import numpy

__all__ = ['BatchMismatchError', 'batch_digest', 'verify_same_batch',
           'check_enabled']


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


def check_enabled(communicator, check):
    """``check`` if given, else True on a simulated communicator."""
    if check is not None:
        return bool(check)
    return bool(getattr(communicator.mpi_comm, 'simulated', False))


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
