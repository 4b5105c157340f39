"""``MPI.buffer`` (alias ``MPI.memory``): bytes of memory, as mpi4py's.

mpi4py hands such objects out where MPI gives memory: ``Alloc_mem``,
out-of-band pickle buffers (``MPI.pickle.dumps_oob``), receive buffers
that ``mpi4py.util.pkl5`` allocates (``buffer.allocate``), a window's
memory. A buffer holds a one-dimensional byte view of another object's
memory (or of nothing: ``buffer()``), exports it through the buffer
protocol (``bufexport``), indexes and slices to bytes and buffers, and
``release()`` empties it in place (``Free_mem`` does so).

Memory an exporter calls device memory (DLPack, CUDA array interface) is
wrapped as mpi4py wraps it, and refuses CPU access (indexing, tobytes,
cast) with BufferError, as there.
"""
import ctypes
import operator

import numpy as np

from simulator.mpi.bufexport import DelegatingExporter, delegate_buffer
from simulator.mpi.msgspec import exported_memory

__all__ = ['buffer', 'memory', 'Aint_add', 'Aint_diff']


def _check_exporter(obj, what):
    """TypeError for what exports no memory (None, numbers, lists), as
    mpi4py's; device memory (DLPack, CUDA array interface) is memory."""
    if isinstance(obj, (np.ndarray, bytes, bytearray, memoryview,
                        buffer)) or \
            hasattr(obj, '__dlpack__') or \
            hasattr(obj, '__cuda_array_interface__'):
        return
    try:
        memoryview(obj)
    except TypeError:
        raise TypeError('{}: {!r} does not export memory (the buffer '
                        'protocol, DLPack or the CUDA array interface)'
                        .format(what, type(obj).__name__)) from None


def _bytes_of(obj, writable, what):
    """(flat uint8 array over ``obj``'s memory, device?, itemsize): the
    memory mpi4py's buffer takes from ``obj`` (one contiguous block)."""
    _check_exporter(obj, what)
    if isinstance(obj, buffer):
        if writable and obj.readonly:
            raise BufferError('{}: the buffer is read-only'.format(what))
        return obj._array, obj._device, obj._itemsize
    array, device = exported_memory(obj, what)
    if writable and not array.flags.writeable:
        raise BufferError('{}: {!r} is not writable'.format(
            what, type(obj).__name__))
    try:
        itemsize = memoryview(obj).itemsize
    except TypeError:           # DLPack / CUDA array interface only
        itemsize = 1
    return array.reshape(-1), device, itemsize


_NO_MEMORY = np.empty(0, np.uint8)


