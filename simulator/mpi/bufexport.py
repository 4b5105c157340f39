"""Python classes whose instances export the buffer protocol.

mpi4py's ``MPI.buffer``, ``BOTTOM`` and ``IN_PLACE`` are C objects that
export memory (``memoryview(MPI.buffer(...))``, ``memoryview(BOTTOM)``).
A Python class can do so only from CPython 3.12 (``__buffer__``); on 3.11
(this project's Python) the type's ``bf_getbuffer`` slot is the only way
in. Two ways to fill it, each set once on a class at import:

- ``delegate_buffer(cls)``: the instance exports the memory of the
  object held in its ``_view`` slot (a memoryview). The slot function is
  ``pickle.PickleBuffer``'s own C ``bf_getbuffer``, which forwards to
  the object stored where a PickleBuffer keeps its exporter; ``cls``
  lays that slot out at the same offset (checked here). No Python runs
  per export, errors (a writable view of read-only memory) are raised as
  the exporter raises them, and an export keeps the memoryview, hence
  the memory, alive however the instance changes afterwards.
- ``export_nothing(cls)``: the instance exports zero bytes owned by no
  object (``memoryview(BOTTOM).obj is None``), through a ctypes callback
  that cannot fail (a zero-length writable buffer satisfies any request).
"""
import ctypes
import pickle
import sys

__all__ = ['DelegatingExporter', 'delegate_buffer', 'export_nothing']

_BF_GETBUFFER = 1           # Py_bf_getbuffer (typeslots.h)
_PTR = ctypes.sizeof(ctypes.c_void_p)
# Offset of tp_as_buffer in PyTypeObject: the 21st pointer-sized field
# (ob_refcnt ... tp_setattro precede it), unchanged from 3.8 to 3.13.
_TP_AS_BUFFER = 20 * _PTR

# Own function objects (prototypes bound to the C API), so that nothing
# here changes the argtypes of the process-wide ctypes.pythonapi entries.
_GetSlot = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_int)(
    ('PyType_GetSlot', ctypes.pythonapi))
_FillInfo = ctypes.PYFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_ssize_t, ctypes.c_int, ctypes.c_int)(
        ('PyBuffer_FillInfo', ctypes.pythonapi))


class DelegatingExporter:
    """Base of ``delegate_buffer`` classes: ``_view`` sits where a
    PickleBuffer keeps its exporter (``Py_buffer.obj``, one pointer past
    the object header), ``_pad`` where it keeps ``Py_buffer.buf``.
    Slots are laid out in sorted name order."""

    __slots__ = ('_pad', '_view')


def _set_getbuffer(cls, function):
    """Store ``function`` (an address) as ``cls``'s bf_getbuffer."""
    if sys.implementation.name != 'cpython':
        raise ImportError('simulator.mpi exports buffers from Python '
                          'classes through CPython type slots')
    as_buffer = ctypes.c_void_p.from_address(id(cls) + _TP_AS_BUFFER).value
    # A heap type's buffer procs live inside its own type object.
    if not as_buffer or not id(cls) < as_buffer < id(cls) + \
            type(cls).__sizeof__(cls):
        raise ImportError('{}: unexpected type layout (tp_as_buffer)'
                          .format(cls.__name__))
    ctypes.c_void_p.from_address(as_buffer).value = function
    if _GetSlot(cls, _BF_GETBUFFER) != function:
        raise ImportError('{}: could not set bf_getbuffer'.format(
            cls.__name__))


def delegate_buffer(cls):
    """Class decorator: instances of ``cls`` (a DelegatingExporter
    subclass) export the memory of the memoryview in their ``_view``."""
    probe = cls.__new__(cls)
    marker = memoryview(b'')
    DelegatingExporter._view.__set__(probe, marker)
    if ctypes.c_void_p.from_address(id(probe) + 3 * _PTR).value != \
            id(marker):
        raise ImportError('{}: _view is not where PickleBuffer keeps its '
                          'exporter'.format(cls.__name__))
    _set_getbuffer(cls, _GetSlot(pickle.PickleBuffer,
                                            _BF_GETBUFFER))
    return cls


_GETBUFFER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int)


@_GETBUFFER
def _fill_nothing(exporter, view, flags):
    # readonly 0 and length 0: PyBuffer_FillInfo cannot fail
    return _FillInfo(view, None, None, 0, 0, flags)


def export_nothing(cls):
    """Class decorator: instances export zero writable bytes, owned by no
    object (as mpi4py's BOTTOM and IN_PLACE)."""
    _set_getbuffer(cls, ctypes.cast(_fill_nothing, ctypes.c_void_p).value)
    return cls
