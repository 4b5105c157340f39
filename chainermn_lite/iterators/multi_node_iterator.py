"""An iterator whose batches are drawn on one rank and sent to all."""
import chainer
import numpy

from chainermn_lite.iterators import batch_check
from chainermn_lite._checks import check_communicator

__all__ = ['create_multi_node_iterator']

_STATE_KEYS = ('epoch', 'is_new_epoch', 'epoch_detail',
               'previous_epoch_detail', 'current_position', 'batch_size')


def _build_ctrl_msg(stop, is_valid_data_type, is_paired_dataset,
                    is_new_epoch, current_position):
    """ChainerMN 7.8.1's private control-message encoding (five flags and
    the position as float32), kept for code and tests written against it.
    This iterator sends its control state pickled with the batch, which is
    why it also carries batches ChainerMN refuses (strings, objects)."""
    return numpy.array([int(stop), int(is_valid_data_type),
                        int(is_paired_dataset), int(is_new_epoch),
                        int(current_position)], dtype=numpy.float32)


def _parse_ctrl_msg(msg):
    """Inverse of ``_build_ctrl_msg``: (stop, is_valid_data_type,
    is_paired_dataset, is_new_epoch, current_position)."""
    return (bool(msg[0]), bool(msg[1]), bool(msg[2]), bool(msg[3]),
            int(msg[4]))


class _MultiNodeIterator(chainer.dataset.Iterator):
    """Only the master's actual iterator is advanced; every rank receives
    its batch and its progress attributes with one ``bcast_obj``."""

    def __init__(self, actual_iterator, communicator, rank_master, check):
        if not 0 <= rank_master < communicator.size:
            raise ValueError('rank_master {} is not a rank of {!r}'
                             .format(rank_master, communicator))
        self.communicator = communicator
        self.rank_master = rank_master
        self.is_master = communicator.rank == rank_master
        # Kept on every rank (only the master's advances), so that other
        # attributes read through as in ChainerMN (e.g. ``_order``).
        self.actual_iterator = actual_iterator
        if self.is_master and actual_iterator is None:
            raise ValueError('the master rank {} needs an actual iterator'
                             .format(rank_master))
        self.check = check
        self._step = 0
        # Not ``_state``: on the master that reads through to the actual
        # iterator's IteratorState, as in ChainerMN.
        self._shared_state = dict.fromkeys(_STATE_KEYS)
        # ChainerMN's ``_order``: on the master the actual iterator's
        # current order; elsewhere the order received at construction,
        # which deserialization leaves alone (batches come from the master).
        self._initial_order = self._share_state(
            _actual_order(actual_iterator) if self.is_master else None)

    @property
    def _order(self):
        if self.is_master:
            return _actual_order(self.actual_iterator)
        return self._initial_order

    def _master_state(self):
        it = self.actual_iterator
        return {key: getattr(it, key, None) for key in _STATE_KEYS}

    def _share_state(self, extra):
        message = None
        if self.is_master:
            message = (self._master_state(), extra)
        state, extra = self.communicator.bcast_obj(message,
                                                   root=self.rank_master)
        self._shared_state = state
        return extra

    def __next__(self):
        """next(): the master's next batch, on every rank."""
        batch, stop = None, False
        if self.is_master:
            try:
                batch = self.actual_iterator.__next__()
            except StopIteration:
                stop = True
        message = None
        if self.is_master:
            message = (self._master_state(), (stop, batch))
        state, (stop, batch) = self.communicator.bcast_obj(
            message, root=self.rank_master)
        self._shared_state = state
        if stop:
            raise StopIteration
        self._step += 1
        if batch_check.check_due(self.check, self._step,
                                 bool(state.get('is_new_epoch'))):
            batch_check.verify_same_batch(self.communicator, batch,
                                          self._step, 'multi-node iterator')
        return batch

    next = __next__

    def __getattr__(self, name):
        state = self.__dict__.get('_shared_state')
        if state is not None and name in state:
            return state[name]
        actual = self.__dict__.get('actual_iterator')
        if actual is not None:
            return getattr(actual, name)
        raise AttributeError(name)

    def reset(self):
        """reset(): reset the master's iterator (collective)."""
        if self.is_master:
            self.actual_iterator.reset()
        self._share_state({})

    def finalize(self):
        """finalize(): finalize the master's iterator."""
        if self.is_master:
            self.actual_iterator.finalize()

    def serialize(self, serializer):
        """serialize(serializer): collective; the master's iterator state
        is what is saved and loaded, the others mirror it. Every rank
        saves the master's state, so any rank's snapshot resumes an
        ordinary iterator where the shared one stood."""
        saving = isinstance(serializer, chainer.serializer.Serializer)
        written = None
        if self.is_master:
            if saving:
                serializer = _RecordingSerializer(serializer)
            self.actual_iterator.serialize(serializer)
            if saving:
                written = serializer.written
        written = self._share_state(written)
        if saving and not self.is_master:
            for key, value in written:
                serializer(key, value)


def _actual_order(iterator):
    """The order of a Chainer iterator (None without shuffling)."""
    state = getattr(iterator, '_state', None)
    return getattr(state, 'order', getattr(iterator, '_order', None))


class _RecordingSerializer(chainer.serializer.Serializer):
    """Passes (key, value) on to ``target`` and keeps what was written."""

    def __init__(self, target):
        self.target = target
        self.written = []

    def __getitem__(self, key):
        raise NotImplementedError(
            'multi-node iterator: nested serializers of the actual iterator '
            'are not mirrored (key {!r})'.format(key))

    def __call__(self, key, value):
        value = self.target(key, value)
        self.written.append((key, value))
        return value


def create_multi_node_iterator(actual_iterator, communicator, rank_master=0,
                               check=None):
    """create_multi_node_iterator(actual_iterator, communicator,
    rank_master=0): every rank gets the batches that ``actual_iterator``
    makes on ``rank_master`` (other ranks' ``actual_iterator`` is ignored).

    ``epoch``, ``is_new_epoch``, ``epoch_detail`` follow the master's.
    ``check`` verifies that every rank received the same batch (True:
    every step; the default None: steps 1, 2, 4, 8... and each epoch's
    last; see ``batch_check``).
    """
    check_communicator(communicator, 'create_multi_node_iterator')
    return _MultiNodeIterator(actual_iterator, communicator, rank_master,
                              check)
