"""pure_nccl: gradients packed in ``allreduce_grad_dtype``, one NCCL
allReduce, scaled by 1/size, unpacked (float16 compression when asked).

The same code drives CuPy arrays with ``cupy.cuda.nccl`` on GPUs and NumPy
arrays with an NCCL module that the communicator's MPI package ships beside
itself (``<package>.nccl``: ``simulator.nccl`` for ``simulator.mpi``;
mpi4py has none, so CuPy's is used); only the pointer of an array
(``.data.ptr`` vs ``.ctypes.data``) and the stream differ.
"""
import importlib
import types

import chainer
import numpy

from chainermn_lite import _mpi
from chainermn_lite import _packing
from chainermn_lite.communicators import _object_collectives
from chainermn_lite.communicators import _strategies

__all__ = ['PureNccl', 'nccl_module_for']

_CPU_NAMES = 'naive, flat, hierarchical, non_cuda_aware, dummy'


def nccl_module_for(mpi_comm):
    """The NCCL module for ``mpi_comm``; RuntimeError naming alternatives."""
    # an NCCL beside the MPI module's package (the simulator's)
    package = _mpi.mpi_module_of(mpi_comm).__name__.split('.')[0]
    try:
        return importlib.import_module(package + '.nccl')
    except ImportError:
        pass
    try:
        from cupy.cuda import nccl
        return nccl
    except Exception as e:  # any import failure: no NCCL
        raise RuntimeError(
            "the 'pure_nccl' communicator needs CuPy with NCCL ({}: {}); "
            'communicators that run without a GPU: {}'.format(
                type(e).__name__, e, _CPU_NAMES)) from e


def _is_simulated(nccl):
    """True for an NCCL stand-in shipped beside a simulated MPI package
    (it reduces host memory: rank threads may share a GPU)."""
    return not nccl.__name__.startswith('cupy')


def _check_one_gpu_per_rank(ctx, bus=None):
    """ValueError on every rank when two ranks of the communicator would
    give NCCL one GPU (NCCL refuses, saying only 'invalid usage').
    ``bus``: this rank's GPU's PCI bus id (default: the current device's).
    """
    if bus is None:
        import cupy
        bus = cupy.cuda.runtime.deviceGetPCIBusId(cupy.cuda.Device().id)
    here = (ctx.module.Get_processor_name(), bus)
    owners = {}
    for rank, place in enumerate(ctx.mpi_comm.allgather(here)):
        owners.setdefault(place, []).append(rank)
    clashes = sorted((ranks, place) for place, ranks in owners.items()
                     if len(ranks) > 1)
    if clashes:
        ranks, (host, bus) = clashes[0]
        raise ValueError(
            "the 'pure_nccl' communicator needs a GPU per rank: ranks {} "
            'share the GPU at PCI {} on {}. Select one per rank before the '
            'first collective (e.g. chainer.cuda.get_device_from_id('
            'comm.intra_rank).use()), or use a communicator that stages '
            'GPU arrays through the host: naive, flat, hierarchical, '
            'non_cuda_aware'.format(', '.join(map(str, ranks)), bus, host))


def _pointer(array):
    if isinstance(array, numpy.ndarray):
        return array.ctypes.data
    return array.data.ptr


def _lone_flat(arrays, dtype):
    """A flat view of ``arrays``' one array when it can be reduced where
    it lies (C-contiguous, of ``dtype``), else None."""
    if len(arrays) == 1 and arrays[0].dtype == dtype and \
            arrays[0].flags.c_contiguous:
        return arrays[0].reshape(-1)
    return None


def _stream(xp):
    if xp is numpy:
        return 0
    return chainer.backends.cuda.Stream.null.ptr