@delegate_buffer
class buffer(DelegatingExporter):  # noqa: N801 -- mpi4py's name
    """Bytes of memory, as mpi4py's ``MPI.buffer``: ``buffer()`` is no
    memory, ``buffer(obj)`` the memory ``obj`` exports (no copy)."""

    __module__ = 'simulator.mpi'
    # _view (DelegatingExporter): the exported memoryview of _array
    __slots__ = ('_array', '_obj', '_address', '_device', '_itemsize')

    def __init__(self, *args):
        if len(args) > 1:
            raise TypeError('buffer() takes at most 1 argument ({} '
                            'given)'.format(len(args)))
        if not args:
            self._wrap(_NO_MEMORY, None, 0)
            return
        array, device, itemsize = _bytes_of(args[0], False, 'MPI.buffer')
        self._wrap(array, args[0], None, device=device, itemsize=itemsize)

    def _wrap(self, array, obj, address, readonly=None, device=False,
              itemsize=1):
        """Hold ``array``'s bytes (``address`` None: where they are)."""
        if readonly and array.flags.writeable:
            array = array.view()
            array.flags.writeable = False
        self._array = array
        self._view = memoryview(array)
        self._obj = obj
        self._address = array.__array_interface__['data'][0] \
            if address is None else address
        self._device = device
        self._itemsize = itemsize

    @classmethod
    def _new(cls, *args, **kwargs):
        buf = cls.__new__(cls)
        buf._wrap(*args, **kwargs)
        return buf

    def __init_subclass__(cls, **kwargs):
        raise TypeError("type 'simulator.mpi.buffer' is not an acceptable "
                        "base type")

    @staticmethod
    def allocate(nbytes, clear=False):
        """Allocate ``nbytes`` of new memory (zeroed if ``clear``)."""
        if not isinstance(nbytes, int):
            raise TypeError('buffer.allocate: nbytes must be an int, got '
                            '{!r}'.format(nbytes))
        if nbytes < 0:
            raise ValueError('buffer.allocate: nbytes {} must be >= '
                             '0'.format(nbytes))
        owner = np.zeros(nbytes, np.uint8) if clear else \
            np.empty(nbytes, np.uint8)
        return buffer._new(owner, owner, None)

    @staticmethod
    def frombuffer(obj, readonly=False):
        """A buffer over ``obj``'s memory (no copy); unless ``readonly``
        the memory must be writable."""
        array, device, itemsize = _bytes_of(obj, not readonly,
                                            'buffer.frombuffer')
        return buffer._new(array, obj, None, readonly=bool(readonly),
                           device=device, itemsize=itemsize)

    @staticmethod
    def fromaddress(address, nbytes, readonly=False):
        """A buffer over ``nbytes`` at ``address`` (no copy)."""
        address = operator.index(address)
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError('buffer.fromaddress: nbytes {} must be >= '
                             '0'.format(nbytes))
        if nbytes and not address:
            raise ValueError('buffer.fromaddress: NULL address with '
                             '{} bytes'.format(nbytes))
        array = np.ctypeslib.as_array(
            (ctypes.c_ubyte * nbytes).from_address(address)) if nbytes \
            else _NO_MEMORY
        return buffer._new(array, None, address, readonly=bool(readonly))

    @property
    def address(self):
        """The address of the first byte (0 for no memory)."""
        return self._address

    @property
    def obj(self):
        """The object whose memory this is (None for ``buffer()``, a
        released buffer or one made from an address)."""
        return self._obj

    @property
    def nbytes(self):
        """The size in bytes."""
        return self._array.size

    @property
    def readonly(self):
        """True when the memory may not be written."""
        return not self._array.flags.writeable

    @property
    def format(self):
        """The struct format of an item: bytes."""
        return 'B'

    @property
    def itemsize(self):
        """The item size the exporter gave (1 for memory made here)."""
        return self._itemsize

    def _host(self):
        if self._device:
            raise BufferError('buffer is not CPU-accessible')

    def cast(self, format, shape=Ellipsis):  # noqa: A002 -- mpi4py's name
        """A memoryview of the bytes as ``format`` items (of ``shape``)."""
        self._host()
        view = memoryview(self)
        return view.cast(format) if shape is Ellipsis else \
            view.cast(format, shape)

    def tobytes(self, order=None):
        """The bytes (``order`` is accepted and ignored, as for bytes)."""
        self._host()
        return self._array.tobytes()

    def toreadonly(self):
        """A read-only buffer over the same memory, of the same object."""
        return buffer._new(self._array, self._obj, self._address,
                           readonly=True, device=self._device,
                           itemsize=self._itemsize)

    def release(self):
        """Let go of the memory: the buffer is empty from now on (views
        taken before keep theirs alive)."""
        self._wrap(_NO_MEMORY, None, 0)

    def __len__(self):
        return self._array.size

    def _slice(self, item):
        start, stop, step = item.indices(self._array.size)
        if step != 1:
            raise IndexError('slice with step not supported')
        return start, max(start, stop)

    def __getitem__(self, item):
        self._host()
        if isinstance(item, slice):
            start, stop = self._slice(item)
            return buffer._new(self._array[start:stop], self,
                               self._address + start,
                               device=self._device)
        index = self._index(item)
        return int(self._array[index])

    def _index(self, item):
        try:
            index = operator.index(item)
        except TypeError:
            raise TypeError('index must be integer or slice, got '
                            '{!r}'.format(item)) from None
        size = self._array.size
        if not -size <= index < size:
            raise IndexError('index {} out of range for {} bytes'.format(
                index, size))
        return index

    def __setitem__(self, item, value):
        self._host()
        if self.readonly:
            raise TypeError('buffer is read-only')
        if isinstance(item, slice):
            start, stop = self._slice(item)
            if _is_index(value):
                self._array[start:stop] = _byte(value)
                return
            data = _bytes_of(value, False, 'buffer slice assignment')[0]
            if data.size != stop - start:
                raise ValueError('slice length {} does not match buffer of '
                                 '{} bytes'.format(stop - start, data.size))
            self._array[start:stop] = data      # NumPy copies overlaps
            return
        self._array[self._index(item)] = _byte(value)

    def __delitem__(self, item):
        raise NotImplementedError('buffer: items cannot be deleted')

    def __reduce__(self):
        raise TypeError("cannot pickle 'mpi4py.MPI.buffer' object")


def _is_index(value):
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _byte(value):
    """``value`` as one byte (OverflowError outside 0..255, as C's
    unsigned char conversion in mpi4py)."""
    value = operator.index(value)
    if not 0 <= value <= 255:
        raise OverflowError('value {} does not fit in an unsigned '
                            'char'.format(value))
    return value


memory = buffer


def _address(value, what):
    # mpi4py converts to MPI_Aint as C does: a float is truncated
    if isinstance(value, float):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError('{} must be an integer (an address or '
                        'displacement), got {!r}'.format(what, value)) \
            from None


def Aint_add(base, disp):
    """The address ``disp`` bytes from ``base`` (MPI_Aint_add)."""
    return _address(base, 'Aint_add base') + _address(disp, 'Aint_add disp')


def Aint_diff(addr1, addr2):
    """The bytes from ``addr2`` to ``addr1`` (MPI_Aint_diff)."""
    return _address(addr1, 'Aint_diff addr1') - \
        _address(addr2, 'Aint_diff addr2')
