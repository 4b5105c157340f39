"""simulator.nccl: CuPy-NCCL calls over host pointers, checked by the world.

These run in-process only: they need simulated ranks (no GPU, no MPI).
"""
import numpy as np
import pytest

import simulator
from simulator import nccl


def _clique(comm):
    uid = nccl.get_unique_id() if comm.Get_rank() == 0 else None
    uid = comm.bcast(uid, root=0)
    return nccl.NcclCommunicator(comm.Get_size(), uid, comm.Get_rank())


@pytest.mark.parametrize('size', [1, 2, 3, 4, 8])
@pytest.mark.parametrize('dtype,code', [
    (np.float16, nccl.NCCL_FLOAT16), (np.float32, nccl.NCCL_FLOAT32),
    (np.float64, nccl.NCCL_FLOAT64), (np.int32, nccl.NCCL_INT32),
    (np.int64, nccl.NCCL_INT64), (np.uint8, nccl.NCCL_UINT8)])
def test_collectives_match_numpy(size, dtype, code):
    def body(comm):
        r = comm.Get_rank()
        nc = _clique(comm)
        assert (nc.rank_id(), nc.size()) == (r, size)
        x = (np.arange(6) % 5 + r).astype(dtype)
        all_x = [(np.arange(6) % 5 + i).astype(dtype) for i in range(size)]
        out = np.empty_like(x)
        nc.allReduce(x.ctypes.data, out.ctypes.data, 6, code,
                     nccl.NCCL_SUM, 0)
        np.testing.assert_array_equal(out, np.sum(all_x, axis=0,
                                                  dtype=dtype))
        nc.allReduce(x.ctypes.data, x.ctypes.data, 6, code,
                     nccl.NCCL_MAX, 0)                 # in place
        np.testing.assert_array_equal(x, all_x[-1])
        root = size - 1
        b = np.full(4, r, dtype=dtype)
        nc.bcast(b.ctypes.data, 4, code, root, 0)
        np.testing.assert_array_equal(b, root)
        red = np.zeros(6, dtype=dtype)
        src = all_x[r].copy()
        nc.reduce(src.ctypes.data, red.ctypes.data, 6, code,
                  nccl.NCCL_MIN, 0, 0)
        if r == 0:
            np.testing.assert_array_equal(red, np.min(all_x, axis=0))
        else:
            np.testing.assert_array_equal(red, 0)
        g = np.empty(6 * size, dtype=dtype)
        nc.allGather(src.ctypes.data, g.ctypes.data, 6, code, 0)
        np.testing.assert_array_equal(g, np.concatenate(all_x))
        rs_in = np.tile(all_x[r][:2], size)
        rs_out = np.empty(2, dtype=dtype)
        nc.reduceScatter(rs_in.ctypes.data, rs_out.ctypes.data, 2, code,
                         nccl.NCCL_SUM, 0)
        expect = np.sum([np.tile(a[:2], size) for a in all_x], axis=0,
                        dtype=dtype)[2 * r:2 * r + 2]
        np.testing.assert_array_equal(rs_out, expect)
        nc.destroy()
    simulator.run(body, size)


def test_mismatched_calls_are_reported():
    def body(comm):
        nc = _clique(comm)
        x = np.ones(4, dtype=np.float32)
        if comm.Get_rank() == 0:
            nc.bcast(x.ctypes.data, 4, nccl.NCCL_FLOAT32, 0, 0)
        else:
            nc.allReduce(x.ctypes.data, x.ctypes.data, 4, nccl.NCCL_FLOAT32,
                         nccl.NCCL_SUM, 0)
    with pytest.raises(simulator.CollectiveMismatchError,
                       match='ncclAllReduce|ncclBcast'):
        simulator.run(body, 2, timeout=30)


def test_rank_that_skips_the_collective_is_a_deadlock_not_a_hang():
    def body(comm):
        nc = _clique(comm)
        x = np.ones(4, dtype=np.float32)
        if comm.Get_rank() != 1:
            nc.allReduce(x.ctypes.data, x.ctypes.data, 4, nccl.NCCL_FLOAT32,
                         nccl.NCCL_SUM, 0)
    with pytest.raises(simulator.DeadlockError, match='ncclAllReduce'):
        simulator.run(body, 3, timeout=30)


def test_failing_rank_releases_the_others():
    def body(comm):
        nc = _clique(comm)
        if comm.Get_rank() == 2:
            raise RuntimeError('boom in rank 2')
        x = np.ones(4, dtype=np.float32)
        nc.allReduce(x.ctypes.data, x.ctypes.data, 4, nccl.NCCL_FLOAT32,
                     nccl.NCCL_SUM, 0)
    with pytest.raises(RuntimeError, match='boom in rank 2'):
        simulator.run(body, 4, timeout=30)


def test_outside_a_run_and_bad_arguments():
    with pytest.raises(nccl.NcclError, match='inside a simulated run'):
        nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)

    def body(comm):
        with pytest.raises(nccl.NcclError, match='rank 3 out of range'):
            nccl.NcclCommunicator(2, nccl.get_unique_id(), 3)
    simulator.run(body, 1)
    assert nccl.get_unique_id() != nccl.get_unique_id()
    assert len(nccl.get_unique_id()) == 128
