"""pure_nccl: gradients packed in ``allreduce_grad_dtype``, one NCCL
allReduce, scaled by 1/size, unpacked (float16 compression when asked).

The same code drives CuPy arrays with ``cupy.cuda.nccl`` on GPUs and NumPy
arrays with an NCCL module that the communicator's MPI package ships beside
itself (``<package>.nccl``: ``simulator.nccl`` for ``simulator.mpi``;
mpi4py has none, so CuPy's is used); only the pointer of an array
(``.data.ptr`` vs ``.ctypes.data``) and the stream differ.
"""
import importlib

import chainer
import numpy

__all__ = ['PureNccl', 'nccl_module_for']

_CPU_NAMES = 'naive, flat, hierarchical, non_cuda_aware, dummy'


def nccl_module_for(mpi_comm):
    """The NCCL module for ``mpi_comm``; RuntimeError naming alternatives."""
    package = type(mpi_comm).__module__.split('.')[0]
    try:
        return importlib.import_module(package + '.nccl')
    except ImportError:
        pass
    try:
        from cupy.cuda import nccl
        return nccl
    except Exception as e:  # noqa: B902 -- any import failure: no NCCL
        raise RuntimeError(
            "the 'pure_nccl' communicator needs CuPy with NCCL ({}: {}); "
            'communicators that run without a GPU: {}'.format(
                type(e).__name__, e, _CPU_NAMES)) from e


def _pointer(array):
    if isinstance(array, numpy.ndarray):
        return array.ctypes.data
    return array.data.ptr


def _stream(xp):
    if xp is numpy:
        return 0
    return chainer.backends.cuda.Stream.null.ptr


class PureNccl:
    """The pure_nccl gradient strategy (state: NCCL comm, pack buffers)."""

    configs = {'allreduce_grad_dtype': None}

    def __init__(self, mpi_comm):
        self._nccl = nccl_module_for(mpi_comm)
        self._nccl_comm = None
        self._dtype = None
        self._buffers = {}

    def set_config(self, name, value):
        """Validate and keep ``allreduce_grad_dtype`` (a float dtype)."""
        if value is None:
            self._dtype = None
            return None
        dtype = numpy.dtype(value)
        if dtype.kind != 'f':
            raise ValueError('allreduce_grad_dtype must be float16, float32,'
                             ' float64 or None, got {}'.format(dtype))
        self._dtype = dtype
        return dtype

    def _comm(self, comm):
        if self._nccl_comm is None:
            uid = self._nccl.get_unique_id() if comm.rank == 0 else None
            uid = comm.bcast_obj(uid)
            self._nccl_comm = self._nccl.NcclCommunicator(comm.size, uid,
                                                          comm.rank)
        return self._nccl_comm

    def _type_id(self, dtype):
        return {numpy.dtype(numpy.float16): self._nccl.NCCL_FLOAT16,
                numpy.dtype(numpy.float32): self._nccl.NCCL_FLOAT32,
                numpy.dtype(numpy.float64): self._nccl.NCCL_FLOAT64}[
                    numpy.dtype(dtype)]

    def _buffer(self, xp, key, dtype, n):
        buf = self._buffers.get((xp, key, dtype))
        if buf is None or buf.size < n:
            buf = xp.empty(max(n, 1), dtype=dtype)
            self._buffers[(xp, key, dtype)] = buf
        return buf[:n]

    def mean(self, comm, grads):
        """Average ``grads`` over the ranks with one NCCL allReduce."""
        nccl_comm = self._comm(comm)
        dtype = self._dtype if self._dtype is not None \
            else numpy.dtype(chainer.get_dtype())
        xp = chainer.backend.get_array_module(grads[0])
        n = sum(g.size for g in grads)
        send = self._buffer(xp, 'a', dtype, n)
        recv = self._buffer(xp, 'b', dtype, n)
        offset = 0
        for g in grads:
            send[offset:offset + g.size] = g.reshape(-1)
            offset += g.size
        nccl_comm.allReduce(_pointer(send), _pointer(recv), n,
                            self._type_id(dtype), self._nccl.NCCL_SUM,
                            _stream(xp))
        recv *= dtype.type(1.0 / comm.size)
        offset = 0
        for g in grads:
            g[...] = recv[offset:offset + g.size].reshape(g.shape)
            offset += g.size

    def bcast_arrays(self, comm, arrays):
        """bcast_data through NCCL: one bcast per dtype, from rank 0."""
        if not arrays:
            return
        nccl_comm = self._comm(comm)
        xp = chainer.backend.get_array_module(arrays[0])
        groups = {}
        for a in arrays:
            groups.setdefault(a.dtype, []).append(a)
        for dtype, group in sorted(groups.items(), key=lambda kv: kv[0].str):
            n = sum(a.size for a in group)
            buf = self._buffer(xp, 'bcast', dtype, n)
            offset = 0
            for a in group:
                buf[offset:offset + a.size] = a.reshape(-1)
                offset += a.size
            nccl_comm.bcast(_pointer(buf), n, self._type_id(dtype), 0,
                            _stream(xp))
            offset = 0
            for a in group:
                a[...] = buf[offset:offset + a.size].reshape(a.shape)
                offset += a.size

    def free(self, comm):
        """Destroy the NCCL communicator (after every rank got here)."""
        if self._nccl_comm is not None:
            comm.mpi_comm.Barrier()
            self._nccl_comm.destroy()
            self._nccl_comm = None
