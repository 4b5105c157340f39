"""chainermn_lite.testing.equivalence: it passes equal models and catches
unequal ones (on every rank at once), missing parameters and bad parameter
maps."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.testing import (assert_model_parallel_equivalent,
                                   default_param_map)


def _batch(step):
    rs = np.random.RandomState(step)
    return (rs.randn(4, 3).astype(np.float32),
            rs.randint(0, 2, 4).astype(np.int32))


def _loss(y, x, t):
    return F.softmax_cross_entropy(y, t)


class Full(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4)
            self.b = L.Linear(4, 2)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


class Part(chainer.Chain):
    def __init__(self, name, n_in, n_out, act):
        super().__init__()
        self.act = act
        self.name_ = name
        with self.init_scope():
            setattr(self, name, L.Linear(n_in, n_out))

    def forward(self, x):
        return self.act(getattr(self, self.name_)(x))


class _Pass(chainer.Chain):
    def forward(self, y):
        return y


def _split(comm, act0=F.relu):
    model = chainermn_lite.MultiNodeChainList(comm)
    if comm.rank == 0:
        model.add_link(Part('a', 3, 4, act0), rank_in=None, rank_out=1)
        model.add_link(_Pass(), rank_in=1, rank_out=None)
    else:
        model.add_link(Part('b', 4, 2, F.identity), rank_in=0, rank_out=0)
    return model


def test_default_param_map_drops_chain_list_indices():
    assert default_param_map(0, '/0/l1/W') == '/l1/W'
    assert default_param_map(3, '/predictor/12/enc/b') == '/predictor/enc/b'


@pytest.mark.mpi(sizes=(2,))
def test_equal_models_pass_and_report_losses(mpi_comm):
    comm = chainermn_lite.create_communicator('naive', mpi_comm=mpi_comm)
    report = assert_model_parallel_equivalent(_split(comm), Full(), _batch,
                                              _loss, comm, steps=2)
    assert len(report.full_losses) == 2
    assert report.compared_params == 2
    if comm.rank == 0:
        np.testing.assert_allclose(report.split_losses, report.full_losses,
                                   rtol=1e-6)


@pytest.mark.mpi(sizes=(2,))
def test_a_different_split_model_fails_on_every_rank(mpi_comm):
    comm = chainermn_lite.create_communicator('naive', mpi_comm=mpi_comm)
    with pytest.raises(AssertionError) as info:
        assert_model_parallel_equivalent(_split(comm, act0=F.tanh), Full(),
                                         _batch, _loss, comm, steps=1)
    # Rank 1 saw equal shapes but wrong gradients; both ranks raise.
    assert 'split model differs from the full model' in str(info.value)
    assert 'rank 0: step 0 loss' in str(info.value)


@pytest.mark.mpi(sizes=(2,))
def test_uncovered_and_unknown_parameters_are_named(mpi_comm):
    comm = chainermn_lite.create_communicator('naive', mpi_comm=mpi_comm)

    class Bigger(Full):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.extra = L.Linear(2, 2)

    with pytest.raises(AssertionError, match=r"\['/extra/W', '/extra/b'\]"):
        assert_model_parallel_equivalent(_split(comm), Bigger(), _batch,
                                         _loss, comm, steps=1)
    with pytest.raises(KeyError, match='maps to /nowhere'):
        assert_model_parallel_equivalent(
            _split(comm), Full(), _batch, _loss, comm, steps=1,
            param_map=lambda rank, path: '/nowhere')
