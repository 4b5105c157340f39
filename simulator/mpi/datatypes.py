"""MPI datatypes as NumPy dtypes, and mpi4py's buffer specifications.

A buffer spec is what mpi4py accepts as a message buffer: an array,
``[array, datatype]``, ``[array, count, datatype]``,
``[array, (counts, displs), datatype]`` or
``[array, counts, displs, datatype]``. :func:`parse` turns one into a
:class:`Buffer`: a flat NumPy view of the memory plus the counts to use.
"""
import ctypes

import numpy as np

from simulator.mpi.constants import InPlaceType
from simulator.mpi.dlpack import dlpack_memory

__all__ = ['Datatype', 'Buffer', 'parse', 'parse_send', 'parse_vector',
           'from_dtype',
           'DATATYPE_NAMES', 'DATATYPE_NULL']


class Datatype:
    """An MPI datatype: a name bound to a NumPy dtype."""

    __module__ = 'simulator.mpi'

    def __init__(self, name, dtype, size=None):
        self.name = name
        self.dtype = None if dtype is None else np.dtype(dtype)
        # Pair types (MPI_DOUBLE_INT...) hold fewer bytes than their
        # padded extent: ``size`` is MPI's count of data bytes.
        self._size = size

    def Get_size(self):
        """Bytes per element."""
        if self._size is not None:
            return self._size
        return 0 if self.dtype is None else self.dtype.itemsize

    def Get_name(self):
        """The MPI name, e.g. ``MPI_FLOAT``."""
        return self.name

    def Get_extent(self):
        """(lower bound, extent) in bytes."""
        return 0, 0 if self.dtype is None else self.dtype.itemsize

    def Commit(self):
        """Predefined datatypes are always committed."""
        return self

    def Free(self):
        """Predefined datatypes cannot be freed; a no-op."""

    def Dup(self):
        """The same (predefined) datatype."""
        return self

    @classmethod
    def fromcode(cls, code):
        """The datatype of a NumPy/struct type code (``'i'``, ``'d'``...)."""
        try:
            return from_dtype(np.dtype(code))
        except TypeError:
            raise ValueError('cannot map {!r} to an MPI datatype'.format(
                code)) from None

    def tocode(self):
        """The NumPy type code of the datatype."""
        if self.dtype is None or self.dtype.fields:
            raise ValueError('{} has no type code'.format(self.name))
        return self.dtype.char

    @property
    def is_predefined(self):
        """True: derived datatypes are not simulated."""
        return True

    def _derived(self, *args, **kwargs):
        from simulator.mpi.unsupported import not_simulated
        raise not_simulated('derived datatypes (MPI.Datatype.Create_*)')

    Create_contiguous = Create_vector = Create_hvector = _derived
    Create_indexed = Create_hindexed = Create_indexed_block = _derived
    Create_hindexed_block = Create_subarray = Create_darray = _derived
    Create_resized = Create_f90_integer = Create_f90_real = _derived
    Create_f90_complex = _derived
    Create_struct = classmethod(_derived)

    size = property(Get_size)
    extent = property(lambda self: self.Get_extent()[1])

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
# Other names Open MPI gives the same handles.
for _alias, _attr in (('FLOAT16_T', 'SHORT_FLOAT'), ('FLOAT32_T', 'FLOAT'),
                      ('FLOAT64_T', 'DOUBLE'), ('UNSIGNED_INT', 'UNSIGNED'),
                      ('SIGNED_INT', 'INT'), ('SIGNED_SHORT', 'SHORT'),
                      ('SIGNED_LONG', 'LONG'),
                      ('SIGNED_LONG_LONG', 'LONG_LONG'),
                      ('LONG_LONG_INT', 'LONG_LONG'),
                      ('SINT8_T', 'INT8_T'), ('SINT16_T', 'INT16_T'),
                      ('SINT32_T', 'INT32_T'), ('SINT64_T', 'INT64_T'),
                      ('CXX_BOOL', 'C_BOOL'),
                      ('CXX_FLOAT_COMPLEX', 'C_COMPLEX'),
                      ('CXX_DOUBLE_COMPLEX', 'C_DOUBLE_COMPLEX'),
                      ('CXX_LONG_DOUBLE_COMPLEX', 'C_LONG_DOUBLE_COMPLEX')):
    DATATYPE_NAMES[_alias] = DATATYPE_NAMES[_attr]

