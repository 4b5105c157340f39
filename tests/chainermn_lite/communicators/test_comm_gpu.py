"""Device (CuPy) arrays through every communicator, on a GPU.

Every test here needs CuPy and a GPU and skips, saying so, without them
(CI has none; they run on a lent GPU machine: README, "GPU"). Both worlds,
one file: under mpiexec rank r uses GPU ``r % count``; on the simulator the
rank threads share GPU 0. The MPI strategies stage device arrays through
the host (``_host_staging``), so ranks may share a GPU, and their means
are bit for bit the host run's. ``pure_nccl`` needs a GPU per rank (NCCL
refuses two ranks of one communicator on one device) and real NCCL
(``simulator.nccl`` reads host memory only): it runs under mpiexec with
enough GPUs and skips otherwise, naming why.
"""
import chainer
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite

MPI_NAMES = ('naive', 'flat', 'hierarchical', 'non_cuda_aware')
EVERY_NAME = MPI_NAMES + ('pure_nccl',)


def _gpu_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, no device: no GPU here
        return 0


pytestmark = pytest.mark.skipif(
    _gpu_count() == 0, reason='needs CuPy and a GPU; this machine has none')


def _device(comm):
    device = chainer.get_device('@cupy:{}'.format(comm.rank % _gpu_count()))
    device.use()
    return device


def _comm_and_device(mpi_comm, simulated, make_communicator, name):
    """This rank's communicator of kind ``name`` and its GPU; skips
    ``pure_nccl`` where NCCL cannot run (see the module docstring)."""
    comm = make_communicator(mpi_comm)
    if name == 'pure_nccl' and simulated:
        pytest.skip('simulator.nccl reduces host memory; device arrays '
                    'need real NCCL (mpiexec)')
    if name == 'pure_nccl' and comm.size > _gpu_count():
        pytest.skip('NCCL needs a GPU per rank: {} ranks, {} GPUs'.format(
            comm.size, _gpu_count()))
    return comm, _device(comm)


class _Model(chainer.Chain):
    """Small and big params (packed, and reduced where they lie), one of
    them float16."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4)
            self.b = L.Linear(600, 500)
            self.c = L.Linear(5, 7)
        self.c.W.data = self.c.W.data.astype(np.float16)


def _fill_grads(model, rank):
    for i, (_, p) in enumerate(sorted(model.namedparams())):
        rs = np.random.RandomState(rank * 31 + i)
        p.grad = rs.uniform(-2, 2, size=p.shape).astype(p.dtype)


def _arrays(model, attr):
    return [chainer.backends.cuda.to_cpu(getattr(p, attr))
            for _, p in sorted(model.namedparams())]


@pytest.mark.mpi(sizes=(1, 2))
@pytest.mark.parametrize('communicator_name', EVERY_NAME)
def test_mean_grad_of_device_arrays(mpi_comm, simulated, communicator_name,
                                    make_communicator):
    comm, device = _comm_and_device(mpi_comm, simulated, make_communicator,
                                    communicator_name)
    host, gpu = _Model(), _Model()
    _fill_grads(host, comm.rank)
    _fill_grads(gpu, comm.rank)
    gpu.to_device(device)
    comm.multi_node_mean_grad(gpu)
    assert all(isinstance(p.grad, device.xp.ndarray) and
               p.grad.device.id == device.device.id
               for _, p in gpu.namedparams())
    got = _arrays(gpu, 'grad')
    if communicator_name == 'pure_nccl':
        expect = [np.mean([np.random.RandomState(r * 31 + i).uniform(
            -2, 2, size=g.shape).astype(g.dtype).astype(np.float64)
            for r in range(comm.size)], axis=0) for i, g in enumerate(got)]
        for g, e in zip(got, expect):
            np.testing.assert_allclose(g, e, rtol=3e-3, atol=3e-3)
    else:
        # Staged through the host: the host run's arithmetic, same bits.
        comm.multi_node_mean_grad(host)
        for g, h in zip(got, _arrays(host, 'grad')):
            assert g.dtype == h.dtype
            np.testing.assert_array_equal(g, h)
    comm.finalize()


class _Float32Model(chainer.Chain):
    """One dtype only: its grads may move into one flat buffer."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4)
            self.b = L.Linear(600, 500)


