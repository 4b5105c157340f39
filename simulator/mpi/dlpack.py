"""Host memory exported through DLPack, read the way mpi4py reads it.

mpi4py accepts any object with ``__dlpack__`` as a message buffer and
hands MPI the tensor's data pointer; the simulator does the same: it reads
the capsule's ``DLManagedTensorVersioned`` (DLPack 1.x) or
``DLManagedTensor`` (0.x) through ``ctypes`` and returns the tensor's
address, size in bytes and buffer format, so a receive writes into the
exporter's memory, never into a copy. The checks (version, shape,
strides, contiguity, read-only flag) and the format rules are mpi4py's.
"""
import ctypes
import operator
import sys

__all__ = ['dlpack_memory']


class _Device(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_int), ('device_id', ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [('code', ctypes.c_uint8), ('bits', ctypes.c_uint8),
                ('lanes', ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [('data', ctypes.c_void_p), ('device', _Device),
                ('ndim', ctypes.c_int32), ('dtype', _DataType),
                ('shape', ctypes.POINTER(ctypes.c_int64)),
                ('strides', ctypes.POINTER(ctypes.c_int64)),
                ('byte_offset', ctypes.c_uint64)]


class _Version(ctypes.Structure):
    _fields_ = [('major', ctypes.c_uint32), ('minor', ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [('version', _Version), ('manager_ctx', ctypes.c_void_p),
                ('deleter', ctypes.c_void_p), ('flags', ctypes.c_uint64),
                ('dl_tensor', _Tensor)]


_CPU, _CUDA_HOST = 1, 3
_READ_ONLY = 1
_INT, _UINT, _FLOAT, _COMPLEX, _BOOL = 0, 1, 2, 5, 6
_FORMATS = {
    (_BOOL, 8): '?',
    (_INT, 8): 'b', (_INT, 16): 'h', (_INT, 32): 'i', (_INT, 64): 'l',
    (_UINT, 8): 'B', (_UINT, 16): 'H', (_UINT, 32): 'I', (_UINT, 64): 'L',
    (_FLOAT, 16): 'e', (_FLOAT, 32): 'f', (_FLOAT, 64): 'd',
    (_FLOAT, 128): 'g',
    (_COMPLEX, 32): 'Ze', (_COMPLEX, 64): 'Zf', (_COMPLEX, 128): 'Zd',
    (_COMPLEX, 256): 'Zg'}

_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _format(dtype):
    """mpi4py's buffer format for a DLPack dtype ('B': raw bytes)."""
    code, bits, lanes = dtype.code, dtype.bits, dtype.lanes
    if lanes != 1:
        if code == _FLOAT and lanes == 2:
            return {32: 'Zf', 64: 'Zd', 128: 'Zg'}.get(bits, 'B')
        return 'B'
    return _FORMATS.get((code, bits), 'B')


def _contig(tensor, fortran):
    ndim = tensor.ndim
    if not tensor.strides:
        return not fortran or ndim <= 1
    size = 1
    dims = range(ndim) if fortran else range(ndim - 1, -1, -1)
    for i in dims:
        if tensor.shape[i] > 1 and tensor.strides[i] != size:
            return False
        size *= tensor.shape[i]
    return True


def _check(tensor):
    ndim = tensor.ndim
    if ndim < 0:
        raise BufferError('dlpack: number of dimensions is negative')
    if ndim > 0 and not tensor.shape:
        raise BufferError('dlpack: shape is NULL')
    for i in range(ndim):
        if tensor.shape[i] < 0:
            raise BufferError('dlpack: shape item is negative')
    if tensor.strides:
        for i in range(ndim):
            if tensor.strides[i] < 0:
                raise BufferError('dlpack: strides item is negative')
    if not _contig(tensor, False) and not _contig(tensor, True):
        raise BufferError('dlpack: buffer is not contiguous')


def _host_readable(device_type, where):
    """Device memory cannot be read here. Without a GPU library loaded
    (a module set to None is one blocked from loading) a 'device' tensor
    can only be host memory under another label, which MPI reads too."""
    if device_type in (_CPU, _CUDA_HOST):
        return
    loaded = [n for n in ('cupy', 'torch', 'jax', 'numba')
              if sys.modules.get(n) is not None]
    if loaded:
        raise BufferError('{}: DLPack device type {} is not host memory '
                          '(the simulator moves host buffers only)'.format(
                              where, device_type))


def dlpack_memory(obj, where):
    """(address, nbytes, format, readonly, capsule) of ``obj``'s tensor;
    the capsule keeps the export alive while the memory is used."""
    device_type, device_id = obj.__dlpack_device__()
    device_type = operator.index(device_type)
    operator.index(device_id)
    _host_readable(device_type, where)
    try:
        if device_type == _CPU:
            capsule = obj.__dlpack__(max_version=(1, 0), copy=False)
        else:
            capsule = obj.__dlpack__(stream=-1, max_version=(1, 0),
                                     copy=False)
        name = b'dltensor_versioned'
    except TypeError:
        capsule = obj.__dlpack__() if device_type == _CPU else \
            obj.__dlpack__(stream=-1)
        name = b'dltensor'
    if not _is_valid(capsule, name):
        raise BufferError('dlpack: invalid capsule object')
    pointer = _get_pointer(capsule, name)
    if name == b'dltensor_versioned':
        managed = _ManagedVersioned.from_address(pointer)
        if managed.version.major < 1:
            raise BufferError('dlpack: unexpected version')
        tensor = managed.dl_tensor
        readonly = bool(managed.flags & _READ_ONLY)
    else:
        tensor = _Tensor.from_address(pointer)
        readonly = False
    _check(tensor)
    size = 1
    for i in range(tensor.ndim):
        size *= tensor.shape[i]
    dtype = tensor.dtype
    nbytes = size * ((dtype.bits * dtype.lanes + 7) // 8)
    address = (tensor.data or 0) + tensor.byte_offset
    return address, nbytes, _format(dtype), readonly, capsule
