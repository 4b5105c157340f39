"""Report the mean over ranks of an observed value."""
import numbers

import chainer
import numpy

__all__ = ['ObservationAggregator']


class ObservationAggregator(chainer.training.Extension):
    """ObservationAggregator(comm, original_key, aggregated_key=None, *,
    comm_trigger=(1, 'iteration'), aggregator=None): reports under
    ``aggregated_key`` the aggregate of every rank's ``original_key``
    observations since the last communication.

    As in ChainerMN, ``aggregator`` takes a list (one per rank, in rank
    order) of lists of the values each rank observed (device arrays and
    Variables brought to the host) and runs on rank 0 alone, whose result
    every rank reports; the default averages all the values. Nothing is
    reported when no rank observed anything."""

    trigger = 1, 'iteration'
    priority = chainer.training.PRIORITY_EDITOR
    name = None

    def __init__(self, comm, original_key, aggregated_key=None, *,
                 comm_trigger=(1, 'iteration'), aggregator=None):
        self.comm = comm
        self.original_key = original_key
        self.aggregated_key = aggregated_key or original_key
        self.comm_trigger = chainer.training.trigger.get_trigger(
            comm_trigger)
        self.aggregator = aggregator or _average_2d
        self.observation_history = []
        self._observed_like = None

    def compute_summary(self, trainer):
        """compute_summary(trainer): keep this step's observation; when
        ``comm_trigger`` fires (on every rank: collective), the
        aggregate, else None."""
        if self.original_key in trainer.observation:
            value = trainer.observation[self.original_key]
            self._observed_like = value
            self.observation_history.append(_on_host(value))
        if not self.comm_trigger(trainer):
            return None
        gathered = self.comm.gather_obj(self.observation_history)
        self.observation_history = []
        summary = self.aggregator(gathered) if self.comm.rank == 0 else None
        return self.comm.bcast_obj(summary)

    def __call__(self, trainer):
        """Put the aggregate, when ``compute_summary`` gives one, into
        ``trainer.observation`` (as ChainerMN does: inside a trainer that
        is what its reporter collects), in the form of this rank's
        observation (a Variable, an array, a float)."""
        summary = self.compute_summary(trainer)
        if summary is not None:
            trainer.observation[self.aggregated_key] = _like(
                summary, self._observed_like)


def _on_host(value):
    """An observation as it can travel: device arrays copied to NumPy,
    a Variable as a Variable of its array on the host."""
    cpu = chainer.backend.CpuDevice()
    if isinstance(value, chainer.Variable):
        return chainer.Variable(cpu.send(value.array))
    if chainer.backend.get_array_module(value) is not numpy and \
            hasattr(value, 'dtype'):
        return cpu.send(value)
    return value


def _average_2d(histories):
    """The mean of every value of every rank's history (None for none)."""
    values = [v for history in histories for v in history]
    if not values:
        return None
    return sum(values) / len(values)


def _like(result, observed):
    """A numeric ``result`` in the form of this rank's observation: a
    Variable or an array (same dtype and array module) as ChainerMN
    reports it, a float when the observation was a Python number."""
    array = getattr(observed, 'array', observed)
    if not isinstance(result, numbers.Number) or \
            not hasattr(array, 'dtype'):
        return result
    xp = chainer.backend.get_array_module(array)
    result = xp.asarray(result, dtype=array.dtype)
    if isinstance(observed, chainer.Variable):
        return chainer.Variable(result)
    return result
