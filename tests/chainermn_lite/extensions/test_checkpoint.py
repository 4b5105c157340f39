"""Checkpoints: atomic files; resuming gives the state of continuing."""
import os

import chainer
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.extensions import checkpoint


def _trainer(comm, out, stop):
    model = L.Classifier(L.Linear(4, 3, initialW=np.ones((3, 4))))
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.MomentumSGD(lr=0.05), comm)
    opt.setup(model)
    rng = np.random.RandomState(0)
    data = chainer.datasets.TupleDataset(
        rng.normal(size=(24, 4)).astype(np.float32),
        rng.randint(0, 3, size=24).astype(np.int32))
    part = chainermn_lite.scatter_dataset(data, comm)
    it = chainer.iterators.SerialIterator(part, 2, shuffle=False)
    updater = chainer.training.StandardUpdater(it, opt)
    trainer = chainer.training.Trainer(updater, (stop, 'iteration'), out=out)
    cp = chainermn_lite.create_multi_node_checkpointer(
        'cp', comm, cp_interval=3, gc_interval=2)
    trainer.extend(cp, trigger=(3, 'iteration'))
    return trainer, model, cp


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_resume_equals_continuing(mpi_comm, tmp_path, make_communicator):
    comm = make_communicator(mpi_comm)
    out = str(tmp_path / 'run{}'.format(comm.size))
    trainer, model, cp = _trainer(comm, out, 10)
    trainer.run()
    # gc_interval=2: only iterations 6 and 9 remain, complete files only.
    # The folder is shared by rank threads in the simulator.
    mine = 'cp.{}.'.format(comm.rank)
    names = sorted(n for n in os.listdir(out) if n.startswith(mine))
    assert names == ['cp.{}.6.npz'.format(comm.rank),
                     'cp.{}.9.npz'.format(comm.rank)]
    full, _, _ = _trainer(comm, str(tmp_path / 'x{}'.format(comm.size)), 9)
    full.run()
    resumed, model2, cp2 = _trainer(comm, out, 12)
    assert cp2.maybe_load(resumed) == 9
    assert resumed.updater.iteration == 9
    for (n, a), (_, b) in zip(sorted(full.updater.get_optimizer(
            'main').target.namedparams()), sorted(model2.namedparams())):
        np.testing.assert_array_equal(a.array, b.array, err_msg=n)
    resumed.run()
    assert resumed.updater.iteration == 12


@pytest.mark.mpi(sizes=(1, 2))
def test_save_without_a_trainer_as_chainermn_allows(
        mpi_comm, tmp_path, make_communicator):
    comm = make_communicator(mpi_comm)
    folder = str(tmp_path / 'plain{}'.format(comm.size))
    cp = chainermn_lite.create_multi_node_checkpointer(
        'loop', comm, gc_interval=2, path=folder)
    model = L.Linear(2, 2)
    for iteration in (1, 2, 3):
        model.W.array[...] = iteration
        cp.save(model, iteration)
    mine = 'loop.{}.'.format(comm.rank)
    assert sorted(n for n in os.listdir(folder) if n.startswith(mine)) == [
        mine + '2.npz', mine + '3.npz']
    fresh = L.Linear(2, 2)
    assert cp.maybe_load(fresh) == 3
    np.testing.assert_array_equal(fresh.W.array, 3)
    assert cp.get_stats().startswith('3 checkpoints')


@pytest.mark.mpi(sizes=(1,))
def test_save_without_a_trainer_needs_a_path(mpi_comm, make_communicator):
    cp = chainermn_lite.create_multi_node_checkpointer(
        'loop', make_communicator(mpi_comm))
    with pytest.raises(ValueError, match="'loop' .*needs the path"):
        cp.save(L.Linear(2, 2), 1)


def test_atomic_save_leaves_no_partial_file(tmp_path):
    class _Broken:
        def serialize(self, serializer):
            serializer('a', np.ones(3))
            raise RuntimeError('killed mid-write')
    path = str(tmp_path / 'x.npz')
    checkpoint.save_atomically(path, L.Linear(2, 2))
    before = open(path, 'rb').read()
    with pytest.raises(RuntimeError):
        checkpoint.save_atomically(path, _Broken())
    assert open(path, 'rb').read() == before
    assert os.listdir(str(tmp_path)) == ['x.npz']
