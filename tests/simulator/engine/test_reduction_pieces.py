"""A reduction shared in pieces, and combinations into an input.

``reduction_order.Reduction`` lets several threads do pieces of one
reduction; whoever does a piece, every element must be combined in the
plan's order, so the result is bit-identical to the one-shot evaluation
(``reduce_plan_into`` into a fresh array), also when the receive buffers
are the inputs (``IN_PLACE``) and when pieces straddle the blocks of a
ring plan. ``Op._combine_into`` may write into one of its operands.
"""
import threading

import numpy as np
import pytest

from simulator.engine import reduction_order as order
from simulator.mpi.ops import OP_NAMES, Op


class _SmallPieces(order.Reduction):
    # 40 float32 per piece: pieces straddle the ring plan's blocks.
    PIECE_BYTES = 160


def _inputs(size, count, dtype, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.standard_normal(count) *
             10.0 ** rng.randint(-3, 4, count)).astype(dtype)
            for _ in range(size)]


def _one_shot(plan, op, args):
    whole = np.empty_like(args[0])
    order.reduce_plan_into(plan, op, args, whole, 0, whole.size)
    return whole


PLANS = {
    # 3 ranks, 6000 B: Open MPI's ring, each block from its own rank
    'ring 3 ranks': lambda count: order.allreduce_plan(3, count, 4),
    'doubling 4 ranks': lambda count: order.allreduce_plan(4, count, 4),
    'paired 5 ranks': lambda count: order.allreduce_plan(5, count, 4),
    'chain 3 ranks': lambda count: order.reduce_plan(3, count, 4, 1),
}
SIZES = {'ring 3 ranks': 3, 'doubling 4 ranks': 4, 'paired 5 ranks': 5,
         'chain 3 ranks': 3}


@pytest.mark.parametrize('in_place', [False, True])
@pytest.mark.parametrize('name', sorted(PLANS))
def test_pieces_by_several_threads_bit_identical(name, in_place):
    size, count = SIZES[name], 1501
    plan = PLANS[name](count)
    if name == 'ring 3 ranks':
        assert len(plan) == 3, plan     # really the ring
    op = OP_NAMES['SUM']
    args = _inputs(size, count, np.float32)
    want = _one_shot(plan, op, args)
    if in_place:
        outs = [a.copy() for a in args]
        args = outs
    else:
        outs = [np.full(count, np.nan, np.float32) for _ in range(size)]
    work = _SmallPieces(plan, op, args, outs)
    assert len(work.pieces) == 38
    finished = []
    start = threading.Barrier(3)

    def worker():
        start.wait()
        finished.append(work.work())
    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(finished) == [False, False, True]
    for r, out in enumerate(outs):
        assert out.tobytes() == want.tobytes(), 'rank {}'.format(r)


def test_work_after_the_last_piece_finishes_nothing():
    args = _inputs(2, 10, np.float64)
    work = order.Reduction(order.allreduce_plan(2, 10, 8), OP_NAMES['SUM'],
                           args, [np.empty(10), np.empty(10)])
    assert work.work() is True
    assert work.work() is False


def _records():
    dtype = np.dtype([('value', np.float64), ('index', np.int32)])
    rng = np.random.RandomState(3)
    left = np.zeros(64, dtype)
    right = np.zeros(64, dtype)
    for a in (left, right):
        a['value'] = rng.randint(0, 4, 64)
        a['index'] = rng.randint(0, 9, 64)
    return left, right


def _user_op():
    def minus(invec, inoutvec, datatype):
        inoutvec[:] = invec - 2 * inoutvec
    return Op.Create(minus, commute=False)


CASES = {
    'SUM float32': ('SUM', lambda: _inputs(2, 64, np.float32)),
    'PROD complex64': ('PROD', lambda: [
        (a + 1j * b).astype(np.complex64)
        for a, b in zip(_inputs(2, 64, np.float32, 1),
                        _inputs(2, 64, np.float32, 2))]),
    'LAND int32': ('LAND', lambda: [np.arange(64, dtype=np.int32) % 3,
                                    np.arange(64, dtype=np.int32) % 2]),
    'MAXLOC pairs': ('MAXLOC', _records),
    'user op': (None, lambda: [np.arange(64.0), np.arange(64.0) ** 2]),
}


@pytest.mark.parametrize('into', ['left', 'right'])
@pytest.mark.parametrize('case', sorted(CASES))
def test_combine_into_an_operand_equals_into_a_third_array(case, into):
    name, make = CASES[case]
    op = OP_NAMES[name] if name else _user_op()
    try:
        left, right = make()
        want = np.empty_like(left)
        op._combine_into(want, left, right)
        out = left if into == 'left' else right
        op._combine_into(out, left, right)
        assert out.tobytes() == want.tobytes()
    finally:
        if op._user:
            op.Free()


@pytest.mark.mpi(sizes=(1,))
def test_reduce_local_in_place_of_its_output(mpi_comm, MPI):
    # inoutbuf = inbuf op inoutbuf, computed into inoutbuf itself
    inbuf = np.array([1.5, -2.0, 3.25, 1e30], np.float32)
    inout = np.array([0.25, 4.0, -3.25, 1.0], np.float32)
    MPI.SUM.Reduce_local(inbuf, inout)
    assert inout.tolist() == [1.75, 2.0, 0.0, float(np.float32(1e30))]
    ints = np.array([0, 1, 2, 3], np.int32)
    flags = np.array([1, 1, 0, 0], np.int32)
    MPI.LAND.Reduce_local(ints, flags)
    assert flags.tolist() == [0, 1, 0, 0]


def test_one_rank_in_place_writes_nothing():
    # A lone rank's IN_PLACE result is its own values: a read-only buffer
    # proves that no piece is copied back onto itself.
    values = _inputs(1, 1000, np.float32)[0]
    values.flags.writeable = False
    work = _SmallPieces(order.allreduce_plan(1, 1000, 4), OP_NAMES['SUM'],
                        [values], [values])
    assert work.work() is True
    assert values.tobytes() == _inputs(1, 1000, np.float32)[0].tobytes()
