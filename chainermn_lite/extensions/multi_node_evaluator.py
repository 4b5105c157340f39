"""Evaluation split over ranks, reported as one global mean.

Each rank evaluates its share of the test set; the reported value is the
mean over every example of every rank. Sums and counts are exchanged
rather than means, so ranks holding different numbers of examples (a
``scatter_dataset(..., force_equal_length=False)`` test set) are
weighted correctly, and so is a short last batch.
"""
import copy

import chainer
from chainer.dataset import convert
from chainermn_lite._checks import check_communicator

__all__ = ['create_multi_node_evaluator', 'weighted_global_mean']


def weighted_global_mean(communicator, sums, count):
    """weighted_global_mean(communicator, sums, count): {key: sum of sums /
    sum of counts} over all ranks; a key missing on a rank counts as 0."""
    gathered = communicator.allgather_obj((dict(sums), int(count)))
    total = sum(c for _, c in gathered)
    keys = sorted({k for s, _ in gathered for k in s})
    if total == 0:
        return {}
    return {k: sum(s.get(k, 0.0) for s, _ in gathered) / total
            for k in keys}


def _batch_len(batch):
    try:
        return len(batch)
    except TypeError:
        return 1


def _local_sums(evaluator):
    """Run ``evaluator``'s loop on this rank: ({key: sum of value * batch
    length}, number of examples)."""
    iterator = evaluator.get_iterator('main')
    target = evaluator.get_target('main')
    eval_func = evaluator.eval_func or target
    if hasattr(iterator, 'reset'):
        iterator.reset()
        it = iterator
    else:
        it = copy.copy(iterator)
    sums, count = {}, 0
    for batch in it:
        observation = {}
        with chainer.reporter.report_scope(observation):
            in_arrays = convert._call_converter(
                evaluator.converter, batch, evaluator.device)
            with chainer.function.no_backprop_mode():
                if isinstance(in_arrays, tuple):
                    eval_func(*in_arrays)
                elif isinstance(in_arrays, dict):
                    eval_func(**in_arrays)
                else:
                    eval_func(in_arrays)
        n = _batch_len(batch)
        for key, value in observation.items():
            value = chainer.backend.CpuDevice().send(
                getattr(value, 'array', value))
            sums[key] = sums.get(key, 0.0) + float(value) * n
        count += n
    return sums, count


class _MultiNodeEvaluate(object):
    """Replaces ``evaluate`` on the wrapped evaluator instance."""

    def __init__(self, evaluator, communicator, original):
        self.evaluator = evaluator
        self.communicator = communicator
        self.original = original

    def __call__(self):
        ev = self.evaluator
        if self.original is None:
            sums, count = _local_sums(ev)
        else:
            # A custom evaluate(): weight its means by the dataset length.
            means = self.original()
            dataset = getattr(ev.get_iterator('main'), 'dataset', None)
            count = len(dataset) if dataset is not None else 1
            sums = {k: float(chainer.backend.CpuDevice().send(
                getattr(v, 'array', v))) * count for k, v in means.items()}
        return weighted_global_mean(self.communicator, sums, count)


def create_multi_node_evaluator(actual_evaluator, communicator):
    """create_multi_node_evaluator(actual_evaluator, communicator): the
    evaluator, changed so that it reports the mean over all ranks' examples
    (every rank must run it at the same time; every rank gets the result).
    """
    check_communicator(communicator, 'create_multi_node_evaluator')
    own = type(actual_evaluator).evaluate
    original = None
    if own is not chainer.training.extensions.Evaluator.evaluate:
        original = actual_evaluator.evaluate
    actual_evaluator.evaluate = _MultiNodeEvaluate(
        actual_evaluator, communicator, original)
    return actual_evaluator
