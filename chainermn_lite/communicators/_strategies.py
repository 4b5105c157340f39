"""Gradient strategies: what differs between ``naive``, ``flat``, ...

``MpiCommunicator`` is written once; the only thing that differs between
the communicators is its gradient strategy, an object with the interface of
``GradientStrategy`` below. The communicator calls it with a
``StrategyContext``: everything a strategy may use of its communicator
(the mpi4py-like comm, its MPI module, rank, size and node layout), so a
strategy never reads the communicator's private state.

The MPI strategies share one idea: grads are grouped into flat "work
vectors" (big C-contiguous grads stand for themselves, small ones are
packed into one persistent buffer per dtype, float16 travels as float32
because MPI has no half type) and a strategy only says how one work vector
is reduced. Each rank scales its own contribution by 1/size *before* the
sum (packed grads while they are packed, big ones piece by piece just
before their Allreduce): after a shared-memory Allreduce the result lies
in the other core's cache, and scaling it there cost ~0.9 ms per 4 MiB
against ~0.08 ms for data this rank has just read (ResNet-50 shapes,
mpiexec -n 2: 1.78x the raw chunked Allreduce scaling after, 1.12x
before). Vectors are reduced in ``CHUNK_BYTES`` pieces, so that Open MPI
reuses its temporary instead of page-faulting a fresh one for a huge
message, and so that a scaled piece is still in cache when it is sent.
"""
import functools
import types

import numpy

from chainermn_lite import _packing

__all__ = ['CHUNK_BYTES', 'DIRECT_MIN_BYTES', 'StrategyContext',
           'GradientStrategy', 'Naive', 'Flat', 'Hierarchical', 'Dummy',
           'NonCudaAware']

# 1 MiB: a chunk scaled just before its Allreduce is still in L2 (2 MiB
# here) when MPI reads it. ResNet-50 shapes, mpiexec -n 2, in turns, load
# 1.8 (2026-11-26): scale + Allreduce 1.37x / 1.29x / 1.25x / 1.29x /
# 1.45x the raw 4 MiB Allreduce at 256 KiB / 512 KiB / 1 / 2 / 4 MiB.
CHUNK_BYTES = 1024 * 1024
# Grads of at least 256 KiB are reduced where they lie (no copy); smaller
# ones are packed, so that the many tiny ones (biases, BN parameters) cost
# one collective call instead of one each. Measured under mpiexec -n 2 on
# ResNet-50's shapes (quiet machine): 64 KiB-1 MiB thresholds all give
# ~1.75x the raw chunked limit, 4 MiB (packing every conv weight, two
# extra copies of half the bytes) 2.3x; on the MLP, packing its 3 MB
# weight made flat 2.2x raw against 1.2x for direct.
DIRECT_MIN_BYTES = 256 * 1024


class StrategyContext:
    """What a gradient strategy may use of its communicator.

    ``mpi_comm`` (mpi4py-like), ``module`` (its MPI module: constants come
    from there), ``rank``, ``size``, ``layout`` (a
    ``_topology.NodeLayout``: intra/inter ranks and the node
    communicator) and ``owner`` (the communicator's class name, for
    errors).
    """

    __slots__ = ('mpi_comm', 'module', 'rank', 'size', 'layout', 'owner')

    def __init__(self, mpi_comm, module, layout, owner):
        self.mpi_comm = mpi_comm
        self.module = module
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self.layout = layout
        self.owner = owner


