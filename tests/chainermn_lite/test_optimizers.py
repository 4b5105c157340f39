"""Multi-node optimizer: data-parallel training equals one big batch."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.communicators._grads import GradientMismatchError

GLOBAL_BATCH = 12
STEPS = 4


class _Net(chainer.Chain):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.RandomState(seed)
        with self.init_scope():
            self.l1 = L.Linear(5, 7, initialW=rng.normal(size=(7, 5)))
            self.l2 = L.Linear(7, 3, initialW=rng.normal(size=(3, 7)))

    def forward(self, x, t):
        return F.softmax_cross_entropy(self.l2(F.tanh(self.l1(x))), t)


def _data():
    rng = np.random.RandomState(42)
    x = rng.normal(size=(STEPS, GLOBAL_BATCH, 5)).astype(np.float32)
    t = rng.randint(0, 3, size=(STEPS, GLOBAL_BATCH)).astype(np.int32)
    return x, t


def _optimizer():
    opt = chainer.optimizers.MomentumSGD(lr=0.1)
    return opt


def _params(model):
    return {n: p.array.copy() for n, p in sorted(model.namedparams())}


def _reference(stale):
    """One process, batch GLOBAL_BATCH; ``stale``: step t applies the
    gradient of step t - 1 (what double buffering does)."""
    model = _Net(0)
    opt = _optimizer()
    opt.setup(model)
    opt.add_hook(chainer.optimizer_hooks.WeightDecay(1e-3))
    x, t = _data()
    previous = None
    for step in range(STEPS):
        model.cleargrads()
        model(x[step], t[step]).backward()
        grads = {n: p.grad.copy() for n, p in model.namedparams()}
        if stale:
            if previous is not None:
                for n, p in model.namedparams():
                    p.grad = previous[n]
                opt.update()
            previous = grads
        else:
            opt.update()
    return _params(model)


def _data_parallel(comm, double_buffering):
    # Different initial weights per rank: the first update must broadcast.
    model = _Net(comm.rank)
    opt = chainermn_lite.create_multi_node_optimizer(
        _optimizer(), comm, double_buffering=double_buffering)
    opt.setup(model)
    opt.add_hook(chainer.optimizer_hooks.WeightDecay(1e-3))
    opt.update()  # broadcasts rank 0's parameters
    x, t = _data()
    local = GLOBAL_BATCH // comm.size
    mine = slice(comm.rank * local, (comm.rank + 1) * local)
    for step in range(STEPS):
        opt.update(model, x[step][mine], t[step][mine])
    if double_buffering:
        opt.wait()
    return _params(model), opt


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('communicator_name', ['naive', 'flat'])
def test_matches_one_process_with_global_batch(mpi_comm, make_communicator):
    params, opt = _data_parallel(make_communicator(mpi_comm), False)
    expected = _reference(stale=False)
    assert sorted(params) == sorted(expected)
    for key in expected:
        np.testing.assert_allclose(params[key], expected[key], rtol=1e-5,
                                   atol=1e-6, err_msg=key)
    assert opt.t == STEPS  # the broadcast step is not an update


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_double_buffering_applies_previous_step_gradient(
        mpi_comm, make_communicator):
    params, opt = _data_parallel(make_communicator(mpi_comm), True)
    expected = _reference(stale=True)
    for key in expected:
        np.testing.assert_allclose(params[key], expected[key], rtol=1e-5,
                                   atol=1e-6, err_msg=key)
    assert opt.t == STEPS - 1


@pytest.mark.mpi(sizes=(2,))
def test_wrapper_delegates_attributes_and_serialization(
        mpi_comm, tmp_path, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _Net(0)
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.5), comm)
    opt.setup(model)
    assert opt.lr == 0.5 and opt.target is model
    opt.lr = 0.25
    assert opt.actual_optimizer.lr == 0.25
    opt.update()
    x, t = _data()
    opt.update(model, x[0][:2], t[0][:2])
    path = str(tmp_path / 'opt.{}.npz'.format(comm.rank))
    chainer.serializers.save_npz(path, opt)
    fresh = chainer.optimizers.SGD(lr=0.5)
    fresh.setup(_Net(0))
    chainer.serializers.load_npz(path, fresh)
    assert fresh.t == opt.t == 1


@pytest.mark.mpi(sizes=(2, 4))
def test_double_buffering_reduction_progresses_without_mpi_calls(
        mpi_comm, make_communicator):
    # The optimizer's helper thread reduces while the main thread computes
    # (no MPI call of its own): under mpiexec a thread of the process, on
    # the simulator a thread of the rank.
    import time
    comm = make_communicator(mpi_comm, 'flat')
    model = _Net(comm.rank)
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.1), comm, double_buffering=True)
    opt.setup(model)
    opt.update()                         # the broadcast step
    for p in model.params():
        p.grad = np.full_like(p.array, comm.rank + 1.0)
    opt.update()                         # starts the first reduction
    _, waiter, grads, _ = opt._pending
    deadline = time.monotonic() + 30
    while waiter.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)                 # "compute": no MPI call here
    assert not waiter.is_alive()
    size = comm.size
    for grad in grads:
        np.testing.assert_allclose(grad, (size + 1) / 2.0, rtol=1e-6)
    opt.wait()


class _MixedParams(chainer.Link):
    """float32 and float16 params of several shapes, and one whose grad
    stays None."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = chainer.Parameter(np.zeros((3, 4), np.float32))
            self.b = chainer.Parameter(np.zeros(5, np.float32))
            self.h = chainer.Parameter(np.zeros((2, 2), np.float16))
            self.unused = chainer.Parameter(np.ones(3, np.float32))


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_double_buffering_with_grads_written_in_place(
        mpi_comm, make_communicator):
    # A backward that accumulates into the existing grad arrays (or
    # zerograds, or p.grad[...] = g) must never write into the arrays
    # whose mean is still being computed: step t writes in place while
    # the mean of step t - 1 is in flight, and the applied means stay
    # exact. float16 grads and a grad that is None are reduced too.
    comm = make_communicator(mpi_comm, 'flat')
    model = _MixedParams()
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=1.0), comm, double_buffering=True)
    opt.setup(model)
    opt.update()                         # the broadcast step
    steps = 5
    for step in range(steps):
        value = 10.0 * step + comm.rank + 1
        for name in ('a', 'b', 'h'):
            p = getattr(model, name)
            if p.grad is None:
                p.grad = np.zeros_like(p.array)
            p.grad[...] = value          # in place, as an accumulation
        opt.update()
    opt.wait()
    mean_rank_term = (comm.size + 1) / 2.0
    # Updates at steps 1..steps-1 apply the means of steps 0..steps-2.
    applied = sum(10.0 * s + mean_rank_term for s in range(steps - 1))
    for name in ('a', 'b', 'h'):
        p = getattr(model, name)
        np.testing.assert_allclose(p.array, -applied, rtol=1e-3,
                                   err_msg=name)
        assert p.array.dtype == (np.float16 if name == 'h' else np.float32)
    np.testing.assert_array_equal(model.unused.array, 1.0)


