"""Evaluation whose results are not means: every rank's per-batch results
go to one rank, which combines them however the user likes.

Ranks may hold different numbers of batches. Every ``gather_interval``
batches the ranks send the results of that many batches to ``root`` in one
``gather_obj`` (ChainerMN sends one per batch) and ``root`` broadcasts
whether any rank has batches left.
"""
import copy
import itertools

import chainer
from chainer.dataset import convert
from chainer.utils import argument

__all__ = ['GenericMultiNodeEvaluator']


class GenericMultiNodeEvaluator(chainer.training.Extension):
    """GenericMultiNodeEvaluator(comm, iterator, target, device=None,
    converter=convert.concat_examples, root=0, *, progress_hook=None):
    runs ``calc_local`` on every batch of every rank and ``aggregate`` once,
    on ``root``, with all their results.

    Override ``calc_local(*args, **kwargs)`` (the converter's output; the
    default calls ``target``) and ``aggregate(results)`` (default: the
    list itself). ``results`` lists batch 0 of ranks 0, 1, ..., then batch
    1 of each rank, and so on, skipping ranks that ran out and results that
    are None. Calling the extension returns ``aggregate``'s value on
    ``root`` and None on the other ranks; ``comm=None`` evaluates locally.
    ``progress_hook(batch)`` runs on ``root`` for its own batches.
    """

    trigger = 1, 'epoch'
    default_name = 'validation'
    priority = chainer.training.PRIORITY_WRITER
    name = None
    gather_interval = 8

    def __init__(self, comm, iterator, target, device=None,
                 converter=convert.concat_examples, root=0, **kwargs):
        progress_hook, = argument.parse_kwargs(
            kwargs, ('progress_hook', None))
        if comm is not None and not 0 <= root < comm.size:
            raise ValueError('GenericMultiNodeEvaluator: root {} is not a '
                             'rank of {!r} (size {})'.format(
                                 root, comm, comm.size))
        self.comm = comm
        self.iterator = iterator
        self._targets = {'main': target}
        self.converter = converter
        if device is not None:
            device = chainer.backend.get_device(device)
        self.device = device
        self.root = root
        self._progress_hook = progress_hook

    def __call__(self, trainer=None):
        """Evaluate the whole iterator; ``aggregate``'s value on root."""
        if hasattr(self.iterator, 'reset'):
            self.iterator.reset()
            iterator = self.iterator
        else:
            iterator = copy.copy(self.iterator)
        local = self._local_results(iterator)
        if self.comm is None:
            return self.aggregate([r for r in local if r is not None])
        results = self._gather(local)
        return self.aggregate(results) if self.comm.rank == self.root \
            else None

    def calc_local(self, *args, **kwargs):
        """calc_local(*args, **kwargs): the result of one batch (default:
        ``target(*args, **kwargs)``); it must be picklable."""
        return self._targets['main'](*args, **kwargs)

    def aggregate(self, results):
        """aggregate(results): combine every rank's ``calc_local`` results
        (on root only; default: return them)."""
        return results

    def _local_results(self, iterator):
        reports = self.comm is None or self.comm.rank == self.root
        for batch in iterator:
            in_arrays = convert._call_converter(self.converter, batch,
                                                self.device)
            with chainer.no_backprop_mode():
                if isinstance(in_arrays, tuple):
                    result = self.calc_local(*in_arrays)
                elif isinstance(in_arrays, dict):
                    result = self.calc_local(**in_arrays)
                else:
                    result = self.calc_local(in_arrays)
            if reports and self._progress_hook:
                self._progress_hook(batch)
            yield result

    def _gather(self, local):
        interval = self.gather_interval
        results = []
        while True:
            chunk = list(itertools.islice(local, interval))
            chunks = self.comm.gather_obj(chunk, root=self.root)
            done = None
            if self.comm.rank == self.root:
                for step in range(interval):
                    results.extend(c[step] for c in chunks
                                   if step < len(c) and c[step] is not None)
                done = all(len(c) < interval for c in chunks)
            if self.comm.bcast_obj(done, root=self.root):
                return results