# Fortran datatypes: Open MPI's sizes for a gfortran build.
for _attr, _mpi_name, _dtype in (
        ('CHARACTER', 'MPI_CHARACTER', np.uint8),
        ('LOGICAL', 'MPI_LOGICAL', np.int32),
        ('INTEGER', 'MPI_INTEGER', np.int32),
        ('REAL', 'MPI_REAL', np.float32),
        ('DOUBLE_PRECISION', 'MPI_DOUBLE_PRECISION', np.float64),
        ('LOGICAL1', 'MPI_LOGICAL1', np.int8),
        ('LOGICAL2', 'MPI_LOGICAL2', np.int16),
        ('LOGICAL4', 'MPI_LOGICAL4', np.int32),
        ('LOGICAL8', 'MPI_LOGICAL8', np.int64),
        ('INTEGER1', 'MPI_INTEGER1', np.int8),
        ('INTEGER2', 'MPI_INTEGER2', np.int16),
        ('INTEGER4', 'MPI_INTEGER4', np.int32),
        ('INTEGER8', 'MPI_INTEGER8', np.int64),
        ('REAL4', 'MPI_REAL4', np.float32),
        ('REAL8', 'MPI_REAL8', np.float64),
        ('REAL16', 'MPI_REAL16', np.longdouble),
        ('COMPLEX8', 'MPI_COMPLEX8', np.complex64),
        ('COMPLEX16', 'MPI_COMPLEX16', np.complex128),
        ('COMPLEX32', 'MPI_COMPLEX32', np.clongdouble)):
    DATATYPE_NAMES[_attr] = Datatype(_mpi_name, _dtype)
for _alias, _attr in (('F_BOOL', 'LOGICAL'), ('F_INT', 'INTEGER'),
                      ('F_FLOAT', 'REAL'), ('F_DOUBLE', 'DOUBLE_PRECISION'),
                      ('F_COMPLEX', 'COMPLEX'),
                      ('F_FLOAT_COMPLEX', 'COMPLEX'),
                      ('F_DOUBLE_COMPLEX', 'DOUBLE_COMPLEX')):
    DATATYPE_NAMES[_alias] = DATATYPE_NAMES[_attr]


def _pair(value):
    """A (value, int) pair of MAXLOC / MINLOC, padded like C."""
    return np.dtype([('value', value), ('index', np.intc)], align=True)


# (module name, MPI name, value type, MPI size in bytes)
for _attr, _mpi_name, _value, _size in (
        ('FLOAT_INT', 'MPI_FLOAT_INT', np.float32, 8),
        ('DOUBLE_INT', 'MPI_DOUBLE_INT', np.float64, 12),
        ('LONG_INT', 'MPI_LONG_INT', np.int_, 12),
        ('INT_INT', 'MPI_2INT', np.intc, 8),
        ('SHORT_INT', 'MPI_SHORT_INT', np.short, 6),
        ('LONG_DOUBLE_INT', 'MPI_LONG_DOUBLE_INT', np.longdouble, 20)):
    DATATYPE_NAMES[_attr] = Datatype(_mpi_name, _pair(_value), _size)
DATATYPE_NAMES['TWOINT'] = DATATYPE_NAMES['INT_INT']
DATATYPE_NULL = Datatype('MPI_DATATYPE_NULL', None)
# Open MPI 5.0 lacks these: they are null handles there too.
for _attr in ('BFLOAT16_T', 'COMPLEX4', 'INTEGER16', 'LOGICAL16', 'REAL2'):
    DATATYPE_NAMES[_attr] = DATATYPE_NULL

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


