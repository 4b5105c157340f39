"""mpi4py's buffer specifications, parsed in one place.

A buffer spec is what mpi4py accepts as a message buffer: an object
exporting memory (buffer protocol, DLPack, CUDA array interface over host
memory), ``[buf, datatype]``, ``[buf, count, datatype]``,
``[buf, (count, displ), datatype]``, ``[buf, count, displ, datatype]``,
and for vector collectives ``[buf, counts, displs, datatype]``.
:func:`parse` turns one into a :class:`Buffer`: a flat NumPy array of the
data plus the counts to use, in elements of the datatype's base type.

A derived datatype whose elements are plain runs of memory moves as a
view. Any other derived datatype moves through its typemap: the send side
gathers the bytes into a packed copy, a receive scatters them back with
:meth:`Buffer.flush` (the calls that support it say so with
``packed=True``: p2p, Bcast, gathers, scatters, all-to-alls; a
reduction's receive buffer raises NotSimulated).
"""
import ctypes
import operator
import warnings

import numpy as np

from simulator.mpi.constants import (ERR_TYPE, PROC_NULL, BottomType,
                                     InPlaceType)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.datatypes import DATATYPE_NAMES, TYPECODES, Datatype
from simulator.mpi.dlpack import dlpack_memory
from simulator.mpi.naming import describe
from simulator.mpi.unsupported import NotSimulated

__all__ = ['Buffer', 'parse', 'parse_p2p', 'parse_send', 'parse_vector',
           'raw_bytes', 'packed_bytes', 'unpack_into', 'WBuffer',
           'exported_memory', 'held_bytes', 'still_holds']


def held_bytes(memory):
    """A copy of ``memory`` (an array a pending call must leave alone)
    byte for byte, as ``memory``'s dtype: NumPy copies a structured array
    field by field and leaves its padding undefined (MAXLOC's aligned
    pairs), which :func:`still_holds` would take for a write."""
    if not memory.flags.c_contiguous:
        return memory.copy()
    return memory.view(np.uint8).copy().view(memory.dtype)


def still_holds(memory, copy):
    """Whether ``memory`` holds the bytes of ``copy`` (its
    :func:`held_bytes` taken earlier): the program left it alone."""
    if not memory.flags.c_contiguous:
        return np.array_equal(memory, copy)
    mine = memory.reshape(-1).view(np.uint8)
    held = copy.reshape(-1).view(np.uint8)
    if mine.size % 8 == 0:
        # Eight bytes at a time: 40 us instead of 67 for 1 MiB.
        mine, held = mine.view(np.uint64), held.view(np.uint64)
    return np.array_equal(mine, held)


class Buffer:
    """A message buffer: flat array ``data`` and the parts to use.

    ``count`` elements for plain buffers; ``counts``/``displs`` (in
    elements) for vector collectives. ``in_place`` marks ``IN_PLACE``.
    """

    __slots__ = ('data', 'datatype', 'count', 'counts', 'displs',
                 'in_place', 'scatter')

    def __init__(self, data=None, datatype=None, count=0, counts=None,
                 displs=None, in_place=False):
        self.data = data
        self.datatype = datatype
        self.count = count
        self.counts = counts
        self.displs = displs
        self.in_place = in_place
        self.scatter = None     # (memory, byte offsets) of a packed copy

    def flush(self):
        """Write a packed copy back through the datatype's typemap (a
        no-op for buffers that are views of the memory)."""
        if self.scatter is not None:
            raw, index = self.scatter
            raw[index] = self.data.view(np.uint8)

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


