"""chainermn_lite._wire: descriptors, frames, offsets and the checks."""
import types

import numpy as np
import pytest

from chainermn_lite import _mpi
from chainermn_lite import _wire

DTYPES = (np.float16, np.float32, np.float64, np.bool_, np.int8, np.int64,
          np.uint8, np.uint64, np.complex64, np.complex128)
SHAPES = ((), (0,), (1,), (3, 4), (2, 0, 5), (1,) * _wire.MAX_NDIM)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', SHAPES)
def test_descriptor_round_trip(dtype, shape):
    x = np.zeros(shape, dtype=dtype)
    words = [7, 7] + _wire.describe(x)          # parse from an offset
    got_dtype, got_shape, end = _wire.parse(words, 2)
    assert (got_dtype, got_shape, end) == (np.dtype(dtype), shape,
                                           len(words))
    row = np.full(_wire.DESCRIPTOR_WORDS, -5, dtype=np.int64)
    _wire.describe_fixed(x, row)
    assert _wire.parse_fixed(row) == (np.dtype(dtype), shape)
    assert not _wire.fixed_on_device(row)
    # a GPU array's host copy: the same descriptor, flagged
    _wire.describe_fixed(x, row, on_device=True)
    assert _wire.parse_fixed(row) == (np.dtype(dtype), shape)
    assert _wire.fixed_on_device(row)
    assert _wire.nbytes_of(np.dtype(dtype), shape) == x.nbytes


def test_descriptors_of_a_tuple_follow_each_other():
    arrays = [np.zeros((2, 3), np.float16), np.zeros((), np.bool_),
              np.zeros((4,), np.int64)]
    words = sum((_wire.describe(a) for a in arrays), [])
    at, got = 0, []
    while at < len(words):
        dtype, shape, at = _wire.parse(words, at)
        got.append((dtype, shape))
    assert got == [(a.dtype, a.shape) for a in arrays]


def test_descriptor_errors_name_the_value():
    row = np.empty(_wire.DESCRIPTOR_WORDS, dtype=np.int64)
    # NumPy 1.x stops at 32 dims itself; NumPy 2 and CuPy go further.
    deep = types.SimpleNamespace(ndim=33, shape=(1,) * 33,
                                 dtype=np.dtype(np.float32))
    with pytest.raises(ValueError, match='ndim 33 > 32'):
        _wire.describe_fixed(deep, row)
    with pytest.raises(TypeError, match='dtype object'):
        _wire.describe(np.array([None]))
    with pytest.raises(TypeError, match='dtype <U3'):
        _wire.dtype_code(np.dtype('<U3'))


def test_as_sendable_makes_contiguous_native_copies_only_when_needed():
    plain = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert _wire.as_sendable(plain, 'test') is plain
    assert _wire.is_plain_sendable(plain)
    strided = plain[:, ::2]
    assert not _wire.is_plain_sendable(strided)
    got = _wire.as_sendable(strided, 'test')
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, strided)
    swapped = plain.astype(plain.dtype.newbyteorder('>'))
    assert not _wire.is_plain_sendable(swapped)
    got = _wire.as_sendable(swapped, 'test')
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, plain)
    assert not _wire.is_plain_sendable(np.array([None]))
    assert not _wire.is_plain_sendable([1.0, 2.0])
    with pytest.raises(TypeError, match='send: expected an array, got list'):
        _wire.as_sendable([1.0], 'send')
    with pytest.raises(TypeError, match='bcast: dtype object'):
        _wire.as_sendable(np.array([None]), 'bcast')


def test_byte_view_shares_memory():
    x = np.arange(3, dtype=np.int64)
    view = _wire.byte_view(x)
    assert view.dtype == np.uint8 and view.size == 24
    view[:8] = 0xFF
    assert x[0] == -1


@pytest.mark.parametrize('counts,alignment,displs,total', [
    ([], 1, [], 0),
    ([3, 0, 5], 1, [0, 3, 3], 8),
    ([3, 17, 0], 16, [0, 16, 48], 48),
    ([16, 16], 16, [0, 16], 32),
])
def test_offsets(counts, alignment, displs, total):
    assert _wire.offsets(counts, alignment) == (displs, total)


def test_offsets_and_counts_refuse_bad_values_by_name():
    with pytest.raises(ValueError, match='piece 1 has a negative count -2'):
        _wire.offsets([4, -2, 1])
    assert _wire.check_count(_mpi.INT_MAX, 'gather', 3) == _mpi.INT_MAX
    with pytest.raises(ValueError, match=r'gather: {} elements .* \(rank 3'
                       .format(_mpi.INT_MAX + 1)):
        _wire.check_count(_mpi.INT_MAX + 1, 'gather', 3)