@pytest.mark.mpi(sizes=(1, 2))
@pytest.mark.parametrize('communicator_name', EVERY_NAME)
def test_device_grads_kept_in_place_are_reduced_where_they_lie(
        mpi_comm, simulated, communicator_name, make_communicator):
    # Grads updated in place (not remade by backward) move into one flat
    # device buffer at the second mean (GradArena); from then on that
    # buffer is reduced as it lies (NCCL in place; one copy each way
    # through the host), with the bits of the usual path.
    comm, device = _comm_and_device(mpi_comm, simulated, make_communicator,
                                    communicator_name)
    host, gpu = _Float32Model(), _Float32Model()
    gpu.to_device(device)
    shapes = [p.shape for _, p in sorted(host.namedparams())]

    def grads_of(rank, step):
        return [np.random.RandomState(rank * 31 + i + 7 * step).uniform(
            -2, 2, size=shape).astype(np.float32)
            for i, shape in enumerate(shapes)]

    for step in range(3):
        mine = grads_of(comm.rank, step)
        for model, place in ((host, np.asarray), (gpu, device.send)):
            for (_, p), g in zip(sorted(model.namedparams()), mine):
                if p.grad is None:
                    p.grad = place(g)
                else:
                    p.grad[...] = place(g)
        comm.multi_node_mean_grad(gpu)
        got = _arrays(gpu, 'grad')
        if communicator_name == 'pure_nccl':
            every = [grads_of(r, step) for r in range(comm.size)]
            for k, g in enumerate(got):
                np.testing.assert_allclose(
                    g, np.mean([e[k] for e in every], axis=0),
                    rtol=1e-6, atol=1e-6)
        else:
            comm.multi_node_mean_grad(host)
            for g, h in zip(got, _arrays(host, 'grad')):
                np.testing.assert_array_equal(g, h)
    bases = [p.grad.base for p in gpu.params()]
    assert bases[0] is not None and all(b is bases[0] for b in bases)
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2))
@pytest.mark.parametrize('communicator_name', EVERY_NAME)
def test_bcast_data_of_device_arrays(mpi_comm, simulated, communicator_name,
                                     make_communicator):
    comm, device = _comm_and_device(mpi_comm, simulated, make_communicator,
                                    communicator_name)
    models = []
    for seed in (comm.rank, 0):
        model = _Model()
        for i, (_, p) in enumerate(sorted(model.namedparams())):
            p.data[...] = np.random.RandomState(seed * 7 + i).uniform(
                -1, 1, p.shape)
        models.append(model)
    model, rank0 = models
    model.to_device(device)
    comm.bcast_data(model)
    assert all(isinstance(p.data, device.xp.ndarray)
               for _, p in model.namedparams())
    for got, expect in zip(_arrays(model, 'data'), _arrays(rank0, 'data')):
        np.testing.assert_array_equal(got, expect)
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2))
@pytest.mark.parametrize('communicator_name', ('flat', 'pure_nccl'))
@pytest.mark.parametrize('double_buffering', (False, True))
def test_optimizer_steps_on_device(mpi_comm, simulated, communicator_name,
                                   double_buffering, make_communicator):
    comm, device = _comm_and_device(mpi_comm, simulated, make_communicator,
                                    communicator_name)
    model = L.Classifier(L.Linear(20, 5))
    model.to_device(device)
    optimizer = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.1), comm,
        double_buffering=double_buffering)
    optimizer.setup(model)
    comm.bcast_data(model)
    before = _arrays(model, 'data')
    rs = np.random.RandomState(comm.rank)
    x = device.send(rs.randn(8, 20).astype(np.float32))
    t = device.send((np.arange(8) % 5).astype(np.int32))
    for _ in range(3):
        optimizer.update(model, x, t)
    if double_buffering:
        optimizer.wait()
    after = _arrays(model, 'data')
    assert any((a != b).any() for a, b in zip(after, before))
    # Every rank applied the same mean gradients: the same parameters.
    table = comm.allgather_obj(after)
    for theirs in table:
        for a, b in zip(theirs, after):
            np.testing.assert_array_equal(a, b)
    comm.finalize()