class PureNccl(_strategies.GradientStrategy):
    """The pure_nccl gradient strategy (state: NCCL comm, pack buffers)."""

    configs = types.MappingProxyType({'allreduce_grad_dtype': None})
    device_arrays = True

    def __init__(self, mpi_comm):
        super().__init__(mpi_comm)
        self._nccl = nccl_module_for(mpi_comm)
        self.nccl_comm = None
        self._dtype = None

    def set_config(self, name, value):
        """Validate and keep ``allreduce_grad_dtype`` (a float dtype)."""
        if name != 'allreduce_grad_dtype':
            return super().set_config(name, value)
        if value is None:
            self._dtype = None
            return None
        dtype = numpy.dtype(value)
        if dtype.kind != 'f':
            raise ValueError('allreduce_grad_dtype must be float16, float32,'
                             ' float64 or None, got {}'.format(dtype))
        self._dtype = dtype
        return dtype

    def init_comm(self, ctx):
        """The NCCL communicator, created on first use (collective)."""
        if self.nccl_comm is None:
            uid = self._nccl.get_unique_id() if ctx.rank == 0 else None
            # A unique id is ~128 bytes: one piece, whatever max_buf_len.
            uid = _object_collectives.bcast_obj(ctx.mpi_comm, uid,
                                                _mpi.INT_MAX)
            if not _is_simulated(self._nccl):
                _check_one_gpu_per_rank(ctx)
            self.nccl_comm = self._nccl.NcclCommunicator(ctx.size, uid,
                                                         ctx.rank)
        return self.nccl_comm

    def _type_id(self, dtype):
        return {numpy.dtype(numpy.float16): self._nccl.NCCL_FLOAT16,
                numpy.dtype(numpy.float32): self._nccl.NCCL_FLOAT32,
                numpy.dtype(numpy.float64): self._nccl.NCCL_FLOAT64}[
                    numpy.dtype(dtype)]

    def mean_grad(self, ctx, arrays):
        """Average ``arrays`` over the ranks with one NCCL allReduce."""
        nccl_comm = self.init_comm(ctx)
        dtype = self._dtype if self._dtype is not None \
            else numpy.dtype(chainer.get_dtype())
        xp = chainer.backend.get_array_module(arrays[0])
        n = _packing.packed_size(arrays)
        lone = _lone_flat(arrays, dtype)
        if lone is not None:
            # Already the packed buffer (a GradArena's): reduced in place,
            # the same buffer and so the same sums as a packed copy.
            send = recv = lone
        else:
            send = self._buffers.get(dtype, n, 'send', xp)
            recv = self._buffers.get(dtype, n, 'recv', xp)
            _packing.pack(arrays, send)
        nccl_comm.allReduce(_pointer(send), _pointer(recv), n,
                            self._type_id(dtype), self._nccl.NCCL_SUM,
                            _stream(xp))
        recv *= dtype.type(1.0 / ctx.size)
        if lone is None:
            _packing.unpack(recv, arrays)

    def bcast_arrays(self, ctx, arrays, max_buf_len):
        """bcast_data through NCCL: one bcast per dtype, from rank 0
        (NCCL has no message size limit: ``max_buf_len`` is not used)."""
        if not arrays:
            return
        nccl_comm = self.init_comm(ctx)
        xp = chainer.backend.get_array_module(arrays[0])
        groups = {}
        for a in arrays:
            groups.setdefault(a.dtype, []).append(a)
        for dtype, group in sorted(groups.items(), key=lambda kv: kv[0].str):
            buf = lone = _lone_flat(group, dtype)
            if lone is None:
                buf = self._buffers.get(dtype, _packing.packed_size(group),
                                        'bcast', xp)
                _packing.pack(group, buf)
            nccl_comm.bcast(_pointer(buf), buf.size, self._type_id(dtype), 0,
                            _stream(xp))
            if lone is None:
                _packing.unpack(buf, group)

    def free(self, ctx):
        """Destroy the NCCL communicator (after every rank got here)."""
        if self.nccl_comm is not None:
            ctx.mpi_comm.Barrier()
            self.nccl_comm.destroy()
            self.nccl_comm = None
