"""``MPI.buffer`` (alias ``MPI.memory``): a writable byte buffer object.

mpi4py hands such objects out where MPI gives memory: out-of-band pickle
buffers (``MPI.pickle.dumps_oob``), receive buffers that
``mpi4py.util.pkl5`` allocates (``buffer.allocate``). Here a buffer is a
one-dimensional ``uint8`` NumPy array subclass: it exports the buffer
protocol (``memoryview(buf)``, ``pickle.loads(..., buffers=[buf])``),
wraps other memory without copying, and slices to buffers.

A minimal version (the part ``pkl5`` and ``MPI.pickle`` use); the full
``MPI.buffer`` belongs to the datatype/memory work on the facade.
"""
import ctypes
import operator

import numpy as np

from simulator.mpi.msgspec import exported_memory

__all__ = ['buffer', 'memory', 'Aint_add', 'Aint_diff']


_EMPTY = object()      # buffer(): no memory (buffer(None) is an error)


def _check_exporter(obj, what):
    """TypeError for what exports no memory (None, numbers, lists), as
    mpi4py's; device memory (DLPack, CUDA array interface) is memory."""
    if isinstance(obj, (np.ndarray, bytes, bytearray, memoryview)) or \
            hasattr(obj, '__dlpack__') or \
            hasattr(obj, '__cuda_array_interface__'):
        return
    try:
        memoryview(obj)
    except TypeError:
        raise TypeError('{}: {!r} does not export memory (the buffer '
                        'protocol, DLPack or the CUDA array interface)'
                        .format(what, type(obj).__name__)) from None


class buffer(np.ndarray):  # noqa: N801 -- mpi4py's name
    """Bytes of memory, as mpi4py's ``MPI.buffer``."""

    __module__ = 'simulator.mpi'

    def __new__(cls, buf=_EMPTY):
        if buf is _EMPTY:
            return np.empty(0, np.uint8).view(cls)
        _check_exporter(buf, 'MPI.buffer')
        if isinstance(buf, buffer):
            return buf.view(cls)
        array, device = exported_memory(buf, 'MPI.buffer')
        out = array.reshape(-1).view(cls)
        out._device = device
        return out

    def __array_finalize__(self, obj):
        # views of device memory stay device memory
        self._device = getattr(obj, '_device', False)

    def _host(self, what):
        if self._device:
            raise BufferError('buffer: {} of device memory (not '
                              'CPU-accessible)'.format(what))

    def __setitem__(self, item, value):
        self._host('writing')
        if not self.flags.writeable:
            raise TypeError('buffer is read-only')
        if isinstance(value, (bytes, bytearray, memoryview)) or (
                not isinstance(value, (int, np.ndarray)) and
                hasattr(value, 'buffer_info')):
            # bytes-like values are bytes to copy, as into a memoryview
            value = np.frombuffer(memoryview(value).cast('B'), np.uint8)
        super().__setitem__(item, value)

    def tobytes(self, order=None):
        """The bytes (``order`` is accepted and ignored, as for bytes)."""
        self._host('tobytes')
        return bytes(memoryview(np.ascontiguousarray(self).view(np.uint8)))

    @classmethod
    def allocate(cls, nbytes, clear=False):
        """``nbytes`` of new memory (zeroed if ``clear``)."""
        if not isinstance(nbytes, int):
            raise TypeError('buffer.allocate: nbytes must be an int, got '
                            '{!r}'.format(nbytes))
        if nbytes < 0:
            raise ValueError('buffer.allocate: nbytes {} must be >= '
                             '0'.format(nbytes))
        array = np.zeros(nbytes, np.uint8) if clear else \
            np.empty(nbytes, np.uint8)
        return array.view(cls)

    @classmethod
    def frombuffer(cls, obj, readonly=False):
        """A buffer over ``obj``'s memory (no copy)."""
        _check_exporter(obj, 'buffer.frombuffer')
        buf = cls(obj)
        if readonly:
            buf.flags.writeable = False
        return buf

    @classmethod
    def fromaddress(cls, address, nbytes, readonly=False):
        """A buffer over ``nbytes`` at ``address`` (no copy)."""
        if nbytes and not address:
            raise ValueError('buffer.fromaddress: NULL address with '
                             '{} bytes'.format(nbytes))
        raw = (ctypes.c_ubyte * nbytes).from_address(address) if nbytes \
            else bytearray()
        return cls.frombuffer(raw, readonly)

    @property
    def address(self):
        """The address of the first byte."""
        return self.__array_interface__['data'][0]

    @property
    def obj(self):
        """The object whose memory this is (for allocated memory, the
        array that owns it; None for ``buffer()``)."""
        base = self.base
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        return base

    @property
    def readonly(self):
        """True when the memory may not be written."""
        return not self.flags.writeable

    @property
    def format(self):
        """The struct format of an item: bytes."""
        return 'B'

    def toreadonly(self):
        """A read-only buffer over the same memory."""
        view = self.view(type(self))
        view.flags.writeable = False
        return view

    def release(self):
        """Accepted: the memory lives as long as its owner."""

    def cast(self, format, shape=None):  # noqa: A002 -- mpi4py's name
        """A memoryview of the bytes as ``format`` items."""
        self._host('cast')
        view = memoryview(self)
        return view.cast(format) if shape is None else \
            view.cast(format, shape)

    def __bool__(self):
        return self.nbytes > 0

    def __reduce__(self):
        return (type(self), (self.tobytes(),))


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
