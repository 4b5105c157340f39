"""multi_node_snapshot: Chainer's snapshot extension over replica sets.

Ranks whose snapshot target holds the same state form a replica set; only
the lowest rank of each set (its master) writes, under the snapshot's file
name suffixed with ``.<rank>``. With ``autoload`` the master loads the
newest snapshot and hands the loaded state to the rest of its set, so a
restart works even when the set's other ranks never wrote a file.
"""
import io

import chainer
from chainer import serializers
from chainer.training.extensions import _snapshot

__all__ = ['multi_node_snapshot']


def _parse_replica_sets(replica_sets, size):
    """Replica sets (list of sets of ranks) covering ranks ``0..size-1``.

    Each entry is a rank or an iterable of ranks; the ranks no entry
    names form one more set. A rank out of range or in two sets raises
    ValueError naming it.
    """
    sets, seen = [], set()
    for entry in replica_sets or []:
        members = {entry} if isinstance(entry, int) else set(entry)
        for rank in sorted(members):
            if not 0 <= rank < size:
                raise ValueError('replica_sets: rank {} is out of range for '
                                 'a communicator of size {}'.format(
                                     rank, size))
            if rank in seen:
                raise ValueError('replica_sets: rank {} is in two replica '
                                 'sets'.format(rank))
        seen |= members
        if members:
            sets.append(members)
    rest = set(range(size)) - seen
    if rest:
        sets.append(rest)
    return sets


def _with_rank_suffix(filename, rank):
    if callable(filename):
        return lambda trainer: '{}.{}'.format(filename(trainer), rank)
    return '{}.{}'.format(filename, rank)


class _MultiNodeSnapshot(chainer.training.Extension):

    def __init__(self, comm, snapshot, replica_sets):
        self.comm = comm
        self.snapshot = snapshot
        snapshot.filename = _with_rank_suffix(snapshot.filename, comm.rank)
        self.replica_set = next(
            s for s in _parse_replica_sets(replica_sets, comm.size)
            if comm.rank in s)
        self.master = min(self.replica_set)
        self.trigger = getattr(snapshot, 'trigger', (1, 'epoch'))
        self.priority = getattr(snapshot, 'priority',
                                chainer.training.PRIORITY_READER)

    @property
    def is_master(self):
        """True on the rank that writes for its replica set."""
        return self.master == self.comm.rank

    def initialize(self, trainer):
        """Master: the snapshot's own initialize (autoload). With autoload,
        the other members then receive the master's loaded state."""
        if self.is_master:
            self.snapshot.initialize(trainer)
        if not getattr(self.snapshot, 'autoload', False):
            return
        target = getattr(self.snapshot, '_target', None) or trainer
        if self.is_master:
            state = None
            if _snapshot._find_latest_snapshot(self.snapshot.filename,
                                               trainer.out) is not None:
                buf = io.BytesIO()
                serializers.save_npz(buf, target)
                state = buf.getvalue()
            for rank in sorted(self.replica_set - {self.comm.rank}):
                self.comm.send_obj(state, rank)
        else:
            state = self.comm.recv_obj(self.master)
            if state is not None:
                serializers.load_npz(io.BytesIO(state), target)

    def __call__(self, trainer):
        """Take the snapshot on the master of each replica set."""
        if self.is_master:
            self.snapshot(trainer)

    def on_error(self, trainer, exc, tb):
        if self.is_master:
            self.snapshot.on_error(trainer, exc, tb)

    def finalize(self):
        if self.is_master:
            self.snapshot.finalize()


def multi_node_snapshot(comm, snapshot, replica_sets=None):
    """multi_node_snapshot(comm, snapshot, replica_sets=None): wrap Chainer's
    ``snapshot`` extension so that one rank per replica set writes.

    ``replica_sets`` lists sets of ranks whose target is identical, each a
    rank or an iterable of ranks; ranks not listed form one more set (so
    ``[]`` or None is one set of every rank, ``[0]`` is ``{0}`` and the
    rest).
    File names get ``.<rank>`` appended. With ``autoload`` the master of
    each set loads the newest snapshot and sends the state to its set.
    """
    return _MultiNodeSnapshot(comm, snapshot, replica_sets)