@pytest.mark.mpi(sizes=(1, 2, 3))
@pytest.mark.parametrize('communicator_name', ['naive', 'flat'])
def test_double_buffering_communicated_target_and_wait(
        mpi_comm, make_communicator):
    # ChainerMN's flow: wait() between updates finishes the reduction
    # without consuming it (the next update still applies it), and
    # communicated_target's grads are the arrays of that reduction.
    comm = make_communicator(mpi_comm)
    model = chainer.Sequential(L.Linear(2, 3), L.Linear(3, 4))
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=1.0), comm, double_buffering=True)
    opt.setup(model)
    opt.update()                                  # the broadcast step
    assert opt.t == 0
    base = (comm.size - 1.0) / 2
    for step, expect_t in ((0, 0), (3, 1)):
        model.cleargrads()
        for k, (_, p) in enumerate(sorted(model.namedparams())):
            p.grad = np.full(p.shape, comm.rank + step + k, np.float32)
        before = {n: p.array.copy() for n, p in model.namedparams()}
        opt.update()
        means = opt.wait()
        assert opt.wait() is means                # idempotent
        assert opt.t == expect_t
        for k, (name, p) in enumerate(
                sorted(opt.communicated_target.namedparams())):
            np.testing.assert_array_equal(p.grad, base + step + k)
            # It shares the data, not the grads, of the target.
            assert p.array is dict(model.namedparams())[name].array
        if expect_t:
            # The update applied the means of the previous reduction.
            for k, (name, p) in enumerate(sorted(model.namedparams())):
                np.testing.assert_allclose(
                    p.array, before[name] - (base + k), rtol=1e-6)
    comm.finalize()


def test_double_buffering_needs_thread_multiple(monkeypatch):
    # One process: an MPI initialised at THREAD_FUNNELED is refused before
    # any helper thread starts, naming the level.
    import sys
    import types

    from chainermn_lite import optimizers
    module = types.ModuleType('funneled_mpi')
    module.THREAD_MULTIPLE = 3
    module.Query_thread = lambda: 1
    monkeypatch.setitem(sys.modules, 'funneled_mpi', module)
    comm = type('Comm', (), {'__module__': 'funneled_mpi'})()
    with pytest.raises(RuntimeError, match=r'THREAD_MULTIPLE.*returned 1'):
        optimizers._require_thread_multiple(comm)


# -- overlap=True: gradient means started during backward ------------------
OVERLAP_NAMES = ('naive', 'flat', 'hierarchical', 'non_cuda_aware', 'dummy')


def _overlapped(comm, manual_backward, bucket_bytes=64):
    """Params after STEPS overlapped updates; ``manual_backward``: the
    caller runs backward and ``update()`` reduces the buckets after it."""
    model = _Net(comm.rank)
    opt = chainermn_lite.create_multi_node_optimizer(
        _optimizer(), comm, overlap=True, bucket_bytes=bucket_bytes)
    opt.setup(model)
    opt.add_hook(chainer.optimizer_hooks.WeightDecay(1e-3))
    opt.update()  # broadcasts rank 0's parameters
    x, t = _data()
    local = GLOBAL_BATCH // comm.size
    mine = slice(comm.rank * local, (comm.rank + 1) * local)
    for step in range(STEPS):
        if manual_backward:
            model.cleargrads()
            model(x[step][mine], t[step][mine]).backward()
            opt.update()
        else:
            opt.update(model, x[step][mine], t[step][mine])
    assert opt.t == STEPS
    return _params(model)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('communicator_name', OVERLAP_NAMES)
