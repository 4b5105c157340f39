"""Iterators on every rank that draw the same order from a shared seed."""
import chainer
import numpy

from chainermn_lite.iterators import batch_check
from chainermn_lite._checks import check_communicator

__all__ = ['create_synchronized_iterator']


class _SynchronizedIterator(chainer.dataset.Iterator):

    def __init__(self, actual_iterator, communicator, check):
        if not hasattr(actual_iterator, 'order_sampler'):
            raise ValueError('create_synchronized_iterator needs an '
                             'iterator with an order_sampler, got {!r}'
                             .format(type(actual_iterator).__name__))
        object.__setattr__(self, 'actual_iterator', actual_iterator)
        object.__setattr__(self, 'communicator', communicator)
        object.__setattr__(self, 'check', check)
        object.__setattr__(self, '_step', 0)
        seed = None
        if communicator.rank == 0:
            # Drawn from rank 0's global NumPy stream, as ChainerMN does:
            # numpy.random.seed(s) makes the order reproducible, and the
            # same as ChainerMN's (each simulated rank has its own stream).
            seed = numpy.random.randint(0, 2 ** 32 - 1)
        seed = communicator.bcast_obj(seed, root=0)
        actual_iterator.order_sampler = chainer.iterators.ShuffleOrderSampler(
            numpy.random.RandomState(seed))
        actual_iterator.reset()

    def __next__(self):
        """next(): the next batch, identical on every rank."""
        batch = self.actual_iterator.__next__()
        object.__setattr__(self, '_step', self._step + 1)
        if batch_check.check_due(
                self.check, self._step,
                getattr(self.actual_iterator, 'is_new_epoch', False)):
            batch_check.verify_same_batch(self.communicator, batch,
                                          self._step, 'synchronized iterator')
        return batch

    next = __next__

    def __getattr__(self, name):
        return getattr(self.actual_iterator, name)

    def __setattr__(self, name, value):
        setattr(self.actual_iterator, name, value)

    def serialize(self, serializer):
        """serialize(serializer): the actual iterator's state."""
        self.actual_iterator.serialize(serializer)


def create_synchronized_iterator(actual_iterator, communicator, check=None):
    """create_synchronized_iterator(actual_iterator, communicator): every
    rank's ``actual_iterator`` (one with an ``order_sampler``) shuffles with
    the same seed, so all ranks see the same batches in the same order.
    ``check`` verifies that (True: every step; the default None: steps 1,
    2, 4, 8... and each epoch's last; see ``batch_check``)."""
    check_communicator(communicator, 'create_synchronized_iterator')
    return _SynchronizedIterator(actual_iterator, communicator, check)
