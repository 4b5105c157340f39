"""Early stopping decided on the mean over every rank's observations."""
import chainer
from chainer.training import triggers

from chainermn_lite.extensions.multi_node_evaluator import \
    weighted_global_mean

__all__ = ['MultiNodeEarlyStoppingTrigger']


class MultiNodeEarlyStoppingTrigger(object):
    """MultiNodeEarlyStoppingTrigger(comm, check_trigger=(1, 'epoch'),
    monitor='main/loss', patience=3, mode='auto', verbose=False,
    max_trigger=(100, 'epoch'), suffix='_aggregated'): Chainer's
    ``EarlyStoppingTrigger`` whose every check compares the mean of
    ``monitor`` over all values observed on all ranks in the interval.

    Every rank computes the same mean from the same gathered sums, so all
    ranks stop at the same iteration. The mean is stored in the trainer's
    observation as ``monitor + suffix``, as ChainerMN does. Call it on every
    rank at every iteration (as ``Trainer``'s stop trigger). ``patients``
    is accepted as an alias of ``patience``.
    """

    def __init__(self, comm, check_trigger=(1, 'epoch'),
                 monitor='main/loss', patience=None, mode='auto',
                 verbose=False, max_trigger=(100, 'epoch'),
                 suffix='_aggregated', **kwargs):
        self.comm = comm
        self.monitor = monitor
        self.aggregated_key = monitor + suffix
        self.actual_trigger = triggers.EarlyStoppingTrigger(
            check_trigger=check_trigger, monitor=self.aggregated_key,
            patience=patience, mode=mode, verbose=verbose,
            max_trigger=max_trigger, **kwargs)
        # Its own copy: the wrapped trigger's interval trigger is stateful.
        self._check_trigger = chainer.training.get_trigger(check_trigger)
        self._sum = 0.0
        self._count = 0

    def __call__(self, trainer):
        """True when training should stop (the same on every rank)."""
        value = trainer.observation.get(self.monitor)
        if value is not None:
            value = chainer.backend.CpuDevice().send(
                getattr(value, 'array', value))
            self._sum += float(value)
            self._count += 1
        if self._check_trigger(trainer):
            mean = weighted_global_mean(self.comm, {'v': self._sum},
                                        self._count).get('v')
            self._sum, self._count = 0.0, 0
            if mean is not None:
                trainer.observation[self.aggregated_key] = mean
        return self.actual_trigger(trainer)

    @property
    def patience(self):
        """Checks without improvement before the trigger fires."""
        return self.actual_trigger.patience

    def get_training_length(self):
        """get_training_length(): the ``max_trigger`` length."""
        return self.actual_trigger.get_training_length()

    def _stop_condition(self):
        return self.actual_trigger._stop_condition()

    def _init_summary(self):
        return self.actual_trigger._init_summary()
