"""MPI datatypes as NumPy dtypes, and mpi4py's buffer specifications.

A buffer spec is what mpi4py accepts as a message buffer: an array,
``[array, datatype]``, ``[array, count, datatype]``,
``[array, (counts, displs), datatype]`` or
``[array, counts, displs, datatype]``. :func:`parse` turns one into a
:class:`Buffer`: a flat NumPy view of the memory plus the counts to use.
"""
import numpy as np

from simulator.mpi.constants import InPlaceType

__all__ = ['Datatype', 'Buffer', 'parse', 'parse_vector', 'from_dtype',
           'DATATYPE_NAMES', 'DATATYPE_NULL']


class Datatype:
    """An MPI datatype: a name bound to a NumPy dtype."""

    __module__ = 'simulator.mpi'

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = None if dtype is None else np.dtype(dtype)

    def Get_size(self):  # noqa: N802
        """Bytes per element."""
        return 0 if self.dtype is None else self.dtype.itemsize

    def Get_name(self):  # noqa: N802
        """The MPI name, e.g. ``MPI_FLOAT``."""
        return self.name

    def Get_extent(self):  # noqa: N802
        """(lower bound, extent) in bytes."""
        return 0, self.Get_size()

    def Commit(self):  # noqa: N802
        """Predefined datatypes are always committed."""
        return self

    def Free(self):  # noqa: N802
        """Predefined datatypes cannot be freed; a no-op."""

    size = property(Get_size)
    extent = property(lambda self: self.Get_size())

    def __eq__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return self.name == other.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return '<Datatype {}>'.format(self.name)


# (module name, MPI name, dtype)
_TABLE = [
    ('BYTE', 'MPI_BYTE', np.uint8),
    ('PACKED', 'MPI_PACKED', np.uint8),
    ('CHAR', 'MPI_CHAR', np.uint8),
    ('SIGNED_CHAR', 'MPI_SIGNED_CHAR', np.byte),
    ('UNSIGNED_CHAR', 'MPI_UNSIGNED_CHAR', np.ubyte),
    ('SHORT', 'MPI_SHORT', np.short),
    ('UNSIGNED_SHORT', 'MPI_UNSIGNED_SHORT', np.ushort),
    ('INT', 'MPI_INT', np.intc),
    ('UNSIGNED', 'MPI_UNSIGNED', np.uintc),
    ('LONG', 'MPI_LONG', np.int_),
    ('UNSIGNED_LONG', 'MPI_UNSIGNED_LONG', np.uint),
    ('LONG_LONG', 'MPI_LONG_LONG_INT', np.longlong),
    ('UNSIGNED_LONG_LONG', 'MPI_UNSIGNED_LONG_LONG', np.ulonglong),
    ('SHORT_FLOAT', 'MPI_SHORT_FLOAT', np.float16),
    ('FLOAT', 'MPI_FLOAT', np.float32),
    ('DOUBLE', 'MPI_DOUBLE', np.float64),
    ('LONG_DOUBLE', 'MPI_LONG_DOUBLE', np.longdouble),
    ('C_BOOL', 'MPI_C_BOOL', np.bool_),
    ('INT8_T', 'MPI_INT8_T', np.int8),
    ('INT16_T', 'MPI_INT16_T', np.int16),
    ('INT32_T', 'MPI_INT32_T', np.int32),
    ('INT64_T', 'MPI_INT64_T', np.int64),
    ('UINT8_T', 'MPI_UINT8_T', np.uint8),
    ('UINT16_T', 'MPI_UINT16_T', np.uint16),
    ('UINT32_T', 'MPI_UINT32_T', np.uint32),
    ('UINT64_T', 'MPI_UINT64_T', np.uint64),
    ('C_COMPLEX', 'MPI_C_COMPLEX', np.complex64),
    ('C_FLOAT_COMPLEX', 'MPI_C_FLOAT_COMPLEX', np.complex64),
    ('C_DOUBLE_COMPLEX', 'MPI_C_DOUBLE_COMPLEX', np.complex128),
    ('C_LONG_DOUBLE_COMPLEX', 'MPI_C_LONG_DOUBLE_COMPLEX',
     np.clongdouble),
    ('COMPLEX', 'MPI_COMPLEX', np.complex64),
    ('DOUBLE_COMPLEX', 'MPI_DOUBLE_COMPLEX', np.complex128),
    ('WCHAR', 'MPI_WCHAR', np.uint32),
    ('AINT', 'MPI_AINT', np.intp),
    ('OFFSET', 'MPI_OFFSET', np.int64),
    ('COUNT', 'MPI_COUNT', np.int64),
]