def _at_address(address, nbytes, readonly, where):
    """A byte array over memory someone else owns (what MPI does with a
    DLPack or ``__cuda_array_interface__`` pointer to host memory)."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    if not address:
        raise ValueError('{}: buffer has a null address'.format(where))
    raw = (ctypes.c_char * nbytes).from_address(address)
    arr = np.frombuffer(raw, dtype=np.uint8)
    if readonly:
        arr.flags.writeable = False
    return arr


def _contig(shape, strides, itemsize, fortran):
    """True when ``strides`` lay ``shape`` out densely in C (or F)
    order."""
    size = itemsize
    dims = range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)
    for i in dims:
        if shape[i] > 1 and strides[i] != size:
            return False
        size *= shape[i]
    return True


# CUDA array interface / DLPack type kinds -> buffer format characters
_KIND_FORMATS = {('b', 1): '?'}
for _kind, _sizes in (('i', 'bhilq'), ('u', 'BHILQ')):
    for _c in _sizes:
        _KIND_FORMATS.setdefault((_kind, np.dtype(_c).itemsize), _c)
for _c in 'efdg':
    _KIND_FORMATS[('f', np.dtype(_c).itemsize)] = _c
for _c, _z in (('F', 'Zf'), ('D', 'Zd'), ('G', 'Zg')):
    _KIND_FORMATS[('c', np.dtype(_c).itemsize)] = _z


def _cai_memory(obj, writable, where):
    """Memory and format of a ``__cuda_array_interface__`` exporter, with
    mpi4py's checks."""
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError('{}: __cuda_array_interface__ must be a dict, got '
                        '{}'.format(where, type(cai).__name__))
    data, typestr, shape = cai['data'], cai['typestr'], cai['shape']
    strides, descr = cai.get('strides'), cai.get('descr')
    if not isinstance(data, tuple):
        raise TypeError('{}: __cuda_array_interface__ data must be a tuple'
                        .format(where))
    if not isinstance(typestr, str):
        raise TypeError('{}: __cuda_array_interface__ typestr must be a str'
                        .format(where))
    if not isinstance(shape, tuple):
        raise TypeError('{}: __cuda_array_interface__ shape must be a tuple'
                        .format(where))
    if strides is not None and not isinstance(strides, tuple):
        raise TypeError('{}: __cuda_array_interface__ strides must be a '
                        'tuple'.format(where))
    if descr is not None and not isinstance(descr, list):
        raise TypeError('{}: __cuda_array_interface__ descr must be a list'
                        .format(where))
    if len(data) != 2:
        raise ValueError('{}: __cuda_array_interface__ data must be '
                         '(pointer, read-only flag), got {!r}'.format(
                             where, data))
    address, readonly = data
    size = 1
    for n in shape:
        size *= n
    if address is None and size == 0:
        address = 0
    if not isinstance(address, int):
        raise TypeError('{}: __cuda_array_interface__ pointer must be an '
                        'int'.format(where))
    order, kind = typestr[0:1], typestr[1:2]
    itemsize = int(typestr[2:])
    fmt = _KIND_FORMATS.get((kind, itemsize), 'B')
    if order == ('>' if np.little_endian else '<'):
        raise BufferError('__cuda_array_interface__: typestr {!r} with '
                          'non-native byte order'.format(typestr))
    if order not in '<>|':
        raise BufferError('__cuda_array_interface__: typestr {!r} with '
                          'unrecognized byte order'.format(typestr))
    if cai.get('mask') is not None:
        raise BufferError('__cuda_array_interface__: cannot handle masked '
                          'arrays')
    if size < 0:
        raise BufferError('__cuda_array_interface__: buffer with negative '
                          'size (shape:{})'.format(shape))
    if strides is not None and not _contig(shape, strides, itemsize, False) \
            and not _contig(shape, strides, itemsize, True):
        raise BufferError('__cuda_array_interface__: buffer is not '
                          'contiguous (shape:{}, strides:{})'.format(
                              shape, strides))
    if readonly and writable:
        raise BufferError('__cuda_array_interface__: buffer is not '
                          'writable')
    if descr is not None and (len(descr) != 1 or
                              tuple(descr[0]) != ('', typestr)):
        warnings.warn("__cuda_array_interface__: ignoring 'descr' key",
                      RuntimeWarning, stacklevel=4)
    return _at_address(address, size * itemsize, readonly, where), fmt