class GradientStrategy:
    """The interface ``MpiCommunicator`` calls, with working defaults.

    - ``GradientStrategy(mpi_comm)``: one instance per communicator
      (``split`` builds a new one for the new communicator).
    - ``mean_grad(ctx, arrays)``: replace every array by its mean over the
      ranks, in place. This base class has no mean: it raises
      NotImplementedError naming the communicator class (ChainerMN's
      ``MpiCommunicatorBase`` leaves the mean to subclasses).
    - ``mean_bucket(ctx, arrays)``: the means of ``arrays`` (one bucket of
      the ``overlap`` optimizer), as a list of arrays that may be new ones
      (the caller binds them to the params); by default ``mean_grad`` in
      place: the bits of the non-overlapped mean, and no copy of the big
      grads (packing whole buckets into fresh buffers cost a 100 MB copy
      per ResNet-50 step on the helper thread, which on 2 ranks per 2
      cores competes with backward for the same cores).
    - ``bcast_arrays(ctx, arrays, max_buf_len)``: give every rank rank 0's
      values of ``arrays``, in place (``bcast_data``); by default packed
      per dtype and broadcast with MPI in pieces of at most
      ``max_buf_len`` bytes.
    - ``configs``: the strategy's own settings and their defaults (a
      read-only mapping; none here); ``set_config(name, value)`` validates
      one and returns the value to store.
    - ``free(ctx)``: release what the strategy holds (``finalize``).
    """

    configs = types.MappingProxyType({})
    # MPI reads host memory only: device arrays come staged through the
    # host (see _host_staging); a strategy that takes them as they lie
    # (NCCL) says so here.
    device_arrays = False
    # Grads of this many bytes or more are reduced where they lie.
    direct_min_bytes = DIRECT_MIN_BYTES

    def __init__(self, mpi_comm=None):
        self._buffers = _packing.BufferPool()

    def mean_grad(self, ctx, arrays):
        """Replace every array in ``arrays`` by its mean over the ranks."""
        raise NotImplementedError(
            '{} has no gradient strategy: set strategy_factory or override '
            'multi_node_mean_grad'.format(ctx.owner))

    def mean_bucket(self, ctx, arrays):
        """The means of ``arrays`` over the ranks (a list; here the arrays
        themselves, averaged in place)."""
        self.mean_grad(ctx, arrays)
        return list(arrays)

    def bcast_arrays(self, ctx, arrays, max_buf_len):
        """Overwrite ``arrays`` with rank 0's values, on every rank.

        The messages depend on the arrays' dtypes and sizes only, never on
        where the arrays lie (so ranks need not agree on that first): per
        dtype, in order of first appearance, one Bcast (per
        ``max_buf_len`` bytes) of that dtype's arrays end to end. A lone
        contiguous array (a ``GradArena``'s flat buffer) goes as it lies,
        others through a packed copy.
        """
        def bcast(buf):
            view = buf.view(numpy.uint8)
            for start in range(0, view.size, max_buf_len):
                ctx.mpi_comm.Bcast(view[start:start + max_buf_len], root=0)

        is_root = ctx.rank == 0
        groups = {}
        for a in arrays:
            groups.setdefault(a.dtype, []).append(a)
        for dtype, group in groups.items():
            copy = False
            if len(group) == 1 and group[0].flags.c_contiguous:
                buf = group[0].reshape(-1)
            else:
                # Not pooled: a model-sized buffer for a call made once.
                buf = numpy.empty(_packing.packed_size(group), dtype)
                copy = True
                if is_root:
                    _packing.pack(group, buf)
            bcast(buf)
            if copy and not is_root:
                _packing.unpack(buf, group)

    def set_config(self, name, value):
        """Validate the strategy's config ``name``; the value to store."""
        raise ValueError('Unknown config: {!r}; known: {}'.format(
            name, sorted(self.configs)))

    def free(self, ctx):
        """Release what the strategy holds; nothing here."""

    def _over_work_vectors(self, arrays, vector_op, direct_min_bytes,
                           pack_scale=None):
        """Run ``vector_op(vec)`` on work vectors covering ``arrays`` and
        write the results back (float16 widened to float32).

        With ``pack_scale`` packed arrays are scaled as they are packed and
        reduced with ``vector_op(vec, scale=False)``; the op scales the
        others itself (``scale=True``).
        """
        direct, packed = [], {}
        for g in arrays:
            if (g.dtype == _wire_dtype(g.dtype) and g.flags.c_contiguous
                    and g.nbytes >= direct_min_bytes):
                direct.append(g.reshape(-1))
            else:
                packed.setdefault(_wire_dtype(g.dtype), []).append(g)
        buffers = []
        for dtype, group in packed.items():
            buf = self._buffers.get(dtype, _packing.packed_size(group))
            _packing.pack(group, buf, pack_scale)
            buffers.append((buf, group))
        for buf, _ in buffers:
            vector_op(buf, scale=pack_scale is None)
        for vec in direct:
            vector_op(vec)
        for buf, group in buffers:
            _packing.unpack(buf, group)