DATATYPE_NAMES = {}
for _attr, _mpi_name, _dtype in _TABLE:
    DATATYPE_NAMES[_attr] = Datatype(_mpi_name, _dtype)
DATATYPE_NAMES['BOOL'] = DATATYPE_NAMES['C_BOOL']
DATATYPE_NAMES['FLOAT16'] = DATATYPE_NAMES['SHORT_FLOAT']
DATATYPE_NULL = Datatype('MPI_DATATYPE_NULL', None)

# MPI_C_FLOAT_COMPLEX is MPI_C_COMPLEX under another name in Open MPI
# (one handle, named MPI_C_COMPLEX).
DATATYPE_NAMES['C_FLOAT_COMPLEX'] = DATATYPE_NAMES['C_COMPLEX']

# The datatype an array is sent as when none is named: mpi4py picks it by
# the buffer's format character (int32 'i' is MPI_INT, int64 'l' MPI_LONG
# but 'q' MPI_LONG_LONG_INT...). Picking the same one matters: the name
# shows in Get_name, and a reduction whose send and receive buffers name
# different datatypes is an error in mpi4py.
_BY_CHAR = {code: DATATYPE_NAMES[attr] for code, attr in (
    ('?', 'C_BOOL'), ('b', 'SIGNED_CHAR'), ('B', 'UNSIGNED_CHAR'),
    ('h', 'SHORT'), ('H', 'UNSIGNED_SHORT'), ('i', 'INT'),
    ('I', 'UNSIGNED'), ('l', 'LONG'), ('L', 'UNSIGNED_LONG'),
    ('q', 'LONG_LONG'), ('Q', 'UNSIGNED_LONG_LONG'), ('e', 'SHORT_FLOAT'),
    ('f', 'FLOAT'), ('d', 'DOUBLE'), ('g', 'LONG_DOUBLE'),
    ('F', 'C_COMPLEX'), ('D', 'C_DOUBLE_COMPLEX'),
    ('G', 'C_LONG_DOUBLE_COMPLEX'))}


def from_dtype(dtype):
    """The MPI datatype for a NumPy dtype (``MPI._typedict`` lookup)."""
    found = _BY_CHAR.get(getattr(dtype, 'char', None))
    if found is not None:
        return found
    dtype = np.dtype(dtype)
    found = _BY_CHAR.get(dtype.char)
    if found is not None:
        return found
    if dtype.kind in 'SUV' or dtype.hasobject:
        raise TypeError('cannot send arrays of dtype {!r} as an MPI '
                        'buffer'.format(dtype))
    return Datatype('MPI_BYTE[{}]'.format(dtype.str), dtype)


class Buffer:
    """A message buffer: flat array ``data`` and the parts to use.

    ``count`` elements for plain buffers; ``counts``/``displs`` (in
    elements) for vector collectives. ``in_place`` marks ``IN_PLACE``.
    """

    __slots__ = ('data', 'datatype', 'count', 'counts', 'displs',
                 'in_place')

    def __init__(self, data=None, datatype=None, count=0, counts=None,
                 displs=None, in_place=False):
        self.data = data
        self.datatype = datatype
        self.count = count
        self.counts = counts
        self.displs = displs
        self.in_place = in_place

    @property
    def dtype(self):
        return None if self.data is None else self.data.dtype

    def part(self, i):
        """Elements of block ``i`` of a vector buffer (a view)."""
        start = self.displs[i]
        return self.data[start:start + self.counts[i]]

    def head(self, count=None):
        """The first ``count`` elements (default: the buffer's count)."""
        return self.data[:self.count if count is None else count]


def _flat(array, where):
    if isinstance(array, np.ndarray):
        arr = array
    elif isinstance(array, (bytes, bytearray, memoryview)):
        mem = memoryview(array)
        arr = np.frombuffer(mem, dtype=np.uint8) if mem.format in (
            'B', 'b', 'c') else np.asarray(mem)
        if isinstance(array, bytes):
            arr = arr.view()
    else:
        arr = np.asarray(array)
        if not isinstance(array, (list, tuple)) and arr.ndim == 0:
            raise TypeError('{}: expected a buffer (NumPy array), got '
                            '{!r}'.format(where, type(array).__name__))
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise ValueError('{}: buffer must be contiguous (got an array of '
                         'shape {} with strides {})'.format(
                             where, arr.shape, arr.strides))
    flat = arr.reshape(-1, order='A' if arr.flags.f_contiguous
                       and not arr.flags.c_contiguous else 'C')
    return flat


