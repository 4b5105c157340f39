"""chainermn_lite._device_packing: many device arrays into one buffer in
one kernel, and back (through ``_packing``, which takes it for device
arrays of the buffer's dtype). Needs CuPy and a GPU: skips, saying so,
without them (CI has none; they run on a lent GPU machine). One process:
nothing here is multi-rank."""
import numpy as np
import pytest

from chainermn_lite import _device_packing
from chainermn_lite import _packing


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no CuPy, no driver, no device: no GPU here
        pass
    return None


pytestmark = pytest.mark.skipif(
    _cupy() is None, reason='needs CuPy and a GPU; this machine has none')

SHAPES = [(3, 4), (), (0,), (5,), (2, 0, 3), (1, 1, 2), (1000, 37)]


def _host_arrays(dtype):
    rs = np.random.RandomState(11)
    low = 0 if np.dtype(dtype).kind == 'u' else -8
    return [(rs.uniform(low, 8, size=s) * 4).astype(dtype) for s in SHAPES]


@pytest.mark.parametrize('dtype', (np.float16, np.float32, np.float64,
                                   np.bool_, np.int8, np.uint64))
def test_round_trip_moves_the_bits(dtype):
    cupy = _cupy()
    host = _host_arrays(dtype)
    if dtype == np.float16:     # NaN payloads survive a bit copy
        host[0].view(np.uint16)[0, 0] = 0x7e01
    arrays = [cupy.asarray(a) for a in host]
    n = _packing.packed_size(arrays)
    buf = cupy.full(n + 5, 3, dtype=dtype)
    assert _device_packing.fits(arrays, buf)
    _packing.pack(arrays, buf)
    expect = np.concatenate([a.ravel() for a in host])
    got = buf.get()
    np.testing.assert_array_equal(got[:n].view(np.uint8),
                                  expect.view(np.uint8))
    assert (got[n:] == dtype(3)).all()          # nothing past the end
    back = [cupy.zeros_like(a) for a in arrays]
    _packing.unpack(buf, back)
    for b, h in zip(back, host):
        assert b.shape == h.shape
        np.testing.assert_array_equal(b.get().reshape(-1).view(np.uint8),
                                      h.reshape(-1).view(np.uint8))


def test_a_table_is_reused_only_for_the_same_arrays():
    cupy = _cupy()
    a = [cupy.arange(4, dtype=cupy.float32), cupy.ones(3, cupy.float32)]
    b = [cupy.full(4, 7, cupy.float32), cupy.zeros(3, cupy.float32)]
    buf = cupy.empty(7, cupy.float32)
    for arrays in (a, b, a):
        _packing.pack(arrays, buf)
        np.testing.assert_array_equal(
            buf.get(), np.concatenate([x.get() for x in arrays]))


def test_other_arrays_take_the_one_by_one_path_and_agree():
    cupy = _cupy()
    rs = np.random.RandomState(2)
    mixed = [cupy.asarray(rs.randn(3, 4).astype(np.float16)),
             cupy.asarray(rs.randn(6).astype(np.float32))]
    strided = [cupy.asarray(rs.randn(4, 6).astype(np.float32))[:, ::2],
               cupy.asarray(rs.randn(5).astype(np.float32))]
    buf = cupy.empty(32, cupy.float32)
    assert not _device_packing.fits(mixed, buf)
    assert not _device_packing.fits(strided, buf)
    assert not _device_packing.fits(mixed[1:], buf)     # one array
    for arrays in (mixed, strided):
        packed = _packing.pack(arrays, buf)
        np.testing.assert_array_equal(packed.get(), np.concatenate(
            [x.get().astype(np.float32).ravel() for x in arrays]))
