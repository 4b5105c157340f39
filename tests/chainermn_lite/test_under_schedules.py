"""chainermn_lite under the simulator's schedules: a correct program must
stay clean whatever order the messages take (no false alarm), and the
examples (model-parallel MLP, the data-parallel main job, the neon
layers) run clean under ``python -m simulator --explore``.
"""
import os
import subprocess
import sys

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.testing import assert_model_parallel_equivalent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
N_IN, N_HID, N_OUT, BATCH = 6, 5, 4, 8


class _Named(chainer.Chain):
    """One Linear under the full model's name for it (``l1``, ``l2``)."""

    def __init__(self, name, n_in, n_out, relu=True):
        super().__init__()
        self.name_, self.relu = name, relu
        with self.init_scope():
            setattr(self, name, L.Linear(n_in, n_out))

    def forward(self, x):
        h = getattr(self, self.name_)(x)
        return F.relu(h) if self.relu else h


class _Identity(chainer.Chain):
    def forward(self, x):
        return x


class _Full(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(N_IN, N_HID)
            self.l2 = L.Linear(N_HID, N_OUT)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def _batch(step):
    rs = np.random.RandomState(step)
    return (rs.randn(BATCH, N_IN).astype(np.float32),
            rs.randint(0, N_OUT, BATCH).astype(np.int32))


@pytest.mark.mpi(sizes=(2,), explore=5, send_mode='mixed')
def test_model_parallel_mlp_is_clean_under_every_schedule(
        mpi_comm, make_communicator):
    # The seed guide's split (rank 0: l1 and the loss, rank 1: l2), with
    # each message eager or rendezvous as the schedule draws.
    comm = make_communicator(mpi_comm)
    split = chainermn_lite.MultiNodeChainList(comm)
    if comm.rank == 0:
        split.add_link(_Named('l1', N_IN, N_HID), rank_in=None, rank_out=1)
        split.add_link(_Identity(), rank_in=1, rank_out=None)
    else:
        split.add_link(_Named('l2', N_HID, N_OUT, relu=False), rank_in=0,
                       rank_out=0)
    report = assert_model_parallel_equivalent(
        split, _Full(), _batch, lambda y, x, t: F.softmax_cross_entropy(
            y, t), comm, steps=2)
    assert len(report.full_losses) == 2


def _example(*argv):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, '-m', 'simulator'] + list(argv),
                          cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize('argv', [
    ('-n', '2', '--explore', '2', 'examples/model_parallel/train_mlp.py',
     '-e', '1', '-b', '100', '-o', '{out}'),
    ('-n', '4', '--explore', '2', 'examples/mnist/train_mnist.py', '-e',
     '1', '-u', '20', '--no-progress', '-o', '{out}'),
    ('-n', '4', '--send-mode', 'mixed', '--explore', '2',
     'examples/neon_parallel/train_convnet.py', '--steps', '3'),
], ids=['model_parallel', 'mnist', 'neon'])
def test_examples_run_clean_under_explore(argv, tmp_path):
    result = _example(*(a.format(out=tmp_path) for a in argv))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert 'every schedule succeeded with the same output' in result.stdout