def test_arrays_at_reads_back_aligned_pieces():
    arrays = [np.arange(3, dtype=np.float16), np.array(True),
              np.arange(6, dtype=np.int64).reshape(2, 3),
              np.zeros((0, 2), np.float32)]
    descs = [(a.dtype, a.shape) for a in arrays]
    displs, total = _wire.offsets([a.nbytes for a in arrays], 16)
    buf = np.zeros(total, dtype=np.uint8)
    for a, d in zip(arrays, displs):
        buf[d:d + a.nbytes] = _wire.byte_view(a)
    got = _wire.arrays_at(buf, descs, displs)
    assert isinstance(got, tuple)
    for g, a in zip(got, arrays):
        assert g.dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(g, a)
        assert g.size == 0 or np.shares_memory(g, buf)


def test_frames():
    small = np.zeros(8, np.uint8)
    words = _wire.describe(small)
    assert _wire.frame_mode(len(words), small.nbytes) == _wire.INLINE
    assert _wire.frame_mode(len(words), _wire.FRAME_BYTES) == _wire.DETACHED
    assert _wire.frame_mode(_wire.FRAME_BYTES // 8, 0) == _wire.SEPARATE
    head = _wire.frame_head(_wire.KIND_TUPLE, 99, words, _wire.INLINE)
    assert len(head) == 8 * (_wire.HEADER_WORDS + len(words))
    assert _wire.HEADER.unpack_from(head) == (_wire.KIND_TUPLE, 99,
                                              len(words), _wire.INLINE)
    body = np.frombuffer(head, np.int64)[_wire.HEADER_WORDS:].tolist()
    assert _wire.parse(body, 0)[:2] == (small.dtype, small.shape)
    # SEPARATE: the descriptor travels as a message of its own.
    head = _wire.frame_head(_wire.KIND_ARRAY, 5, words, _wire.SEPARATE)
    assert len(head) == 8 * _wire.HEADER_WORDS
    assert _wire.HEADER.unpack_from(head)[2] == len(words)


def test_check_peer():
    assert _wire.check_peer(np.int64(2), 4, 0, 'send') == 2
    assert type(_wire.check_peer(np.int64(2), 4, 0, 'send')) is int
    assert _wire.check_peer(-1, 4, 0, 'recv', wildcard=-1) == -1
    assert _wire.check_peer(0, 4, 0, 'send_obj', allow_self=True) == 0
    for bad in (4, -1, 2.0, True, '1', None):
        with pytest.raises(ValueError, match=r'send: rank {} is out of range '
                           r'for a communicator of size 4 \(called on rank '
                           r'1\)'.format(repr(bad).replace('.', r'\.'))):
            _wire.check_peer(bad, 4, 1, 'send')
    with pytest.raises(ValueError, match=r'recv: rank 3 names itself as its '
                       r'peer \(3\).*deadlocks'):
        _wire.check_peer(3, 4, 3, 'recv')
    with pytest.raises(ValueError, match='names itself'):
        _wire.check_not_self(1, 1, 'send')
    _wire.check_not_self(0, 1, 'send')


def test_check_root_and_tag():
    assert _wire.check_root(0, 2, 0, 'bcast') == 0
    with pytest.raises(ValueError, match=r'bcast root: rank 2 is out of '
                       r'range for a communicator of size 2 \(called on rank '
                       r'1\)'):
        _wire.check_root(2, 2, 1, 'bcast')
    assert _wire.check_tag(np.int32(7), 'send', 0) == 7
    assert _wire.check_tag(-1, 'recv', 0, wildcard=-1) == -1
    with pytest.raises(ValueError, match=r'send: tag must be an int >= 0, '
                       r'got -3 \(rank 2\)'):
        _wire.check_tag(-3, 'send', 2)
    with pytest.raises(ValueError, match=r'got True$'):
        _wire.check_tag(True, 'send')
    with pytest.raises(ValueError, match=r"got '4'$"):
        _wire.check_tag('4', 'send')


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_allgather_descriptors(mpi_comm):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = np.zeros((rank, 2) if rank % 2 else (rank + 1,),
                    dtype=DTYPES[rank])
    row = np.empty(_wire.DESCRIPTOR_WORDS, dtype=np.int64)
    for x, got in (_wire.allgather_descriptors(mpi_comm, lambda: mine, 'a'),
                   _wire.allgather_descriptors(mpi_comm, lambda: mine, 'a',
                                               row)):
        assert x is mine
        assert got == [(np.dtype(DTYPES[r]), (r, 2) if r % 2 else (r + 1,))
                       for r in range(size)]
