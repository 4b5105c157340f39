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

import chainer
from chainer import serializers

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
        self._pattern = re.compile(
            r'^{}\.{}\.(\d+)\.npz$'.format(re.escape(name), comm.rank))

    def _folder(self, trainer):
        return self.path if self.path is not None else trainer.out

    def _file(self, folder, iteration):
        return os.path.join(folder, '{}.{}.{}.npz'.format(
            self.name, self.comm.rank, iteration))

    def _iterations(self, folder):
        if not os.path.isdir(folder):
            return []
        found = []
        for entry in os.listdir(folder):
            match = self._pattern.match(entry)
            if match:
                found.append(int(match.group(1)))
        return sorted(found)

    def __call__(self, trainer):
        """Write this rank's checkpoint, then drop the oldest ones."""
        folder = self._folder(trainer)
        iteration = trainer.updater.iteration
        save_atomically(self._file(folder, iteration), trainer)
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
        """Checkpoint iterations present for this rank in ``path``."""
        return self._iterations(self.path or '.')

    def finalize(self):
        pass


def create_multi_node_checkpointer(name, comm, cp_interval=5,
                                   gc_interval=5, path=None):
    """create_multi_node_checkpointer(name, comm, cp_interval=5,
    gc_interval=5, path=None): a trainer extension that saves every
    rank's state each ``cp_interval`` iterations (keeping the newest
    ``gc_interval``), and whose ``maybe_load(trainer, optimizer)`` resumes
    all ranks from the newest common checkpoint."""
    return _MultiNodeCheckpointer(name, comm, cp_interval, gc_interval, path)
