"""Report the mean over ranks of an observed value."""
import numbers

import chainer
import numpy

__all__ = ['ObservationAggregator']


class ObservationAggregator(chainer.training.Extension):
    """ObservationAggregator(comm, original_key, aggregated_key=None, *,
    comm_trigger=(1, 'iteration'), aggregator=None): reports under
    ``aggregated_key`` the aggregate (default: mean) of every rank's
    ``original_key`` observation, collected since the last report."""

    trigger = 1, 'iteration'
    priority = chainer.training.PRIORITY_EDITOR
    name = None

    def __init__(self, comm, original_key, aggregated_key=None,
                 comm_trigger=(1, 'iteration'), aggregator=None):
        self.comm = comm
        self.original_key = original_key
        self.aggregated_key = aggregated_key or original_key
        self.comm_trigger = chainer.training.trigger.get_trigger(
            comm_trigger)
        self.aggregator = aggregator or (
            lambda values: float(numpy.mean(values)))
        self.observations = []
        self._observed_like = None

    def __call__(self, trainer):
        """Collect this step's value; aggregate when comm_trigger fires."""
        value = trainer.observation.get(self.original_key)
        if value is not None:
            self._observed_like = value
            self.observations.append(
                float(getattr(value, 'array', value)))
        if not self.comm_trigger(trainer):
            return
        local = (float(numpy.mean(self.observations))
                 if self.observations else None)
        self.observations = []
        values = [v for v in self.comm.allgather_obj(local) if v is not None]
        if values:
            chainer.reporter.report({self.aggregated_key: _like(
                self.aggregator(values), self._observed_like)})


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
