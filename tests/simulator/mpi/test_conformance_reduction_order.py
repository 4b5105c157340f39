"""Conformance: floating-point reductions are bit-identical to Open MPI's.

Every rank fills its buffer with values whose sum or product depends on
the association, reduces, and compares the result bit for bit with
:func:`simulator.engine.reduction_order.expected`, computed from all ranks'
inputs in Open MPI 5.0.11's order. On the simulator this checks the
simulator against the model; under ``mpiexec`` it checks the model against
real Open MPI. Counts straddle each algorithm switch point the sizes hit.
Mismatches are collected and asserted after the last collective, so a
failing rank never leaves the others waiting in a collective.
"""
import operator
import threading

import numpy as np
import pytest

from simulator.engine import reduction_order as order
from simulator.mpi.ops import OP_NAMES

SIZES = (1, 2, 3, 4, 5, 8)
DTYPES = ('float32', 'float64', 'float16', 'complex64')
OPS = ('SUM', 'PROD')
# Byte sizes where Open MPI 5.0.11's fixed decisions switch algorithm for
# some communicator size from 2 to 8 (allreduce, reduce, reduce_scatter).
SWITCH_BYTES = (8, 16, 32, 256, 4096, 8192, 16384, 65536, 131072, 262144,
                524288, 1048576)


def _counts(size, itemsize, per_rank=False):
    counts = {1, 2, 3, 5, 7, 9, 17, max(1, size - 1), size, size + 1}
    for limit in SWITCH_BYTES:
        elements = limit // itemsize // (size if per_rank else 1)
        counts.update(c for c in (elements - 1, elements) if c >= 1)
    return sorted(counts)


def _values(rank, count, dtype, op, salt):
    rng = np.random.RandomState(1000 * salt + rank)
    dtype = np.dtype(dtype)
    if op == 'PROD':
        real = 1 + rng.uniform(-0.4, 0.4, count)
    else:
        real = rng.standard_normal(count) * 10.0 ** rng.randint(-3, 4, count)
        if dtype == np.float16:
            real = rng.standard_normal(count) * 2.0 ** rng.randint(-4, 5,
                                                                     count)
    if dtype.kind == 'c':
        imag = 1 + rng.uniform(-0.4, 0.4, count) if op == 'PROD' else \
            rng.standard_normal(count)
        return (real + 1j * imag).astype(dtype)
    return real.astype(dtype)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        a.tobytes() == b.tobytes()


class _Mismatches:
    def __init__(self, comm):
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.found = []

    def check(self, what, got, want):
        if not _same_bits(got, want):
            bad = np.flatnonzero(np.asarray(got) != np.asarray(want))
            self.found.append('rank {} of {}: {}: {} of {} elements differ '
                              '(first at {})'.format(
                                  self.rank, self.size, what, bad.size,
                                  np.asarray(want).size,
                                  bad[:1].tolist()))

    def assert_none(self):
        assert not self.found, '\n'.join(self.found[:20])


def _inputs(size, count, dtype, op, salt):
    return [_values(r, count, dtype, op, salt) for r in range(size)]


_lock = threading.Lock()
_cases = {}


class _Case:
    """Every rank's inputs for one count, and the model's results.

    Each rank needs all of them; in-process the ranks are threads asking
    for the same ones at once, so they are computed once and shared (the
    model's float16 arithmetic made 8-rank tests take 40 s of CPU). Under
    mpiexec each process computes its own, as before.
    """

    def __init__(self, inputs):
        self.inputs = inputs
        self._expected = {}

    def expected(self, name, model, **options):
        # the model is an MPI.Op, unhashable as mpi4py's: keyed by name
        key = (name, model._name) + tuple(sorted(
            (k, tuple(v) if isinstance(v, list) else v)
            for k, v in options.items()))
        with _lock:
            if key not in self._expected:
                self._expected[key] = order.expected(name, self.inputs,
                                                     model, **options)
            return self._expected[key]


