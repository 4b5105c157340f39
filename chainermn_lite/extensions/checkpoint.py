"""Per-rank checkpoints, written atomically and resumed consistently.

Each rank writes its own file ``<name>.<rank>.<iteration>.npz`` into
``path`` (default: the trainer's ``out``): serialized to a temporary file
in the same folder, then ``os.replace``-d into place, so a kill leaves
either the previous checkpoint or the new one, never a torn file.
``maybe_load`` resumes from the newest iteration that every rank has.
"""
import os
import re
import tempfile
import time

import chainer
from chainer import serializers

from chainermn_lite._checks import check_communicator
from chainermn_lite.extensions._multi_node_snapshot import \
    multi_node_snapshot

__all__ = ['create_multi_node_checkpointer', 'multi_node_snapshot',
           'save_atomically']


def save_atomically(path, obj):
    """save_atomically(path, obj): ``save_npz`` via a temp file and
    ``os.replace``, so ``path`` is always a complete file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', suffix='.npz', dir=folder)
    os.close(fd)
    try:
        serializers.save_npz(tmp, obj)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


class _CheckpointStats:
    """Wall-clock durations of the checkpoints taken (``start``/``end``
    around each save); ``report()`` summarizes them in one line."""

    def __init__(self):
        self.durations = []
        self._started = None

    def start(self):
        self._started = time.perf_counter()

    def end(self):
        if self._started is not None:
            self.durations.append(time.perf_counter() - self._started)
            self._started = None

    def report(self):
        if not self.durations:
            return 'no checkpoint taken yet'
        return ('{} checkpoints, mean {:.6f} s, min {:.6f} s, max {:.6f} s, '
                'total {:.6f} s'.format(
                    len(self.durations),
                    sum(self.durations) / len(self.durations),
                    min(self.durations), max(self.durations),
                    sum(self.durations)))


class _MultiNodeCheckpointer(chainer.training.Extension):

    trigger = 1, 'epoch'
    priority = chainer.training.PRIORITY_READER

    def __init__(self, name, comm, cp_interval, gc_interval, path):
        if cp_interval < 1 or gc_interval < 1:
            raise ValueError('cp_interval and gc_interval must be >= 1, got '
                             '{} and {}'.format(cp_interval, gc_interval))
        self.name = name
        self.comm = comm
        self.cp_interval = cp_interval
        self.gc_interval = gc_interval
        self.path = path
        self.trigger = (cp_interval, 'iteration')
        self.stats = _CheckpointStats()
        self._pattern = re.compile(
            r'^({})\.(\d+)\.(\d+)\.npz$'.format(re.escape(name)))

    def _folder(self, trainer):
        return self.path if self.path is not None else trainer.out

    def _filenames(self, iterations):
        """This rank's checkpoint file names for ``iterations``."""
        return ['{}.{}.{}.npz'.format(self.name, self.comm.rank, i)
                for i in iterations]

    def _parse_filenames(self, filenames):
        """(name, rank, iteration) of each checkpoint file name of this
        checkpointer (any rank); None for other files."""
        parsed = []
        for filename in filenames:
            match = self._pattern.match(filename)
            parsed.append(None if match is None else
                          (match.group(1), int(match.group(2)),
                           int(match.group(3))))
        return parsed

    def _file(self, folder, iteration):
        return os.path.join(folder, self._filenames([iteration])[0])

    def _iterations(self, folder):
        if not os.path.isdir(folder):
            return []
        return sorted(parsed[2] for parsed in
                      self._parse_filenames(os.listdir(folder))
                      if parsed is not None and parsed[1] == self.comm.rank)

    def __call__(self, trainer):
        """Write this rank's checkpoint of ``trainer`` (into ``path``, or
        from now on ``trainer.out`` when none was given)."""
        if self.path is None:
            self.path = trainer.out
        self.save(trainer, trainer.updater.iteration)

    def save(self, target, iteration):
        """save(target, iteration): write this rank's snapshot of
        ``target`` (a trainer, or any object ``save_npz`` takes) as
        ``iteration``'s checkpoint, then drop the oldest beyond
        ``gc_interval``. Call it on every rank at the same iteration (as
        a trainer does), so that ``maybe_load`` finds it everywhere."""
        if self.path is None:
            raise ValueError(
                'checkpointer {!r} (rank {}): save without a trainer needs '
                'the path given to create_multi_node_checkpointer'.format(
                    self.name, self.comm.rank))
        folder = self.path
        self.stats.start()
        save_atomically(self._file(folder, iteration), target)
        self.stats.end()
        for old in self._iterations(folder)[:-self.gc_interval]:
            os.remove(self._file(folder, old))

    def maybe_load(self, trainer, optimizer=None, path=None):
        """maybe_load(trainer, optimizer=None, path=None): load the newest
        checkpoint present on every rank (collective); returns its
        iteration or None when there is none."""
        folder = path or self._folder(trainer)
        common = None
        for found in self.comm.allgather_obj(self._iterations(folder)):
            common = set(found) if common is None else common & set(found)
        if not common:
            return None
        iteration = max(common)
        serializers.load_npz(self._file(folder, iteration), trainer)
        return iteration

    def get_stats(self):
        """get_stats(): one line on the time this rank's checkpoints took
        (count, mean, min, max, total), as ChainerMN reports it."""
        return self.stats.report()

    def finalize(self):
        pass


def create_multi_node_checkpointer(name, comm, cp_interval=5,
                                   gc_interval=5, path=None):
    """create_multi_node_checkpointer(name, comm, cp_interval=5,
    gc_interval=5, path=None): a trainer extension that saves every
    rank's state each ``cp_interval`` iterations (keeping the newest
    ``gc_interval``), and whose ``maybe_load(trainer, optimizer)`` resumes
    all ranks from the newest common checkpoint."""
    check_communicator(comm, 'create_multi_node_checkpointer')
    return _MultiNodeCheckpointer(name, comm, cp_interval, gc_interval, path)
