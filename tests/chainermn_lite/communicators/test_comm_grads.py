"""bcast_data and multi_node_mean_grad for every communicator name."""
import warnings

import chainer
import chainer.links as L
import numpy as np
import pytest

from chainermn_lite.communicators import _grads

NAMES = ('naive', 'flat', 'hierarchical', 'non_cuda_aware')


class _Model(chainer.Chain):
    """Several parameter shapes, one big enough to take the direct path."""

    def __init__(self, dtype=np.float32):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 4, initialW=np.ones((4, 3)))
            self.b = L.Linear(400, 300, initialW=np.ones((300, 400)))
            self.c = L.Convolution2D(2, 3, 3, initialW=np.ones((3, 2, 3, 3)))
            self.unused = L.Linear(2, 2, initialW=np.ones((2, 2)))
        for p in self.params():
            p.data = p.data.astype(dtype)


def _fill(model, rank, dtype, skip=('/unused/W', '/unused/b')):
    for name, p in sorted(model.namedparams()):
        if name in skip:
            p.grad = None
            continue
        rs = np.random.RandomState(rank * 7 + len(name))
        p.grad = rs.uniform(-4, 4, size=p.shape).astype(dtype)


def _expected(size, dtype):
    models = []
    for r in range(size):
        m = _Model(dtype)
        _fill(m, r, dtype)
        models.append(dict(m.namedparams()))
    return {name: np.mean([m[name].grad.astype(np.float64) for m in models],
                          axis=0)
            for name in models[0] if models[0][name].grad is not None}


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8), nodes=2)
@pytest.mark.parametrize('communicator_name', NAMES)
@pytest.mark.parametrize('dtype', (np.float16, np.float32, np.float64))
def test_multi_node_mean_grad(mpi_comm, make_communicator, dtype):
    comm = make_communicator(mpi_comm)
    model = _Model(dtype)
    _fill(model, comm.rank, dtype)
    comm.multi_node_mean_grad(model)
    expect = _expected(comm.size, dtype)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    for pname, p in sorted(model.namedparams()):
        if pname.startswith('/unused'):
            assert p.grad is None       # zero_fill=False leaves None alone
            continue
        assert p.grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(p.grad.astype(np.float64),
                                   expect[pname], rtol=tol, atol=tol)
    comm.finalize()


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('communicator_name', NAMES + ('dummy',))
def test_zero_fill(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _Model()
    _fill(model, 0, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        comm.allreduce_grad(model, zero_fill=True)
    assert model.unused.W.grad is not None
    np.testing.assert_array_equal(model.unused.W.grad, 0)
    expect = _Model()
    _fill(expect, 0, np.float32)
    np.testing.assert_allclose(model.a.W.grad, expect.a.W.grad, rtol=1e-6)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8), nodes=2)
@pytest.mark.parametrize('communicator_name', NAMES + ('dummy',))
@pytest.mark.parametrize('dtype', (np.float16, np.float32, np.float64))
def test_bcast_data(mpi_comm, make_communicator, dtype):
    comm = make_communicator(mpi_comm)
    model = _Model(dtype)
    expect = {}
    for i, (pname, p) in enumerate(sorted(model.namedparams())):
        pattern = np.arange(p.size).reshape(p.shape) % 7 + i
        p.data[...] = pattern + comm.rank
        expect[pname] = pattern.astype(dtype)
    with model.init_scope():
        model.lazy = L.Linear(None, 3)      # W has no data yet: skipped
    model.lazy.b.data[...] = comm.rank
    expect['/lazy/b'] = np.zeros(3, dtype=np.float32)
    comm.bcast_data(model)
    assert model.lazy.W.data is None
    for pname, p in sorted(model.namedparams()):
        if p.data is not None:
            np.testing.assert_array_equal(p.data, expect[pname])
            assert p.data.dtype == expect[pname].dtype