def _datatype_of(dt, flat, where):
    if dt is None:
        return from_dtype(flat.dtype)
    if isinstance(dt, str):
        return from_dtype(np.dtype(dt))
    if not isinstance(dt, Datatype):
        raise TypeError('{}: expected an MPI datatype, got {!r}'.format(
            where, dt))
    return dt


def _view_as(flat, datatype, where):
    """Reinterpret ``flat`` in the elements of ``datatype``."""
    if datatype.dtype is None or flat.dtype == datatype.dtype:
        return flat
    nbytes = flat.nbytes
    if nbytes % datatype.Get_size():
        raise ValueError('{}: buffer of {} bytes is not a whole number of '
                         '{} elements'.format(where, nbytes, datatype.name))
    return flat.view(np.uint8).view(datatype.dtype)


def parse(spec, where='buffer'):
    """Turn an mpi4py buffer spec into a :class:`Buffer` (or IN_PLACE)."""
    if type(spec) is np.ndarray and spec.flags.c_contiguous:
        flat = spec.reshape(-1)
        return Buffer(flat, from_dtype(flat.dtype), flat.size)
    if isinstance(spec, InPlaceType):
        return Buffer(in_place=True)
    if spec is None:
        return None
    if isinstance(spec, (list, tuple)) and spec and not isinstance(
            spec[0], (int, float, complex, bool, np.number)):
        parts = list(spec)
        array, rest = parts[0], parts[1:]
        flat = _flat(array, where)
        dt = None
        if rest and (isinstance(rest[-1], (Datatype, str))
                     or rest[-1] is None):
            dt = rest.pop()
        datatype = _datatype_of(dt, flat, where)
        flat = _view_as(flat, datatype, where)
        count = flat.size
        counts = displs = None
        if len(rest) == 1:
            if isinstance(rest[0], (list, tuple)) and len(rest[0]) == 2 \
                    and not np.isscalar(rest[0][0]):
                counts, displs = rest[0]
            elif isinstance(rest[0], (list, tuple, np.ndarray)):
                counts = rest[0]
            elif rest[0] is not None:
                count = int(rest[0])
        elif len(rest) == 2:
            counts, displs = rest
            if isinstance(counts, int) and isinstance(displs, int):
                # [buf, count, displ]: a plain buffer starting at displ
                flat = flat[displs:]
                count, counts, displs = counts, None, None
        elif len(rest) > 2:
            raise ValueError('{}: buffer spec has too many items: '
                             '{!r}'.format(where, spec))
        if counts is not None:
            counts = [int(c) for c in counts]
        if displs is not None:
            displs = [int(d) for d in displs]
        if count > flat.size:
            raise ValueError('{}: count {} exceeds the buffer\'s {} '
                             'elements'.format(where, count, flat.size))
        return Buffer(flat, datatype, count, counts, displs)
    flat = _flat(spec, where)
    return Buffer(flat, from_dtype(flat.dtype), flat.size)


def parse_vector(spec, size, where='buffer', default_equal=True):
    """Parse a vector-collective buffer; fill in counts and displs.

    Without counts the buffer splits into ``size`` equal blocks (when
    ``default_equal``); without displs, blocks are packed in rank order.
    """
    buf = parse(spec, where)
    if buf is None or buf.in_place:
        return buf
    if buf.counts is None:
        if not default_equal:
            raise ValueError('{}: expected counts in the buffer '
                             'spec'.format(where))
        if buf.count % size:
            raise ValueError('{}: {} elements do not split into {} equal '
                             'blocks'.format(where, buf.count, size))
        block = buf.count // size
        buf.counts = [block] * size
    if len(buf.counts) != size:
        raise ValueError('{}: expected {} counts, got {}'.format(
            where, size, len(buf.counts)))
    if buf.displs is None:
        displs, total = [], 0
        for c in buf.counts:
            displs.append(total)
            total += c
        buf.displs = displs
    if len(buf.displs) != size:
        raise ValueError('{}: expected {} displacements, got {}'.format(
            where, size, len(buf.displs)))
    for c, d in zip(buf.counts, buf.displs):
        if c < 0 or d < 0 or d + c > buf.data.size:
            raise ValueError('{}: block (count {}, displ {}) lies outside '
                             'the buffer\'s {} elements'.format(
                                 where, c, d, buf.data.size))
    return buf