def _buffer_memory(obj, writable, where):
    """Memory and format of a buffer-protocol exporter."""
    mem = memoryview(obj)
    if not (mem.c_contiguous or mem.f_contiguous):
        raise BufferError('{}: buffer is not contiguous'.format(where))
    if writable and mem.readonly:
        raise BufferError('{}: buffer is not writable'.format(where))
    fmt = mem.format
    if mem.nbytes == 0:
        return np.empty(0, np.uint8), fmt
    raw = np.frombuffer(mem if mem.c_contiguous and mem.ndim <= 1
                        else mem.cast('B') if mem.c_contiguous
                        else memoryview(np.asarray(mem).ravel(order='F')
                                        .view(np.uint8)),
                        dtype=np.uint8)
    return raw, fmt


def _memory(obj, writable, where):
    """(bytes of ``obj`` as a flat uint8 array, buffer format string)."""
    if type(obj) is np.ndarray or isinstance(obj, np.ndarray):
        if obj.dtype.kind in 'OMm':
            _refuse_kind(obj.dtype)
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            raise BufferError('{}: ndarray is not contiguous (shape {}, '
                              'strides {})'.format(where, obj.shape,
                                                   obj.strides))
        if writable and not obj.flags.writeable:
            raise BufferError('{}: ndarray is not writable'.format(where))
        order = 'F' if obj.flags.f_contiguous and \
            not obj.flags.c_contiguous else 'C'
        flat = obj.reshape(-1, order=order)
        return flat.view(np.uint8) if flat.size else \
            np.empty(0, np.uint8), _format_of(obj.dtype)
    try:
        return _buffer_memory(obj, writable, where)
    except TypeError:
        pass
    if hasattr(obj, '__dlpack__'):
        address, nbytes, fmt, readonly, _keep = dlpack_memory(obj, where)
        if readonly and writable:
            raise BufferError('dlpack: buffer is not writable')
        return _at_address(address, nbytes, readonly, where), fmt
    if hasattr(obj, '__cuda_array_interface__'):
        return _cai_memory(obj, writable, where)
    raise TypeError('{}: expected a buffer (an object exporting its '
                    'memory, e.g. a NumPy array), got {!r}'.format(
                        where, type(obj).__name__))


def _refuse_kind(dtype):
    """mpi4py's refusal of an array of objects (its buffer's format maps
    to no datatype) or of datetimes (NumPy exports no buffer for them, and
    DLPack none either)."""
    if dtype.kind == 'O':
        raise KeyError("cannot map 'O' to MPI datatype")
    raise BufferError('DLPack only supports signed/unsigned integers, '
                      'float and complex dtypes.')