def _wire_dtype(dtype):
    return numpy.dtype(numpy.float32) if dtype == numpy.float16 else dtype


def _chunks(vec):
    step = max(1, CHUNK_BYTES // vec.itemsize)
    for start in range(0, vec.size, step):
        yield vec[start:start + step]


def _allreduce_mean(ctx, vec, scale):
    """Chunked in-place Allreduce of ``vec`` over the whole comm, each
    chunk scaled by 1/size first when ``scale``."""
    mpi_comm, module = ctx.mpi_comm, ctx.module
    inv = vec.dtype.type(1.0 / ctx.size)
    for chunk in _chunks(vec):
        if scale:
            numpy.multiply(chunk, inv, out=chunk)
        mpi_comm.Allreduce(module.IN_PLACE, chunk, op=module.SUM)


class Flat(GradientStrategy):
    """Packed grads, chunked in-place Allreduce over the whole comm."""

    def _reduce(self, ctx, vec, scale=True):
        """Average the flat ``vec`` in place (scaling it first when
        ``scale``): the one thing the MPI strategies do differently."""
        _allreduce_mean(ctx, vec, scale)

    def mean_grad(self, ctx, arrays):
        """Replace every array in ``arrays`` by its mean over the ranks."""
        self._over_work_vectors(arrays, functools.partial(self._reduce, ctx),
                                self.direct_min_bytes,
                                pack_scale=1.0 / ctx.size)


class NonCudaAware(Flat):
    """On host arrays the non-CUDA-aware path is the flat one."""


class Naive(Flat):
    """One Allreduce per gradient array, no packing."""

    direct_min_bytes = 0


class Dummy(GradientStrategy):
    """Pack and unpack gradients but never communicate (to measure the
    rest); ``bcast_data`` still broadcasts."""

    def mean_grad(self, ctx, arrays):
        """Pack and unpack ``arrays``, leaving their values as they are."""
        self._over_work_vectors(arrays, _no_op, self.direct_min_bytes)


def _no_op(vec, scale=True):
    pass


class Hierarchical(Flat):
    """Reduce within a node, allreduce among node leaders, bcast in node.

    Only one rank per node crosses the network, which pays off when
    ranks per node > 1 and nodes > 1; on one node (or one rank per node)
    it is the flat allreduce.
    """

    def __init__(self, mpi_comm=None):
        super().__init__(mpi_comm)
        self._leaders = None

    def _leader_comm(self, ctx):
        if self._leaders is None:
            color = 0 if ctx.layout.intra_rank == 0 else ctx.module.UNDEFINED
            self._leaders = ctx.mpi_comm.Split(color, ctx.rank)
        return self._leaders

    def _reduce(self, ctx, vec, scale=True):
        layout = ctx.layout
        if layout.inter_size == 1 or layout.intra_size == 1:
            _allreduce_mean(ctx, vec, scale)
        else:
            self._reduce_in_levels(ctx, vec, scale)

    def _reduce_in_levels(self, ctx, vec, scale):
        module = ctx.module
        intra = ctx.layout.intra_comm
        leaders = self._leader_comm(ctx)
        is_leader = ctx.layout.intra_rank == 0
        inv = vec.dtype.type(1.0 / ctx.size)
        for chunk in _chunks(vec):
            if scale:
                numpy.multiply(chunk, inv, out=chunk)
            if is_leader:
                intra.Reduce(module.IN_PLACE, chunk, op=module.SUM, root=0)
                leaders.Allreduce(module.IN_PLACE, chunk, op=module.SUM)
            else:
                intra.Reduce(chunk, None, op=module.SUM, root=0)
            intra.Bcast(chunk, root=0)

    def free(self, ctx):
        """Release the leaders' communicator."""
        if self._leaders is not None:
            if self._leaders != ctx.module.COMM_NULL:
                self._leaders.Free()
            self._leaders = None