@pytest.mark.mpi(sizes=(2, 3, 4))
@pytest.mark.parametrize('communicator_name', NAMES)
def test_grad_none_on_one_rank_is_an_error_not_a_hang(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _Model()
    skip = ('/unused/W', '/unused/b')
    if comm.rank == comm.size - 1:
        skip += ('/b/W',)
    _fill(model, comm.rank, np.float32, skip=skip)
    with pytest.raises(_grads.GradientMismatchError) as info:
        comm.multi_node_mean_grad(model)
    text = str(info.value)
    assert '/b/W' in text and '[{}]'.format(comm.size - 1) in text
    assert 'zero_fill=True' in text
    # Every rank is still in step: a later call works.
    model.b.W.grad = np.ones_like(model.b.W.data)
    comm.multi_node_mean_grad(model)
    np.testing.assert_allclose(model.b.W.grad, 1.0)


@pytest.mark.mpi(sizes=(2, 3))
def test_mismatched_param_shapes_name_each_rank(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    model = chainer.Chain()
    with model.init_scope():
        model.l = L.Linear(3, 2 + (comm.rank == 1))
    for p in model.params():
        p.grad = np.ones_like(p.data)
    with pytest.raises(_grads.GradientMismatchError) as info:
        comm.multi_node_mean_grad(model)
    assert 'rank 1: shape (3, 3)' in str(info.value)
    assert 'rank 0: shape (2, 3)' in str(info.value)



@pytest.mark.mpi(sizes=(2, 3))
@pytest.mark.parametrize('communicator_name', NAMES)
def test_bcast_data_of_different_models_is_an_error_on_every_rank(
        mpi_comm, make_communicator):
    # Rank 1's second layer is wider, and its third is not initialised
    # yet: bcast_data used to move the bytes end to end anyway (under
    # mpiexec, rank 1 silently got rank 0's bytes in the wrong arrays).
    comm = make_communicator(mpi_comm)
    model = chainer.Chain()
    with model.init_scope():
        model.a = L.Linear(2, 2)
        model.b = L.Linear(3, 2 + (comm.rank == 1))
        model.c = L.Linear(None, 2)
    if comm.rank != 1:
        model.c(np.ones((1, 4), np.float32))
    with pytest.raises(_grads.GradientMismatchError) as info:
        comm.bcast_data(model)
    text = str(info.value)
    assert text.startswith('bcast_data (rank {}): ranks disagree on the '
                           'parameters to broadcast'.format(comm.rank))
    assert 'parameter /b/W differs across ranks: rank 0: shape (2, 3) ' \
        'dtype float32, rank 1: shape (3, 3)' in text
    assert 'parameter /c/W is uninitialised or absent on ranks [1]' in text
    # In step after: the same layout on every rank broadcasts.
    model.a.W.data[...] = comm.rank
    del model.b, model.c
    comm.bcast_data(model)
    np.testing.assert_array_equal(model.a.W.data, 0)

def _step_grads(model, rank, step):
    """This step's grad values of every param, by name (ranks differ)."""
    out = {}
    for k, (name, p) in enumerate(sorted(model.namedparams())):
        rs = np.random.RandomState(1000 * step + 10 * rank + k)
        out[name] = rs.uniform(-4, 4, size=p.shape).astype(p.dtype)
    return out


def _mixed_model():
    model = _Model(np.float32)
    model.c.W.data = model.c.W.data.astype(np.float64)   # two dtypes
    model.cleargrads()
    return model


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('communicator_name', NAMES + ('dummy',))
def test_grads_kept_in_place_move_into_one_buffer_with_the_same_bits(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    kept, fresh = _mixed_model(), _mixed_model()
    grads = dict(kept.namedparams())
    for step in range(4):
        values = _step_grads(kept, comm.rank, step)
        for name, p in kept.namedparams():
            if p.grad is None:
                p.grad = values[name].copy()
            else:
                p.grad[...] = values[name]      # the same arrays again
        for name, p in fresh.namedparams():
            p.grad = values[name].copy()        # new arrays: never moved
        comm.multi_node_mean_grad(kept)
        comm.multi_node_mean_grad(fresh)
        for name, p in fresh.namedparams():
            got = grads[name].grad
            assert got.dtype == p.grad.dtype and got.shape == p.grad.shape
            assert got.tobytes() == p.grad.tobytes(), (step, name)
    # From the second mean on, the grads are views of one buffer per dtype.
    bases = {p.grad.dtype: p.grad.base for p in kept.params()}
    assert len(bases) == 2 and all(b is not None for b in bases.values())
    for p in kept.params():
        assert p.grad.base is bases[p.grad.dtype]
    assert all(p.grad.base is None for p in fresh.params())


@pytest.mark.mpi(sizes=(2, 3))
@pytest.mark.parametrize('communicator_name', ('naive', 'flat'))
def test_one_rank_replacing_a_moved_grad_takes_every_rank_off_the_buffer(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _Model()
    _fill(model, comm.rank, np.float32, skip=())
    for _ in range(3):
        comm.multi_node_mean_grad(model)       # moved at the second
    before = {name: p.grad.copy() for name, p in model.namedparams()}
    if comm.rank == 1:
        model.b.W.grad = model.b.W.grad + 0     # no longer the buffer's
    comm.multi_node_mean_grad(model)
    for name, p in model.namedparams():
        # Every rank held the same means: the mean of equal values.
        np.testing.assert_array_equal(p.grad, before[name])
    model.b.W.grad[...] = comm.rank
    comm.multi_node_mean_grad(model)
    np.testing.assert_allclose(model.b.W.grad, (comm.size - 1) / 2,
                               rtol=1e-6)


def test_one_array_for_two_params_stays_shared():
    params = [chainer.Parameter(np.zeros(4, np.float32)) for _ in range(2)]
    shared = np.ones(4, np.float32)
    arena = _grads.GradArena()
    for _ in range(3):
        for p in params:
            p.grad = shared
        arena.settle(params, [shared, shared])
    assert all(p.grad is shared for p in params)
    assert not arena.holds([shared, shared])


@pytest.mark.mpi(sizes=(1, 2))
def test_two_communicators_share_a_models_buffer(mpi_comm,
                                                 make_communicator):
    flat = make_communicator(mpi_comm, 'flat')
    naive = make_communicator(mpi_comm, 'naive')
    model = _Model()
    comm_rank = flat.rank
    _fill(model, comm_rank, np.float32, skip=())
    for _ in range(2):
        flat.multi_node_mean_grad(model)
    bound = [p.grad for p in model.params()]
    for _ in range(3):
        naive.multi_node_mean_grad(model)
        flat.multi_node_mean_grad(model)
    # Neither took the grads off the other's buffer.
    assert all(p.grad is g for p, g in zip(model.params(), bound))
    expect = _Model()
    _fill(expect, comm_rank, np.float32, skip=())
    if flat.size == 1:
        for p, q in zip(model.params(), expect.params()):
            np.testing.assert_array_equal(p.grad, q.grad)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('communicator_name', NAMES + ('dummy',))
def test_data_broadcast_again_moves_into_one_buffer_per_dtype(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    model = _mixed_model()
    for step in range(5):
        expect = {}
        for k, (name, p) in enumerate(sorted(model.namedparams())):
            pattern = (np.arange(p.size).reshape(p.shape) * (step + 1)
                       + k) % 11
            p.data[...] = pattern + comm.rank      # in place: same arrays
            expect[name] = pattern.astype(p.dtype)
        if step == 3 and comm.rank == comm.size - 1:
            model.b.W.data = model.b.W.data.copy()  # off the buffer here
        comm.bcast_data(model)
        for name, p in model.namedparams():
            np.testing.assert_array_equal(p.data, expect[name])
    bases = {p.data.dtype: p.data.base for p in model.params()
             if p is not model.b.W}
    assert len(bases) == 2 and all(b is not None for b in bases.values())
    for p in model.params():
        if p is not model.b.W:
            assert p.data.base is bases[p.data.dtype]


class _Unhashable(_Model):
    __eq__ = object.__eq__
    __hash__ = None


@pytest.mark.mpi(sizes=(1, 2))
def test_a_model_that_cannot_be_a_dict_key_takes_the_usual_path(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    model = _Unhashable()
    _fill(model, 0, np.float32, skip=())
    expect = {name: p.grad.copy() for name, p in model.namedparams()}
    for _ in range(3):
        comm.multi_node_mean_grad(model)
        comm.bcast_data(model)
    for name, p in model.namedparams():
        np.testing.assert_array_equal(p.grad, expect[name])
        assert p.grad.base is None