def _at_address(address, dtype, shape, where):
    """A writable array over memory someone else owns (what MPI does with
    a DLPack or ``__cuda_array_interface__`` pointer to host memory)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count == 0:
        return np.empty(0, dtype)
    if not address:
        raise ValueError('{}: buffer has a null address'.format(where))
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _exported(array, where):
    """The memory behind a non-NumPy buffer object, never a copy: a copy
    would take a receive silently and leave the caller's buffer as it
    was. None when the object exports no memory."""
    try:
        mem = memoryview(array)
    except TypeError:
        mem = None
    if mem is not None:
        if mem.format == 'c' or not mem.c_contiguous:
            return np.frombuffer(mem, dtype=np.uint8) if mem.readonly \
                else np.asarray(mem.cast('B'))
        return np.asarray(mem)
    if hasattr(array, '__dlpack__'):
        address, dtype, shape, _capsule = dlpack_memory(array, where)
        return _at_address(address, dtype, shape, where)
    cai = getattr(array, '__cuda_array_interface__', None)
    if cai is not None:
        if cai.get('strides') not in (None, ()) and \
                len(cai.get('shape', ())) > 1:
            raise ValueError('{}: strided device buffers are not '
                             'supported'.format(where))
        return _at_address(cai['data'][0], np.dtype(cai['typestr']),
                           tuple(cai['shape']), where)
    return None


def _flat(array, where):
    if isinstance(array, np.ndarray):
        arr = array
    elif isinstance(array, (list, tuple)):
        arr = np.asarray(array)
    else:
        arr = _exported(array, where)
        if arr is None:
            raise TypeError('{}: expected a buffer (an object exporting '
                            'its memory, e.g. a NumPy array), got '
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
    # Whole elements of the extent: a DOUBLE_INT array is 16 bytes an
    # element (the C struct's padding) though MPI counts 12 of data.
    if nbytes % datatype.dtype.itemsize:
        raise ValueError('{}: buffer of {} bytes is not a whole number of '
                         '{} elements'.format(where, nbytes, datatype.name))
    return flat.view(np.uint8).view(datatype.dtype)


def parse(spec, where='buffer', vector=False):
    """Turn an mpi4py buffer spec into a :class:`Buffer` (or IN_PLACE).

    In a ``vector`` spec (Gatherv...) integer counts and displacements
    stay integers: :func:`parse_vector` repeats them per rank.
    """
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
        dt = None
        if rest and (isinstance(rest[-1], (Datatype, str))
                     or rest[-1] is None):
            dt = rest.pop()
        if array is None:
            # BOTTOM / None: no memory, only an empty message fits it
            datatype = _datatype_of(dt, np.empty(0, np.uint8), where)
            if any(np.any(np.asarray(r, dtype=object) != 0)
                   for r in rest if r is not None and np.isscalar(r)):
                raise ValueError('{}: buffer is None but count is {}'
                                 .format(where, rest[0]))
            flat = np.empty(0, datatype.dtype or np.uint8)
        else:
            flat = _flat(array, where)
        datatype = _datatype_of(dt, flat, where)
        flat = _view_as(flat, datatype, where)
        count = flat.size
        counts = displs = None
        if len(rest) == 1:
            if isinstance(rest[0], tuple) and len(rest[0]) == 2 or (
                    isinstance(rest[0], list) and len(rest[0]) == 2 and
                    not np.isscalar(rest[0][0])):
                counts, displs = rest[0]
            elif isinstance(rest[0], (list, tuple, np.ndarray)):
                counts = rest[0]
            elif rest[0] is not None:
                count = int(rest[0])
                if vector:
                    counts = count
        elif len(rest) == 2:
            counts, displs = rest
        if not vector and (counts is not None or displs is not None) and \
                np.isscalar(counts if counts is not None else 0) and \
                np.isscalar(displs if displs is not None else 0):
            # [buf, (count, displ), type]: a plain buffer from displ on
            if displs is not None:
                flat = flat[int(displs):]
            count = flat.size if counts is None else int(counts)
            counts = displs = None
        elif len(rest) > 2:
            raise ValueError('{}: buffer spec has too many items: '
                             '{!r}'.format(where, spec))
        if counts is not None:
            counts = int(counts) if np.isscalar(counts) else \
                [int(c) for c in counts]
        if displs is not None:
            displs = int(displs) if np.isscalar(displs) else \
                [int(d) for d in displs]
        if count > flat.size:
            raise ValueError('{}: count {} exceeds the buffer\'s {} '
                             'elements'.format(where, count, flat.size))
        return Buffer(flat, datatype, count, counts, displs)
    flat = _flat(spec, where)
    return Buffer(flat, from_dtype(flat.dtype), flat.size)


def parse_send(spec, where='buffer'):
    """Parse a collective's send buffer: as in mpi4py, None there means
    ``IN_PLACE``."""
    if spec is None:
        return Buffer(in_place=True)
    return parse(spec, where)


def parse_vector(spec, size, where='buffer', default_equal=True,
                 vector=False):
    """Parse a collective's buffer of ``size`` blocks; fill in counts and
    displs.

    Without counts the buffer splits into ``size`` blocks: equal ones
    (an error otherwise) for Gather and the like, and for the ``vector``
    variants (Gatherv...) as mpi4py splits it, the first ``count % size``
    blocks one element longer. Integer counts repeat per rank, integer
    displacements are strides; without displs, blocks are packed in rank
    order.
    """
    buf = parse(spec, where, vector=True)
    if buf is None or buf.in_place:
        return buf
    if buf.counts is None:
        if not default_equal:
            raise ValueError('{}: expected counts in the buffer '
                             'spec'.format(where))
        if buf.count % size and not vector:
            raise ValueError('{}: {} elements do not split into {} equal '
                             'blocks'.format(where, buf.count, size))
        buf.counts = [buf.count // size + (buf.count % size > i)
                      for i in range(size)]
    elif isinstance(buf.counts, int):
        buf.counts = [buf.counts] * size
    if isinstance(buf.displs, int):
        buf.displs = [buf.displs * i for i in range(size)]
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
