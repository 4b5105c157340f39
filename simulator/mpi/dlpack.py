"""Host memory exported through DLPack, read the way an MPI library does.

mpi4py accepts any object with ``__dlpack__`` as a message buffer and
hands MPI the tensor's data pointer; the simulator does the same: it reads
the capsule's ``DLManagedTensor`` (the DLPack C ABI, here as ``ctypes``
structures) and returns the tensor's ``(address, dtype, shape)``, so a
receive writes into the exporter's memory, never into a copy. (NumPy's
own ``from_dlpack`` returns read-only arrays and rejects some exporters.)
"""
import ctypes

import numpy as np

__all__ = ['dlpack_memory']


class _Device(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_uint), ('device_id', ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [('code', ctypes.c_uint8), ('bits', ctypes.c_uint8),
                ('lanes', ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [('data', ctypes.c_void_p), ('device', _Device),
                ('ndim', ctypes.c_int32), ('dtype', _DataType),
                ('shape', ctypes.POINTER(ctypes.c_int64)),
                ('strides', ctypes.POINTER(ctypes.c_int64)),
                ('byte_offset', ctypes.c_uint64)]


_CPU, _CUDA_HOST = 1, 3
# DLPack type codes -> NumPy kinds (int, uint, float, complex, bool)
_KINDS = {0: 'i', 1: 'u', 2: 'f', 5: 'c', 6: 'b'}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dlpack_memory(obj, where):
    """(address, dtype, shape) of ``obj``'s C-contiguous host tensor, and
    the capsule that keeps the export alive while the memory is used."""
    capsule = obj.__dlpack__()
    tensor = _Tensor.from_address(_get_pointer(capsule, b'dltensor'))
    if tensor.device.device_type not in (_CPU, _CUDA_HOST):
        raise TypeError('{}: DLPack device type {} is not host memory (the '
                        'simulator moves host buffers only)'.format(
                            where, tensor.device.device_type))
    code, bits, lanes = (tensor.dtype.code, tensor.dtype.bits,
                         tensor.dtype.lanes)
    kind = _KINDS.get(code)
    if kind == 'f' and lanes == 2:
        # long double complex travels as two-lane long double
        kind, bits, lanes = 'c', 2 * bits, 1
    if kind is None or lanes != 1:
        raise TypeError('{}: unsupported DLPack dtype (code {}, bits {}, '
                        'lanes {})'.format(where, code, bits, lanes))
    dtype = np.dtype('?') if kind == 'b' else \
        np.dtype('{}{}'.format(kind, bits // 8))
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        expected = 1
        for i in reversed(range(tensor.ndim)):
            if shape[i] != 1 and tensor.strides[i] != expected:
                raise ValueError('{}: DLPack tensor is not contiguous '
                                 '(shape {}, strides {})'.format(
                                     where, shape, [tensor.strides[j] for j
                                                    in range(tensor.ndim)]))
            expected *= shape[i]
    address = (tensor.data or 0) + tensor.byte_offset
    return address, dtype, shape, capsule