@pytest.mark.mpi(sizes=(2,))
def test_send_recv_of_device_arrays_arrive_on_the_device(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    device = _device(comm)
    xp = device.xp
    small = xp.arange(12, dtype=xp.float32).reshape(3, 4)
    big = xp.linspace(0, 1, 300000).astype(xp.float32)  # > one frame
    pair = (xp.ones(5, xp.float16), xp.arange(6, dtype=xp.int64))
    if comm.rank == 0:
        for _ in range(2):       # a repeated big array stays framed
            comm.send(big, 1, 3)
        comm.send(small, 1, 1)
        comm.send(pair, 1, 2)
        comm.send(chainer.backends.cuda.to_cpu(small), 1, 4)
    else:
        for _ in range(2):
            got = comm.recv(0, 3)
            assert isinstance(got, xp.ndarray)
            np.testing.assert_array_equal(got.get(), big.get())
        got = comm.recv(0, 1)
        assert isinstance(got, xp.ndarray)
        assert got.device.id == device.device.id
        np.testing.assert_array_equal(got.get(), small.get())
        got = comm.recv(0, 2)
        assert type(got) is tuple and all(
            isinstance(g, xp.ndarray) for g in got)
        for g, e in zip(got, pair):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g.get(), e.get())
        # What was sent from the host arrives on the host.
        assert type(comm.recv(0, 4)) is np.ndarray
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2))
def test_array_collectives_answer_on_the_device(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    device = _device(comm)
    xp = device.xp
    x = xp.full((2, 3), comm.rank + 1, dtype=xp.float32)
    total = comm.allreduce(x)
    assert isinstance(total, xp.ndarray)
    np.testing.assert_array_equal(
        total.get(), np.full((2, 3), sum(range(1, comm.size + 1))))
    gathered = comm.allgather(x)
    assert all(isinstance(g, xp.ndarray) for g in gathered)
    assert [float(g[0, 0]) for g in gathered] == [
        r + 1.0 for r in range(comm.size)]
    mixed = comm.alltoall(tuple(x + r for r in range(comm.size)))
    assert all(isinstance(g, xp.ndarray) for g in mixed)
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2))
def test_bcast_and_scatter_of_device_arrays_arrive_on_the_device(
        mpi_comm, make_communicator):
    # ChainerMN: a root's CuPy array reaches every rank on its current
    # device, though receivers have no array of their own to say so.
    comm = make_communicator(mpi_comm, 'flat')
    xp = _device(comm).xp
    root = comm.size - 1
    mine = xp.arange(6, dtype=xp.float32).reshape(2, 3)
    got = comm.bcast(mine if comm.rank == root else None, root=root)
    assert isinstance(got, xp.ndarray)
    np.testing.assert_array_equal(got.get(), mine.get())
    rows = xp.arange(comm.size * 4, dtype=xp.int32).reshape(comm.size, 4)
    part = comm.scatter(rows if comm.rank == root else None, root=root)
    assert isinstance(part, xp.ndarray)
    np.testing.assert_array_equal(part.get(), rows[comm.rank].get())
    # a tuple: each part keeps its own kind
    parts = tuple(rows[r] if r % 2 else rows[r].get()
                  for r in range(comm.size))
    part = comm.scatter(parts if comm.rank == root else None, root=root)
    assert isinstance(part, xp.ndarray if comm.rank % 2 else np.ndarray)
    comm.finalize()


@pytest.mark.mpi(sizes=(2,))
def test_model_parallel_step_on_the_device(mpi_comm, make_communicator):
    # functions.send/recv forward and backward with CuPy arrays: the same
    # gradients as the host run of the same graph.
    from chainermn_lite import functions
    comm = make_communicator(mpi_comm, 'flat')
    device = _device(comm)
    results = []
    for run_on in (None, device):
        rs = np.random.RandomState(5)
        data = rs.uniform(-1, 1, (4, 6)).astype(np.float32)
        w = rs.uniform(-1, 1, (6, 6)).astype(np.float32)
        if run_on is not None:
            data, w = run_on.send(data), run_on.send(w)
        if comm.rank == 0:
            x = chainer.Variable(data)
            phi = functions.send(x * 2, comm, rank=1)
            y = functions.recv(comm, rank=1, delegate_variable=phi)
            chainer.functions.sum(y * y).backward()
            results.append(x.grad)
        else:
            h = functions.recv(comm, rank=0)
            phi = functions.send(chainer.functions.matmul(h, w), comm,
                                 rank=0)
            phi.backward()
    if comm.rank == 0:
        host, gpu = results
        assert isinstance(gpu, device.xp.ndarray)
        np.testing.assert_allclose(gpu.get(), host, rtol=1e-5, atol=1e-5)
    comm.finalize()


@pytest.mark.mpi(sizes=(2,))
def test_pure_nccl_ranks_on_one_gpu_are_told_so(mpi_comm, simulated,
                                                make_communicator):
    # NCCL itself answers only "invalid usage"; every rank gets the
    # ranks and the GPU instead, and no rank is left waiting.
    if simulated:
        pytest.skip('simulator.nccl reduces host memory: rank threads may '
                    'share a GPU')
    if _gpu_count() >= mpi_comm.Get_size():
        pytest.skip('a GPU per rank here: nothing shared')
    comm = make_communicator(mpi_comm, 'pure_nccl')
    model = _Model()
    _fill_grads(model, comm.rank)
    model.to_device(chainer.get_device('@cupy:0'))
    with pytest.raises(ValueError, match='a GPU per rank: ranks 0, 1 share'):
        comm.multi_node_mean_grad(model)
    assert comm.allreduce_obj(1) == comm.size
    comm.finalize()
