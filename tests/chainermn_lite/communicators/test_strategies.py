"""The gradient-strategy interface MpiCommunicator calls."""
import chainer
import chainer.links as L
import numpy as np
import pytest

from chainermn_lite import communicators
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase


class _Recording(_strategies.GradientStrategy):
    """Averages with the flat strategy and records every call."""

    configs = {'scale_by': 1.0}

    def __init__(self, mpi_comm):
        super().__init__(mpi_comm)
        self.built_for = mpi_comm
        self.calls = []
        self._flat = _strategies.Flat(mpi_comm)

    def mean_grad(self, ctx, arrays):
        self.calls.append(('mean_grad', ctx, len(arrays)))
        self._flat.mean_grad(ctx, arrays)

    def bcast_arrays(self, ctx, arrays, max_buf_len):
        self.calls.append(('bcast_arrays', ctx, len(arrays), max_buf_len))
        super().bcast_arrays(ctx, arrays, max_buf_len)

    def set_config(self, name, value):
        if value <= 0:
            raise ValueError('scale_by must be > 0, got {}'.format(value))
        self.calls.append(('set_config', name, value))
        return float(value)

    def free(self, ctx):
        self.calls.append(('free', ctx))


class _RecordingCommunicator(MpiCommunicatorBase):
    strategy_factory = _Recording
    communicator_name = 'recording'


def _model(rank):
    model = chainer.Chain()
    with model.init_scope():
        model.a = L.Linear(3, 2)
        model.b = L.Linear(2, 1)
    for i, p in enumerate(sorted(model.params(), key=lambda p: p.name)):
        p.data[...] = rank + i
        p.grad = np.full(p.shape, rank + i, np.float32)
    return model


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_communicator_calls_the_interface_with_a_context(mpi_comm, MPI):
    comm = _RecordingCommunicator(mpi_comm)
    strategy = comm._strategy
    assert strategy.built_for is mpi_comm
    assert comm.get_config('scale_by') == 1.0
    comm.set_config('scale_by', 3)
    assert comm.get_config('scale_by') == 3.0
    with pytest.raises(ValueError, match='scale_by must be > 0, got -1'):
        comm.set_config('scale_by', -1)
    comm.set_config('max_buf_len', 64)       # the communicator's own
    model = _model(comm.rank)
    comm.bcast_data(model)
    assert all((p.data == i).all() for i, p in enumerate(
        sorted(model.params(), key=lambda p: p.name)))
    comm.multi_node_mean_grad(model)
    mean = (comm.size - 1) / 2.0
    for i, p in enumerate(sorted(model.params(), key=lambda p: p.name)):
        np.testing.assert_allclose(p.grad, mean + i)
    comm.finalize()
    kinds = [c[0] for c in strategy.calls]
    assert kinds == ['set_config', 'bcast_arrays', 'mean_grad', 'free']
    assert strategy.calls[1][2:] == (4, 64)
    assert strategy.calls[2][2] == 4
    ctx = strategy.calls[2][1]
    assert isinstance(ctx, _strategies.StrategyContext)
    assert ctx is strategy.calls[1][1] is strategy.calls[3][1]
    assert ctx.mpi_comm is mpi_comm
    # the communicator's own module: mpi4py.MPI, or simulator.mpi, whose
    # objects a simulated program's mpi4py.MPI holds
    assert getattr(ctx.module, type(mpi_comm).__name__) is type(mpi_comm)
    assert ctx.module.SUM is MPI.SUM and ctx.module.Intracomm is MPI.Intracomm
    assert (ctx.rank, ctx.size) == (comm.rank, comm.size)
    assert (ctx.layout.intra_rank, ctx.layout.inter_size) == (
        comm.intra_rank, comm.inter_size)
    assert ctx.owner == '_RecordingCommunicator'


@pytest.mark.mpi(sizes=(2, 4))
def test_split_builds_a_strategy_for_the_new_communicator(mpi_comm):
    comm = _RecordingCommunicator(mpi_comm)
    comm.set_config('scale_by', 2)
    del comm._strategy.calls[:]
    sub = comm.split(comm.rank % 2, comm.rank)
    assert sub._strategy is not comm._strategy
    assert type(sub._strategy) is _Recording
    assert sub._strategy.built_for is sub.mpi_comm
    assert sub.get_config('scale_by') == 2.0      # configs carry over
    sub.multi_node_mean_grad(_model(sub.rank))
    assert [c[0] for c in sub._strategy.calls] == ['set_config', 'mean_grad']
    assert sub._strategy.calls[1][1].size == sub.size < comm.size
    assert comm._strategy.calls == []
    sub.finalize()
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2))
def test_base_strategy_broadcasts_but_has_no_mean(mpi_comm):
    comm = MpiCommunicatorBase(mpi_comm)
    assert type(comm._strategy) is _strategies.GradientStrategy
    model = _model(comm.rank)
    comm.bcast_data(model)
    assert all((p.data == i).all() for i, p in enumerate(
        sorted(model.params(), key=lambda p: p.name)))
    with pytest.raises(NotImplementedError,
                       match='MpiCommunicatorBase has no gradient strategy'):
        comm.multi_node_mean_grad(model)
    with pytest.raises(ValueError, match="Unknown config: 'scale_by'"):
        comm.set_config('scale_by', 2)
    comm.finalize()


def test_every_named_communicator_binds_a_gradient_strategy():
    expected = {'naive': _strategies.Naive, 'flat': _strategies.Flat,
                'hierarchical': _strategies.Hierarchical,
                'non_cuda_aware': _strategies.NonCudaAware,
                'dummy': _strategies.Dummy}
    for name, cls in communicators._CLASSES.items():
        factory = cls.strategy_factory
        assert issubclass(factory, _strategies.GradientStrategy), name
        if name in expected:
            assert factory is expected[name]
        assert cls.communicator_name == name


@pytest.mark.mpi(sizes=(1, 2, 3, 4), nodes=2)
@pytest.mark.parametrize('communicator_name',
                         ('naive', 'flat', 'hierarchical', 'non_cuda_aware'))
def test_mean_bucket_averages_in_place_with_mean_grads_bits(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    # Big (reduced where it lies) and small (packed) arrays, float16 too.
    shapes = [(3, 4), (70000,), (5,), (2, 3, 3), (1,)]
    dtypes = [np.float32, np.float32, np.float64, np.float16, np.float32]

    def grads(rank):
        rs = np.random.RandomState(rank)
        return [rs.uniform(-3, 3, s).astype(d)
                for s, d in zip(shapes, dtypes)]
    arrays = grads(comm.rank)
    expected = [sum(a.astype(np.float64) for a in column) / comm.size
                for column in zip(*map(grads, range(comm.size)))]
    copies = [a.copy() for a in arrays]
    means = comm._mean_bucket(arrays)
    comm._mean_arrays(copies)
    for got, given, want in zip(means, arrays, copies):
        assert got is given
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    for got, want in zip(means, expected):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    comm.finalize()