def _format_of(dtype):
    """The buffer format string NumPy gives ``dtype``."""
    if dtype.byteorder == ('>' if np.little_endian else '<'):
        return dtype.byteorder + dtype.char
    if dtype.kind == 'S':
        return '{}s'.format(dtype.itemsize)
    if dtype.kind == 'U':
        return '{}w'.format(dtype.itemsize // 4)
    if dtype.kind == 'c':
        return 'Z' + np.dtype(dtype.char.lower()).char
    if dtype.fields or dtype.kind == 'V':
        return memoryview(np.empty(1, dtype)).format    # 'T{...}', '8x'
    return dtype.char


def _datatype_of_format(fmt):
    """mpi4py's datatype for a buffer format: 'B' is MPI_BYTE, the rest
    by mpi4py's type codes once the byte order is checked."""
    if fmt == 'B':
        return _BYTE
    if fmt[:1] in '@=':
        fmt = fmt[1:]
    elif fmt[:1] in '<>':
        if fmt[:1] != ('<' if np.little_endian else '>'):
            raise BufferError('format string {!r} with non-native byte '
                              'order'.format(fmt))
        fmt = fmt[1:]
    found = TYPECODES.get(fmt)
    if found is None:
        raise KeyError('cannot map {!r} to MPI datatype'.format(fmt))
    return found


def _datatype_of(dt):
    if isinstance(dt, Datatype):
        return dt
    if isinstance(dt, str):
        found = TYPECODES.get(dt)
        if found is None:
            raise KeyError('cannot map {!r} to MPI datatype'.format(dt))
        return found
    raise KeyError('cannot map {!r} to MPI datatype'.format(dt))


def _is_datatype(obj):
    return isinstance(obj, (Datatype, str))


def _has_memory(obj):
    if isinstance(obj, (np.ndarray, bytes, bytearray, memoryview)):
        return True
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _split(spec, vector):
    """mpi4py's reading of a message: (buffer, count(s), displ(s),
    datatype), each None when not given."""
    if isinstance(spec, (list, tuple)):
        n = len(spec)
        counts = displs = dt = None
        pair = tuple if vector else (tuple, list)
        if n == 2:
            buf, counts = spec
            if _is_datatype(counts):
                counts, dt = None, counts
            elif isinstance(counts, pair):
                counts, displs = counts
        elif n == 3:
            buf, counts, dt = spec
            if isinstance(counts, pair):
                counts, displs = counts
        elif n == 4:
            buf, counts, displs, dt = spec
        else:
            raise ValueError('message: expecting 2 to 4 items')
        return buf, counts, displs, dt
    if _has_memory(spec) or hasattr(spec, '__dlpack__') or \
            hasattr(spec, '__cuda_array_interface__'):
        return spec, None, None, None
    raise TypeError('message: expecting buffer or list/tuple')


def _index(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError('message: {} must be an integer, got {!r}'.format(
            what, value)) from None


def _extent_for(datatype, why):
    if not datatype:
        raise ValueError('message: cannot {}, datatype is null'.format(why))
    lb, extent = datatype.Get_extent()
    if extent <= 0:
        raise ValueError('message: cannot {}, datatype extent {} (lb:{}, '
                         'ub:{})'.format(why, extent, lb, lb + extent))
    return extent


def _derived(raw, datatype, count, displ, where, packed):
    """A Buffer over ``count`` elements of ``datatype`` from element
    ``displ`` of the memory ``raw`` (None: as many as fit)."""
    lay = datatype._layout
    offset = displ * lay.extent
    if count is None:
        extent = _extent_for(datatype, 'infer count')
        count = (raw.size - offset) // extent
    dtype = datatype._dtype
    predefined = datatype.is_predefined
    if predefined or datatype._is_dense:
        # Predefined types move whole (padded) elements, like the NumPy
        # dtype they stand for; dense derived ones a run of base elements.
        step = lay.extent if predefined else lay.size
        data = raw[offset:offset + count * step]
        if data.size < count * step:
            raise ValueError('{}: count {} of {} ({} bytes each) exceeds the '
                             'buffer\'s {} bytes'.format(
                                 where, count, datatype.name or 'a derived '
                                 'datatype', step, raw.size - offset))
        if not step or not count:
            return Buffer(np.empty(0, dtype), datatype, 0)
        return Buffer(data.view(dtype), datatype,
                      count * (step // dtype.itemsize))
    index = lay.byte_index(count) + offset
    if index.size and (index.min() < 0 or index.max() >= raw.size):
        raise ValueError('{}: {} elements of the datatype reach bytes {}..{}'
                         ' outside the buffer\'s {} bytes'.format(
                             where, count, int(index.min()),
                             int(index.max()), raw.size))
    if not packed:
        raise NotSimulated('simulator.mpi: {}: a non-contiguous derived '
                           'datatype here is not simulated (it is in '
                           'point-to-point calls, send buffers, and the '
                           'receive buffers of Bcast, gathers, scatters and '
                           'all-to-alls)'.format(where))
    buf = Buffer(raw[index].view(dtype), datatype,
                 count * (lay.size // dtype.itemsize))
    buf.scatter = (raw, index)
    return buf


def parse(spec, where='buffer', vector=False, writable=False,
          packed=False):
    """Turn an mpi4py buffer spec into a :class:`Buffer` (or IN_PLACE).

    ``writable``: the buffer receives (read-only memory is refused);
    ``packed``: the caller flushes a packed copy (non-contiguous derived
    datatypes are allowed). In a ``vector`` spec (Gatherv...) integer
    counts and displacements stay integers: :func:`parse_vector` repeats
    them per rank.
    """
    if type(spec) is np.ndarray and spec.flags.c_contiguous and \
            (not writable or spec.flags.writeable) and \
            spec.dtype.char in _FAST and spec.dtype.isnative:
        flat = spec.reshape(-1)
        return Buffer(flat, _FAST[spec.dtype.char], flat.size)
    if isinstance(spec, InPlaceType):
        return Buffer(in_place=True)
    if spec is None:
        # A buffer where mpi4py wants one (a root's receive buffer...).
        raise TypeError('message: expecting buffer or list/tuple')
    obj, counts, displs, dt = _split(spec, vector)
    if obj is None or isinstance(obj, BottomType):
        # BOTTOM / None: no memory, only an empty message fits it
        raw = np.empty(0, np.uint8)
        datatype = _datatype_of(dt)
    else:
        raw, fmt = _memory(obj, writable, where)
        datatype = _datatype_of_format(fmt) if dt is None else \
            _datatype_of(dt)
    if datatype and not datatype.is_predefined:
        datatype._check_committed(where)
        # A handle of our own: the caller may Free its datatype while the
        # operation is pending, as MPI allows.
        datatype = Datatype(datatype)
    if vector:
        return _vector(raw, obj, counts, displs, datatype, where, packed)
    displ = 0
    if displs is not None:
        displ = _index(displs, 'displacement')
        if displ < 0:
            raise ValueError('message: negative displacement {}'.format(
                displ))
        if displ > 0:
            extent = _extent_for(datatype, 'handle displacement')
            if displ * extent > raw.size:
                raise ValueError('message: displacement {} out of bounds, '
                                 'number of datatype entries {}'.format(
                                     displ, raw.size // extent))
    count = None
    if counts is not None:
        count = _index(counts, 'count')
        if count < 0:
            raise ValueError('message: negative count {}'.format(count))
        if count > 0 and obj is None:
            raise ValueError('message: buffer is None but count is {}'
                             .format(count))
    elif raw.size - displ * (datatype.extent if displ else 0) > 0:
        extent = _extent_for(datatype, 'infer count')
        length = raw.size - displ * extent
        if length % extent:
            raise ValueError('message: cannot infer count, buffer length {} '
                             'is not a multiple of datatype extent {}'
                             .format(length, extent))
    else:
        count = 0
    if not datatype:
        if count:
            # mpi4py passes it on; MPI refuses it.
            raise MPIException(ERR_TYPE, '{}: {} elements of '
                               'DATATYPE_NULL'.format(where, count))
        return Buffer(np.empty(0, np.uint8), datatype, 0)
    return _derived(raw, datatype, count, displ, where, packed)


_BYTE = DATATYPE_NAMES['BYTE']
# fast path: plain C-ordered arrays of these type characters
_FAST = {c: TYPECODES[c] for c in '?bhilqHILQefdg'}
_FAST['B'] = _BYTE
_FAST['F'] = TYPECODES['F']
_FAST['D'] = TYPECODES['D']
_FAST['G'] = TYPECODES['G']


def _vector(raw, obj, counts, displs, datatype, where, packed):
    """The vector form: counts / displs stay as given (ints or lists), in
    elements of the base type."""
    if not datatype:
        if raw.size:
            raise ValueError('message: cannot infer count, datatype is null')
        return Buffer(np.empty(0, np.uint8), datatype, 0, counts, displs)
    extent = _extent_for(datatype, 'infer count') if raw.size else \
        max(datatype.extent, 1)
    if raw.size % extent:
        raise ValueError('message: cannot infer count, buffer length {} is '
                         'not a multiple of datatype extent {}'.format(
                             raw.size, extent))
    count = raw.size // extent
    if not datatype._is_dense:
        # every element whose bytes lie in the buffer, packed in order:
        # element k's data then starts at k * per in the packed copy
        lay = datatype._layout
        if lay.true_lb < 0:
            raise ValueError('{}: the datatype reaches {} bytes before the '
                             'buffer'.format(where, -lay.true_lb))
        count = 0 if raw.size < lay.true_ub else \
            min(count, (raw.size - lay.true_ub) // extent + 1)
    buf = _derived(raw, datatype, count, 0, where, packed)
    per = datatype.size // datatype._dtype.itemsize if datatype.size else 1

    def scale(v):
        if v is None:
            return None
        if isinstance(v, (list, tuple)) or \
                isinstance(v, np.ndarray) and v.ndim:
            return [_index(x, 'count') * per for x in v]
        return _index(v, 'count') * per
    buf.counts, buf.displs = scale(counts), scale(displs)
    return buf


def parse_p2p(spec, peer, where, writable=False, packed=False):
    """mpi4py's reading of a point-to-point message for ``peer``: for
    PROC_NULL nothing is read (an empty message, whatever ``spec`` is);
    otherwise ``spec`` must be a buffer spec (None is not one)."""
    if isinstance(peer, (int, np.integer)) and peer == PROC_NULL:
        return Buffer(np.empty(0, np.uint8), _BYTE, 0)
    if spec is None:
        raise TypeError('message: expecting buffer or list/tuple')
    return parse(spec, where, writable=writable, packed=packed)


def parse_send(spec, where='buffer', writable=False):
    """Parse a collective's send buffer: as in mpi4py, None there means
    ``IN_PLACE`` (Scatter's receive buffer, ``writable``, too). A
    non-contiguous derived datatype gives a packed copy."""
    if spec is None:
        return Buffer(in_place=True)
    return parse(spec, where, writable=writable, packed=True)


def parse_vector(spec, size, where='buffer', default_equal=True,
                 vector=False, writable=False, packed=False):
    """Parse a collective's buffer of ``size`` blocks; fill in counts and
    displs.

    Without counts the buffer splits into ``size`` blocks: equal ones
    (an error otherwise) for Gather and the like, and for the ``vector``
    variants (Gatherv...) as mpi4py splits it, the first ``count % size``
    blocks one element longer. Integer counts repeat per rank, integer
    displacements are strides; without displs, blocks are packed in rank
    order.
    """
    if spec is None:
        raise TypeError('message: expecting buffer or list/tuple')
    buf = parse(spec, where, vector=True, writable=writable, packed=packed)
    if buf.in_place:
        return buf
    if buf.counts is None:
        if not default_equal:
            raise ValueError('{}: expected counts in the buffer '
                             'spec'.format(where))
        if size and buf.count % size and not vector:
            # mpi4py's words (where: the simulator's addition).
            raise ValueError('message: cannot infer count, number of '
                             'entries {} is not a multiple of required '
                             'number of blocks {} ({})'.format(
                                 buf.count, size, where))
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


def raw_bytes(obj, where, writable=False):
    """The bytes of a plain buffer (Pack's output, Unpack's input)."""
    return _memory(obj, writable, where)[0]


def packed_bytes(spec, where, datatype=None):
    """The packed bytes of a buffer spec's data (what Pack writes)."""
    buf = parse(spec, where, packed=True)
    return buf.head().view(np.uint8).reshape(-1).copy()


def unpack_into(spec, where, datatype, data, swapped=False):
    """Scatter packed ``data`` into the buffer ``spec``; return the bytes
    used."""
    buf = parse(spec, where, writable=True, packed=True)
    room = buf.head().view(np.uint8).reshape(-1)
    if room.size > data.size:
        raise ValueError('{}: {} packed bytes for a buffer of {}'.format(
            where, data.size, room.size))
    room[...] = data[:room.size]
    buf.flush()
    return room.size


class WBuffer:
    """An Alltoallw buffer: per-rank counts, byte displacements and
    datatypes over one memory, or over absolute addresses (``BOTTOM``
    with datatypes built from ``Get_address``)."""

    def __init__(self, spec, size, where, writable=False):
        if not isinstance(spec, (list, tuple)):
            raise TypeError('message: expecting list/tuple')
        n = len(spec)
        if n == 2:
            obj, types = spec
            counts = displs = None
        elif n == 3:
            obj, (counts, displs), types = spec
        elif n == 4:
            obj, counts, displs, types = spec
        else:
            raise ValueError('message: expecting 2 to 4 items')
        self.where, self.writable = where, writable
        if obj is None or isinstance(obj, BottomType):
            if counts is None:
                raise ValueError('message: BOTTOM requires counts')
            if displs is None:
                raise ValueError('message: BOTTOM requires displs')
            self.raw = None
        else:
            self.raw = _memory(obj, writable, where)[0]
        if counts is None and displs is None:
            counts, displs = [1] * size, [0] * size
        self.counts = _int_list(counts, size, 'counts')
        self.displs = _int_list(displs, size, 'displs')
        if isinstance(types, Datatype):
            types = [types] * size
        self.types = list(types)
        if len(self.types) != size:
            raise ValueError('message: expecting {} datatypes, got {}'
                             .format(size, len(self.types)))
        for t in self.types:
            if not isinstance(t, Datatype):
                raise TypeError('message: expecting Datatype, got {}'
                                .format(describe(t)))
        # read now: the caller may Free the datatypes while a
        # non-blocking Ialltoallw is pending
        self.layouts = [t._layout for t in self.types]

    def part(self, i):
        """Block ``i`` as a Buffer (``flush`` writes a received block)."""
        datatype, count, displ = self.types[i], self.counts[i], \
            self.displs[i]
        layout = self.layouts[i]
        if not count or not layout.size:
            return Buffer(np.empty(0, datatype._dtype or np.uint8), datatype,
                          0)
        index = layout.byte_index(count) + displ
        raw = self.raw
        if raw is None:
            # absolute addresses: the memory the typemap names
            low = int(index.min())
            raw = _at_address(low, int(index.max()) - low + 1,
                              not self.writable, self.where)
            index = index - low
        elif index.min() < 0 or index.max() >= raw.size:
            raise ValueError('{}: block {} ({} x {} at byte {}) lies outside '
                             'the buffer of {} bytes'.format(
                                 self.where, i, count, datatype.name or
                                 'a derived datatype', displ, raw.size))
        buf = Buffer(raw[index].view(datatype._dtype), datatype,
                     index.size // datatype._dtype.itemsize)
        buf.scatter = (raw, index)
        return buf

    def snapshot(self):
        """The blocks as they are now (what a send reads later)."""
        return _Frozen([self.part(i) for i in range(len(self.types))])


class _Frozen:
    """Copies of an Alltoallw send buffer's blocks."""

    def __init__(self, parts):
        self.parts = parts

    def part(self, i):
        return self.parts[i]

    def snapshot(self):
        return self


def _int_list(values, size, what):
    if values is None:
        raise TypeError('message: {} must be a sequence, got None'.format(
            what))
    out = [_index(v, what) for v in values]
    if len(out) != size:
        raise ValueError('message: expecting {} {}, got {}'.format(
            size, what, len(out)))
    return out


def exported_memory(obj, where):
    """(bytes of ``obj`` as a flat uint8 array, True when the exporter
    calls it device memory): what ``MPI.buffer`` wraps."""
    raw = _memory(obj, False, where)[0]
    device = False
    if not _has_memory(obj):
        if hasattr(obj, '__dlpack__'):
            device = obj.__dlpack_device__()[0] not in (1, 3)
        else:
            device = True       # the CUDA array interface
    return raw, device
