"""MultiNodeEarlyStoppingTrigger: every rank stops at the same iteration,
the one the mean over all ranks' observations decides."""
import chainer
import numpy as np
import pytest
from chainer.training import triggers

import chainermn_lite
from chainermn_lite.extensions import MultiNodeEarlyStoppingTrigger

BASE = [0.5, 0.5, 0.5, 0.5, 0.6, 0.6, 0.7, 0.7, 0.6, 0.6, 0.4, 0.4, 0.3,
        0.3, 0.2, 0.2, 0.1, 0.1]


def _values(rank, size):
    """Rank r's accuracies: BASE plus a spread that sums to 0 over ranks
    and grows with time, so the last rank alone keeps improving."""
    spread = rank - (size - 1) / 2.
    return [b + spread * 0.2 * i for i, b in enumerate(BASE)]


class _Updater:
    """What triggers read of an updater: 2 iterations per epoch."""

    def __init__(self):
        self.iteration = 0

    def update(self):
        self.iteration += 1

    @property
    def epoch_detail(self):
        return self.iteration / 2.

    @property
    def previous_epoch_detail(self):
        return (self.iteration - 1) / 2. if self.iteration else None

    @property
    def epoch(self):
        return self.iteration // 2


class _Trainer:
    def __init__(self):
        self.updater = _Updater()
        self.observation = {}


def _fired(trigger, values, key='main/accuracy'):
    trainer = _Trainer()
    fired = []
    for value in values:
        trainer.updater.update()
        trainer.observation = {key: chainer.Variable(
            np.asarray(value, np.float32))}
        fired.append(trigger(trainer))
    return fired


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_all_ranks_stop_where_the_global_mean_says(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    trigger = MultiNodeEarlyStoppingTrigger(
        comm, monitor='main/accuracy', patience=3,
        check_trigger=(1, 'epoch'))
    fired = _fired(trigger, _values(comm.rank, comm.size))
    everyone = comm.allgather_obj(fired)
    assert all(f == fired for f in everyone)
    mean = np.mean([_values(r, comm.size) for r in range(comm.size)],
                   axis=0)
    expected = _fired(triggers.EarlyStoppingTrigger(
        monitor='main/accuracy', patience=3, check_trigger=(1, 'epoch')),
        mean)
    assert fired == expected
    assert True in fired
    if comm.size > 1:
        alone = _fired(triggers.EarlyStoppingTrigger(
            monitor='main/accuracy', patience=3,
            check_trigger=(1, 'epoch')), _values(comm.size - 1, comm.size))
        assert alone != expected  # the test can tell the two apart


@pytest.mark.mpi(sizes=(2,))
def test_max_trigger_and_training_length(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    trigger = MultiNodeEarlyStoppingTrigger(
        comm, monitor='main/loss', patients=10, max_trigger=(3, 'epoch'))
    assert trigger.patience == 10
    assert trigger.get_training_length() == (3, 'epoch')
    fired = _fired(trigger, [1.0] * 6, key='main/loss')
    assert fired == [False] * 5 + [True]


@pytest.mark.mpi(sizes=(2,))
def test_a_rank_without_observations_still_agrees(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    trigger = MultiNodeEarlyStoppingTrigger(
        comm, monitor='main/loss', patience=1, check_trigger=(1, 'epoch'))
    values = [3.0, 3.0, 4.0, 4.0] if comm.rank == 0 else [None] * 4
    trainer = _Trainer()
    fired = []
    for value in values:
        trainer.updater.update()
        trainer.observation = {} if value is None else {'main/loss': value}
        fired.append(trigger(trainer))
    assert fired == [False, False, False, True]
    assert trainer.observation['main/loss_aggregated'] == 4.0


@pytest.mark.mpi(sizes=(2, 3))
def test_allreduce_persistent_averages_batch_statistics(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = chainer.Sequential(chainer.links.Linear(2, 3),
                               chainer.links.BatchNormalization(3))
    model[1].avg_mean[...] = comm.rank
    model[1].N = comm.rank
    chainermn_lite.extensions.AllreducePersistent(model, comm)()
    np.testing.assert_allclose(model[1].avg_mean, (comm.size - 1) / 2.)
    assert model[1].N == comm.rank  # integers are left alone
