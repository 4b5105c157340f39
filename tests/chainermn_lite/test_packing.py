"""chainermn_lite._packing: many arrays into one flat buffer and back."""
import numpy as np
import pytest

from chainermn_lite import _packing


def _arrays(dtype):
    rs = np.random.RandomState(3)
    shapes = [(3, 4), (), (0,), (5,), (2, 0, 3), (1, 1, 2)]
    return [(rs.uniform(-8, 8, size=s) * 4).astype(dtype) for s in shapes]


@pytest.mark.parametrize('dtype', (np.float16, np.float32, np.float64,
                                   np.bool_, np.int64, np.uint8))
def test_round_trip_in_the_arrays_dtype(dtype):
    arrays = _arrays(dtype)
    n = _packing.packed_size(arrays)
    assert n == 12 + 1 + 0 + 5 + 0 + 2
    buf = np.full(n + 3, 7, dtype=dtype)
    packed = _packing.pack(arrays, buf)
    assert packed.size == n and np.shares_memory(packed, buf)
    np.testing.assert_array_equal(
        packed, np.concatenate([a.ravel() for a in arrays]))
    assert (buf[n:] == dtype(7)).all()          # nothing past the end
    back = [np.zeros_like(a) for a in arrays]
    _packing.unpack(buf, back)
    for b, a in zip(back, arrays):
        assert b.dtype == a.dtype
        np.testing.assert_array_equal(b, a)
    views = _packing.views(buf, [a.shape for a in arrays])
    for v, a in zip(views, arrays):
        assert v.shape == a.shape
        np.testing.assert_array_equal(v, a)
        assert v.size == 0 or np.shares_memory(v, buf)


def test_float16_widens_to_float32_and_is_scaled_there():
    # 2049 is no float16; scaled by 1/4 in float32 it is exact.
    grads = [np.array([2048, 1], np.float16), np.array([3], np.float16)]
    buf = np.empty(3, np.float32)
    _packing.pack(grads, buf, scale=0.25)
    np.testing.assert_array_equal(buf, [512, 0.25, 0.75])
    # 2**-26 underflows to 0 in float16: scaling must not happen there.
    tiny = np.empty(1, np.float32)
    _packing.pack([np.array([2.0 ** -14], np.float16)], tiny, 2.0 ** -12)
    assert tiny[0] == 2.0 ** -26
    buf[0] = 2049 / 4                  # rounds to float16 on the way back
    _packing.unpack(buf, grads)
    assert grads[0].dtype == np.float16
    np.testing.assert_array_equal(grads[0], [512, 0.25])
    np.testing.assert_array_equal(grads[1], [0.75])


def test_non_contiguous_arrays_pack_and_unpack_through_views():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    strided = [base.T, base[::2, 1::3], base[:, 0]]
    buf = np.empty(_packing.packed_size(strided), np.float64)
    _packing.pack(strided, buf, scale=2.0)
    np.testing.assert_array_equal(
        buf, np.concatenate([2 * s.ravel() for s in strided]))
    target = np.zeros((4, 6))
    views = [target.T, target[::2, 1::3]]
    _packing.unpack(buf, views)
    expect = np.zeros((4, 6))
    expect.T[...] = 2 * base.T
    expect[::2, 1::3] = 2 * base[::2, 1::3]
    np.testing.assert_array_equal(target, expect)


def test_nothing_to_pack():
    buf = np.empty(0, np.float32)
    assert _packing.pack([], buf).size == 0
    _packing.unpack(buf, [])
    assert _packing.views(buf, []) == []
    empty = [np.zeros((0, 3), np.float32)]
    assert _packing.pack(empty, buf).size == 0
    assert _packing.views(buf, [(0, 3)])[0].shape == (0, 3)


def test_bad_buffers_are_named():
    arrays = [np.ones((2, 3)), np.ones(4)]
    with pytest.raises(ValueError, match=r'pack: 2 arrays of 10 elements '
                       r'.* at least 10 elements, got shape \(9,\)'):
        _packing.pack(arrays, np.empty(9))
    with pytest.raises(ValueError, match=r'unpack: .* got shape \(2, 5\)'):
        _packing.unpack(np.empty((2, 5)), arrays)
    with pytest.raises(TypeError, match='cannot scale by 0.5 into a int64 '
                       'buffer'):
        _packing.pack(arrays, np.empty(10, np.int64), scale=0.5)
    with pytest.raises(ValueError, match=r'views: shape \(2, 2\) at element '
                       r'3 runs past the end of a buffer of 6 elements'):
        _packing.views(np.empty(6), [(3,), (2, 2)])


def test_buffer_pool_reuses_and_grows():
    pool = _packing.BufferPool()
    a = pool.get(np.float32, 10)
    assert a.shape == (10,) and a.dtype == np.float32
    b = pool.get(np.dtype('float32'), 4)
    assert np.shares_memory(a, b)
    assert not np.shares_memory(a, pool.get(np.float32, 4, key='other'))
    assert not np.shares_memory(a, pool.get(np.float64, 4))
    c = pool.get(np.float32, 100)
    assert c.size == 100 and not np.shares_memory(a, c)
    assert np.shares_memory(c, pool.get(np.float32, 1))
    assert pool.get(np.float32, 0).size == 0