def test_overlap_is_bit_identical_to_the_same_buckets_after_backward(
        mpi_comm, make_communicator, communicator_name):
    comm = make_communicator(mpi_comm)
    overlapped = _overlapped(comm, manual_backward=False)
    after = _overlapped(comm, manual_backward=True)
    for key in after:
        np.testing.assert_array_equal(overlapped[key], after[key],
                                      err_msg=key)
    if communicator_name == 'dummy':
        return              # no mean at all: nothing more to compare
    expected = _reference(stale=False)
    for key in expected:
        np.testing.assert_allclose(overlapped[key], expected[key],
                                   rtol=1e-5, atol=1e-6, err_msg=key)
    if comm.size <= 2:
        # a + b has one order: the plain optimizer's bits too.
        plain, _ = _data_parallel(comm, False)
        for key in plain:
            np.testing.assert_array_equal(overlapped[key], plain[key],
                                          err_msg=key)


@pytest.mark.mpi(sizes=(2, 3))
@pytest.mark.parametrize('communicator_name', ('pure_nccl',))
@pytest.mark.simulator_only('pure_nccl on host arrays runs on '
                            'simulator.nccl; real NCCL needs GPU arrays')
def test_overlap_on_pure_nccl(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    overlapped = _overlapped(comm, manual_backward=False)
    after = _overlapped(comm, manual_backward=True)
    expected = _reference(stale=False)
    for key in after:
        np.testing.assert_array_equal(overlapped[key], after[key],
                                      err_msg=key)
        np.testing.assert_allclose(overlapped[key], expected[key],
                                   rtol=1e-5, atol=1e-6, err_msg=key)


class _Spy(chainer.FunctionNode):
    """Identity whose backward (which runs after every later layer's)
    waits until the optimizer's helper thread has averaged ``n`` buckets,
    with no MPI call of the main thread in the meantime."""

    def __init__(self, opt, n):
        self.opt, self.n, self.seen = opt, n, None

    def forward(self, inputs):
        return inputs[0].copy(),

    def backward(self, indexes, grad_outputs):
        import time
        reducer = self.opt._reducer
        deadline = time.monotonic() + 30
        while reducer.buckets_done < self.n and \
                time.monotonic() < deadline:
            time.sleep(0.005)
        self.seen = reducer.buckets_done
        return grad_outputs


@pytest.mark.mpi(sizes=(2, 4))
@pytest.mark.parametrize('communicator_name', ('flat', 'hierarchical'))
def test_overlap_averages_buckets_while_backward_runs(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _Net(comm.rank)
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.1), comm, overlap=True, bucket_bytes=1)
    opt.setup(model)
    opt.update()
    # One bucket per param: l2's W and b are the first two, final before
    # the spy (between l1 and l2) runs its backward.
    spy = _Spy(opt, 2)
    x, t = _data()

    def loss():
        h, = spy.apply((F.tanh(model.l1(x[0])),))
        return F.softmax_cross_entropy(model.l2(h), t[0])
    opt.update(loss)
    assert spy.seen >= 2
    assert opt._plan.buckets == [[3], [2], [1], [0]]


class _TwoParams(chainer.Link):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.used = chainer.Parameter(np.ones(3, np.float32))
            self.maybe = chainer.Parameter(np.ones(2, np.float32))


@pytest.mark.mpi(sizes=(1, 2))
def test_overlap_zero_fill_false_keeps_missing_grads_none(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    link = _TwoParams()
    opt = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=1.0), comm, overlap=True, zero_fill=False)
    opt.setup(link)
    opt.update()
    opt.update(lambda: F.sum(link.used * (comm.rank + 1)))
    # (Chainer's update then reallocates the None grad as zeros.)
    np.testing.assert_array_equal(link.maybe.array, 1.0)
    np.testing.assert_allclose(link.used.array, 1 - (comm.size + 1) / 2.0)
    if comm.size == 1:
        return
    # grad None on rank 0 only: every rank raises, naming rank 0's param.
    with pytest.raises(GradientMismatchError, match=r'rank 0: \[.*maybe'):
        opt.update(lambda: F.sum(link.used) + (
            F.sum(link.maybe) if comm.rank else 0))


def test_overlap_arguments_are_checked():
    make = chainermn_lite.create_multi_node_optimizer
    with pytest.raises(ValueError, match='exclude each other'):
        make(chainer.optimizers.SGD(), None, double_buffering=True,
             overlap=True)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match='bucket_bytes must be a '
                           'positive int, got {!r}'.format(bad)):
            make(chainer.optimizers.SGD(), None, overlap=True,
                 bucket_bytes=bad)
    with pytest.raises(ValueError, match='only used with overlap=True'):
        make(chainer.optimizers.SGD(), None, bucket_bytes=1024)