def _case(size, count, dtype, op, salt):
    key = (size, count, dtype, op, salt)
    with _lock:
        if key not in _cases:
            if len(_cases) >= 8:    # ranks move through counts together
                _cases.clear()
            _cases[key] = _Case(_inputs(size, count, dtype, op, salt))
        return _cases[key]


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('op_name', OPS)
def test_allreduce_and_iallreduce_bit_identical(mpi_comm, MPI, dtype,
                                                op_name):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    op, model = getattr(MPI, op_name), OP_NAMES[op_name]
    log = _Mismatches(mpi_comm)
    for count in _counts(size, np.dtype(dtype).itemsize):
        case = _case(size, count, dtype, op_name, count)
        mine = case.inputs[rank]
        for name, in_place in (('Allreduce', False), ('Allreduce', True),
                               ('Iallreduce', False), ('Iallreduce', True)):
            want = case.expected(name, model, in_place=in_place)[rank]
            recv = mine.copy() if in_place else np.empty_like(mine)
            send = MPI.IN_PLACE if in_place else mine
            if name == 'Allreduce':
                mpi_comm.Allreduce(send, recv, op=op)
            else:
                mpi_comm.Iallreduce(send, recv, op=op).Wait()
            log.check('{}(count={}, {}, {}, in_place={})'.format(
                name, count, dtype, op_name, in_place), recv, want)
    log.assert_none()


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('op_name', OPS)
def test_reduce_bit_identical(mpi_comm, MPI, dtype, op_name):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    op, model = getattr(MPI, op_name), OP_NAMES[op_name]
    log = _Mismatches(mpi_comm)
    roots = sorted({0, 1 % size, size - 1})
    for count in _counts(size, np.dtype(dtype).itemsize):
        case = _case(size, count, dtype, op_name, count)
        mine = case.inputs[rank]
        for root in roots:
            want = case.expected('Reduce', model, root=root)[rank]
            for in_place in (False, True):
                recv = mine.copy() if rank == root else \
                    np.empty_like(mine)
                send = MPI.IN_PLACE if in_place and rank == root else mine
                mpi_comm.Reduce(send, recv, op=op, root=root)
                if rank == root:
                    log.check('Reduce(count={}, {}, {}, root={}, '
                              'in_place={})'.format(count, dtype, op_name,
                                                    root, in_place),
                              recv, want)
    log.assert_none()


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('op_name', OPS)
def test_reduce_scatter_bit_identical(mpi_comm, MPI, dtype, op_name):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    op, model = getattr(MPI, op_name), OP_NAMES[op_name]
    log = _Mismatches(mpi_comm)
    for count in _counts(size, np.dtype(dtype).itemsize, per_rank=True):
        case = _case(size, count * size, dtype, op_name, count)
        mine = case.inputs[rank]
        want = case.expected('Reduce_scatter_block', model)[rank]
        recv = np.empty(count, dtype)
        mpi_comm.Reduce_scatter_block(mine, recv, op=op)
        log.check('Reduce_scatter_block(count={}, {}, {})'.format(
            count, dtype, op_name), recv, want)
        inout = mine.copy()
        mpi_comm.Reduce_scatter_block(MPI.IN_PLACE, inout, op=op)
        log.check('Reduce_scatter_block(count={}, {}, {}, in_place)'.format(
            count, dtype, op_name), inout[:count], want)

        counts = [count + r % 2 for r in range(size)]
        case = _case(size, sum(counts), dtype, op_name, count + 1)
        want = case.expected('Reduce_scatter', model, counts=counts)[rank]
        recv = np.empty(counts[rank], dtype)
        mpi_comm.Reduce_scatter(case.inputs[rank], recv, counts, op=op)
        log.check('Reduce_scatter(counts={}, {}, {})'.format(
            counts, dtype, op_name), recv, want)
    log.assert_none()


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('op_name', OPS)
def test_object_reductions_bit_identical(mpi_comm, MPI, op_name):
    """mpi4py's lowercase calls: its own binomial / recursive-doubling
    trees, with numbers, NumPy arrays and (order-revealing) sequences."""
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    op = getattr(MPI, op_name)
    combine = operator.add if op_name == 'SUM' else operator.mul
    log = _Mismatches(mpi_comm)
    for salt in range(3):
        arrays = _inputs(size, 5, 'float64', op_name, salt)
        for kind, leaf in (
                ('float', lambda r, a=arrays: float(a[r][0])),
                ('ndarray', lambda r, a=arrays: a[r].copy())):
            tree = order.object_reduce_tree(size)
            want = order.evaluate(tree, leaf, combine)
            log.check('allreduce({}, {})'.format(kind, op_name),
                      np.asarray(mpi_comm.allreduce(leaf(rank), op=op)),
                      np.asarray(want))
            root = salt % size
            got = mpi_comm.reduce(leaf(rank), op=op, root=root)
            if rank == root:
                log.check('reduce({}, {}, root={})'.format(
                    kind, op_name, root), np.asarray(got), np.asarray(want))
            scan = order.object_scan_trees(size)[rank]
            log.check('scan({}, {})'.format(kind, op_name),
                      np.asarray(mpi_comm.scan(leaf(rank), op=op)),
                      np.asarray(order.evaluate(scan, leaf, combine)))
            exscan = order.object_scan_trees(size, exclusive=True)[rank]
            got = mpi_comm.exscan(leaf(rank), op=op)
            if exscan is None:
                assert got is None
            else:
                log.check('exscan({}, {})'.format(kind, op_name),
                          np.asarray(got),
                          np.asarray(order.evaluate(exscan, leaf, combine)))
    if op_name == 'SUM':
        assert mpi_comm.allreduce([rank]) == list(range(size))
        assert mpi_comm.scan((rank,)) == tuple(range(rank + 1))
    log.assert_none()


def test_trees_differ_where_open_mpi_switches_algorithm():
    """The model is not one fixed order: 3-rank Allreduce turns into a ring
    (a rotated order per block) at 4 KiB, 4-rank Reduce changes tree."""
    assert order.allreduce_plan(3, 1023, 4) == [(0, 1023, ((0, 1), 2))]
    ring = order.allreduce_plan(3, 1024, 4)
    assert [(lo, hi) for lo, hi, _ in ring] == [(0, 342), (342, 683),
                                                (683, 1024)]
    assert ring[1][2] == ((1, 2), 0)
    assert order.reduce_plan(4, 1, 4, 0)[0][2] == ((0, (1, 3)), 2)
    assert order.reduce_plan(4, 1024, 4, 0)[0][2] == (0, (1, (2, 3)))
    assert order.reduce_plan(4, 16384, 4, 0)[0][2] == ((0, 1), (2, 3))
    assert order.object_scan_trees(3, exclusive=True) == [None, 0, (0, 1)]
