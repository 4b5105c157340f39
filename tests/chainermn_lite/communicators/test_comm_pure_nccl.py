"""pure_nccl: on the simulator through simulator.nccl, on GPUs via CuPy."""
import chainer
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite import _mpi


def _needs_nccl(mpi_comm):
    if _mpi.mpi_module_of(mpi_comm).__name__.startswith('simulator.'):
        return                  # simulator.nccl stands in for NCCL
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:
        pytest.skip('pure_nccl under real MPI needs CuPy with NCCL and a '
                    'GPU; this machine has none (tested on the simulator)')
    pytest.skip('host-array models cannot use real NCCL; GPU test pending')


class _Model(chainer.Chain):
    def __init__(self, dtype):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4)
            self.b = L.Linear(50, 20)
        for p in self.params():
            p.data = p.data.astype(dtype)


def _fill(model, rank, dtype):
    for i, (_, p) in enumerate(sorted(model.namedparams())):
        rs = np.random.RandomState(rank * 31 + i)
        p.grad = rs.uniform(-2, 2, size=p.shape).astype(dtype)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype,grad_dtype,tol', [
    (np.float32, None, 1e-6), (np.float64, np.float64, 1e-12),
    (np.float32, np.float16, 3e-3), (np.float16, np.float32, 2e-3),
    (np.float16, np.float16, 3e-3)])
def test_pure_nccl_mean_grad(
        mpi_comm, dtype, grad_dtype, tol, make_communicator):
    _needs_nccl(mpi_comm)
    comm = make_communicator(mpi_comm, 'pure_nccl',
                             allreduce_grad_dtype=grad_dtype)
    assert comm.get_config('allreduce_grad_dtype') == (
        None if grad_dtype is None else np.dtype(grad_dtype))
    model = _Model(dtype)
    _fill(model, comm.rank, dtype)
    comm.multi_node_mean_grad(model)
    for i, (_, p) in enumerate(sorted(model.namedparams())):
        expect = np.mean([np.random.RandomState(r * 31 + i).uniform(
            -2, 2, size=p.shape).astype(dtype).astype(np.float64)
            for r in range(comm.size)], axis=0)
        assert p.grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(p.grad, expect, rtol=tol * 4,
                                   atol=tol * 4)
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2, 4))
def test_pure_nccl_bcast_data_and_split(mpi_comm, make_communicator):
    _needs_nccl(mpi_comm)
    comm = make_communicator(mpi_comm, 'pure_nccl')
    model = _Model(np.float32)
    for p in model.params():
        p.data[...] = comm.rank + 1
    comm.bcast_data(model)
    for p in model.params():
        np.testing.assert_array_equal(p.data, 1)
    sub = comm.split(comm.rank % 2, comm.rank)
    assert sub.name == 'pure_nccl'
    _fill(model, comm.rank, np.float32)
    sub.multi_node_mean_grad(model)
    members = [r for r in range(comm.size) if r % 2 == comm.rank % 2]
    expect = np.mean([np.random.RandomState(r * 31).uniform(
        -2, 2, size=model.a.W.shape).astype(np.float32) for r in members],
        axis=0)
    np.testing.assert_allclose(model.a.W.grad, expect, rtol=1e-5)
    sub.finalize()
    comm.finalize()


def test_pure_nccl_rejects_non_float_dtype():
    import simulator
    from simulator import mpi  # noqa: F401

    def body(mpi_comm):
        with pytest.raises(ValueError, match='int32'):
            chainermn_lite.create_communicator(
                'pure_nccl', mpi_comm=mpi_comm, allreduce_grad_dtype='int32')
    simulator.run(body, 2)


def test_pure_nccl_without_cupy_names_alternatives():
    try:
        import cupy  # noqa: F401
        pytest.skip('CuPy is installed here')
    except ImportError:
        pass

    class FakeComm:            # a non-simulated mpi4py-like communicator
        pass

    with pytest.raises(RuntimeError, match='naive, flat'):
        chainermn_lite.create_communicator('pure_nccl', mpi_comm=FakeComm())


@pytest.mark.mpi(sizes=(2, 3, 4))
def test_ranks_sharing_a_gpu_are_named_on_every_rank(
        mpi_comm, make_communicator):
    # Real NCCL refuses two ranks of one communicator on one GPU with
    # "invalid usage" and nothing else (seen on an H100, 2026-11-27); the
    # check names the ranks and the GPU before NCCL is asked. The GPU is
    # given by its PCI bus id, so no GPU is needed to run this both ways.
    from chainermn_lite.communicators import _nccl_strategy
    comm = make_communicator(mpi_comm)
    rank, size = comm.rank, comm.size
    # One GPU per rank: nothing to say.
    _nccl_strategy._check_one_gpu_per_rank(
        comm._context, bus='0000:{:02X}:00.0'.format(rank))
    # Ranks 1 and the last on one GPU: every rank raises, naming them.
    shared = '0000:C0:00.0'
    bus = shared if rank in (1, size - 1) else '0000:{:02X}:00.0'.format(rank)
    if size == 2:
        bus = shared
    with pytest.raises(ValueError) as raised:
        _nccl_strategy._check_one_gpu_per_rank(comm._context, bus=bus)
    expect = '0, 1' if size == 2 else '1, {}'.format(size - 1)
    message = str(raised.value)
    assert 'ranks {} share the GPU at PCI {}'.format(expect, shared) in message
    assert comm._context.module.Get_processor_name() in message
    assert 'get_device_from_id(comm.intra_rank)' in message
    # Nothing was lost: the communicator still works.
    assert comm.allreduce_obj(rank) == size * (size - 1) // 2
    comm.finalize()
