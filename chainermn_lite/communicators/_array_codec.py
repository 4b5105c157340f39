"""Array descriptors as int64 words: shape and dtype travel cheaply.

A descriptor is ``[dtype code, ndim, dim0, dim1, ...]``. Collectives use a
fixed-width form (``DESCRIPTOR_WORDS`` words per rank) so that every rank
can exchange them with one buffer call; point-to-point frames list the
descriptors of all arrays of a tuple one after another.
"""
import numpy

from chainermn_lite import _mpi

__all__ = ['DESCRIPTOR_WORDS', 'as_sendable', 'is_plain_sendable', 'describe',
           'describe_fixed', 'parse', 'parse_fixed', 'byte_view',
           'empty_like_descriptor', 'align']

_MAX_NDIM = 32
DESCRIPTOR_WORDS = 2 + _MAX_NDIM

# dtype.char is stable across processes and platforms of one build.
_DTYPE_CHARS = '?bBhHiIlLqQefdgFDG'


def as_sendable(x, what):
    """``x`` as a C-contiguous native-order ndarray, or TypeError."""
    if not hasattr(x, 'dtype') or not hasattr(x, 'shape'):
        raise TypeError('{}: expected an array, got {}'.format(
            what, type(x).__name__))
    _mpi.check_movable_dtype(x.dtype, what)
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder('='))
    if not x.flags.c_contiguous:
        # Strided views "just work": one copy, like MPI's derived types.
        x = x.copy(order='C')
    return x


def is_plain_sendable(x):
    """True when ``x`` is a NumPy array as_sendable would return as is."""
    return (type(x) is numpy.ndarray and x.flags.c_contiguous
            and x.dtype.isnative and x.dtype.char in _DTYPE_CHARS)


def dtype_code(dtype):
    """The integer that names ``dtype`` inside a descriptor."""
    char = dtype.char
    if char not in _DTYPE_CHARS:
        raise TypeError('dtype {} cannot be sent as an array'.format(dtype))
    return ord(char)


def describe(x):
    """Descriptor words of one array (a list of ints)."""
    return [dtype_code(x.dtype), x.ndim] + list(x.shape)


def describe_fixed(x, out):
    """Fill the int64 row ``out`` (DESCRIPTOR_WORDS) with x's descriptor."""
    if x.ndim > _MAX_NDIM:
        raise ValueError('arrays of ndim {} > {} are not supported'.format(
            x.ndim, _MAX_NDIM))
    words = describe(x)
    out[:len(words)] = words
    out[len(words):] = 0
    return out


def parse(words, start):
    """(dtype, shape, next index) of the descriptor at ``words[start]``."""
    dtype = numpy.dtype(chr(words[start]))
    ndim = words[start + 1]
    shape = tuple(words[start + 2:start + 2 + ndim])
    return dtype, shape, start + 2 + ndim


def parse_fixed(row):
    """(dtype, shape) of a fixed-width descriptor row."""
    words = row.tolist()
    dtype, shape, _ = parse(words, 0)
    return dtype, shape


def nbytes_of(dtype, shape):
    """Byte size of an array of ``dtype`` and ``shape``."""
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n


def byte_view(x):
    """A flat uint8 view of the C-contiguous array ``x`` (no copy)."""
    return x.reshape(-1).view(numpy.uint8)


def empty_like_descriptor(dtype, shape, xp=numpy):
    """A fresh array for a received descriptor."""
    return xp.empty(shape, dtype=dtype)


def align(n, to=16):
    """``n`` rounded up to a multiple of ``to`` (keeps views aligned)."""
    return (n + to - 1) // to * to
