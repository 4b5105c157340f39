"""MpiCommunicator: ChainerMN's communicator API, once, over mpi4py's API.

It takes any mpi4py-like communicator (real ``mpi4py.MPI.Comm`` or the
simulator's) and a gradient strategy (``_strategies.GradientStrategy``);
the strategy is the only thing that differs between ``naive``, ``flat``,
``hierarchical``, ``non_cuda_aware``, ``dummy`` and ``pure_nccl``. What
goes on the wire (descriptors, frames, offsets) and the checks of peers,
roots and tags are ``_wire``'s; packing is ``_packing``'s.
"""
import functools

import chainer
import numpy

from chainermn_lite import _device
from chainermn_lite import _mpi
from chainermn_lite import _packing
from chainermn_lite import _wire
from chainermn_lite.communicators import _grads
from chainermn_lite.communicators import _host_staging
from chainermn_lite.communicators import _object_collectives as objects
from chainermn_lite.communicators import _p2p
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators import _topology
from chainermn_lite.communicators import _watchdog
from chainermn_lite.communicators.communicator_base import CommunicatorBase

__all__ = ['MpiCommunicator', 'DEFAULT_MAX_BUF_LEN']

DEFAULT_MAX_BUF_LEN = 256 * 1024 * 1024


class MpiCommunicator(CommunicatorBase):
    """A ChainerMN communicator over ``mpi_comm`` with one grad strategy.

    Use ``chainermn_lite.create_communicator`` rather than this class.
    """

    def __init__(self, mpi_comm, strategy, name, configs=None):
        super().__init__()
        self.mpi_comm = mpi_comm
        self.name = name
        self._module = _mpi.mpi_module_of(mpi_comm)
        self._rank = mpi_comm.Get_rank()
        self._size = mpi_comm.Get_size()
        self._strategy = strategy
        self._layout = _topology.NodeLayout(mpi_comm, self._module)
        self._configs.update({'batched_copy': True,
                              'max_buf_len': DEFAULT_MAX_BUF_LEN})
        self._configs.update(strategy.configs)
        self._context = _strategies.StrategyContext(
            mpi_comm, self._module, self._layout, type(self).__name__)
        self._p2p = _p2p.FrameChannel(mpi_comm, self._module,
                                      DEFAULT_MAX_BUF_LEN)
        self._header = numpy.zeros(_wire.DESCRIPTOR_WORDS, numpy.int64)
        self._plain_p2p()
        for key, value in (configs or {}).items():
            self.set_config(key, value)

    def _plain_p2p(self):
        """Give this instance ``send`` and ``recv`` functions that take a
        plain array, peer and tag (the model-parallel hot path) without a
        method call of their own; everything else goes to the methods
        below. A subclass that overrides them keeps its own."""
        for name, make in (('send', self._p2p.plain_send),
                           ('recv', self._p2p.plain_recv)):
            method = getattr(MpiCommunicator, name)
            if getattr(type(self), name) is not method:
                continue
            # (the bound method is also how the watchdog finds the
            # communicator of a plain-path call)
            fast = make(self._size, self._rank, method.__get__(self))
            functools.update_wrapper(fast, method, updated=())
            del fast.__wrapped__        # its own signature, without self
            object.__setattr__(self, name, fast)

    def __repr__(self):
        return '<chainermn_lite {} communicator rank {}/{} on {}>'.format(
            self.name, self._rank, self._size, self._module.__name__)

    # -- ranks -----------------------------------------------------------
    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def intra_rank(self):
        return self._layout.intra_rank

    @property
    def intra_size(self):
        return self._layout.intra_size

    @property
    def inter_rank(self):
        return self._layout.inter_rank

    @property
    def inter_size(self):
        return self._layout.inter_size

    # -- configuration ---------------------------------------------------
    def set_config(self, name, value=True, **kwargs):
        """set_config(name, value=True): ``batched_copy`` (accepted, CPU
        copies are always batched), ``max_buf_len`` (chunk bytes), and the
        strategy's own (``allreduce_grad_dtype`` for pure_nccl)."""
        if name == 'batched_copy':
            self._configs[name] = bool(value)
        elif name == 'max_buf_len':
            self._configs[name] = objects.check_max_buf_len(value)
            self._p2p.chunk_bytes = self._configs[name]
        elif name in self._strategy.configs:
            self._configs[name] = self._strategy.set_config(name, value)
        else:
            super().set_config(name, value, **kwargs)

    def split(self, color, key):
        """split(color, key): a communicator of the same kind per color."""
        return self._derive(self.mpi_comm.Split(color, key))

    def _dup(self):
        """A communicator of the same kind over ``mpi_comm.Dup()``: its
        collectives never interleave with this one's (a helper thread's
        own channel)."""
        return self._derive(self.mpi_comm.Dup())

    def _derive(self, sub):
        configs = {k: v for k, v in self._configs.items()
                   if k != 'batched_copy'}
        new = self._new_like(sub, configs)
        limit = self.__dict__.get('_watchdog_limit')
        if limit is not None:
            _watchdog.watch(new, limit)
        return new

    def _new_like(self, sub, configs):
        """A communicator over ``sub`` with this one's kind of strategy and
        ``configs``."""
        return MpiCommunicator(sub, type(self._strategy)(sub), self.name,
                               configs)

    def finalize(self):
        """finalize(): release this communicator's helper communicators."""
        self._strategy.free(self._context)
        self._layout.free()

    def _check_root(self, root, what):
        _wire.check_root(root, self._size, self._rank, what)

    # -- point to point --------------------------------------------------
    def send(self, data, dest, tag):
        """send(data, dest, tag): send an array or a tuple/list of arrays.

        Shape and dtype travel with the message. Sending to oneself is
        refused: a blocking send to one's own rank only returns if MPI
        happens to buffer it, so it works for small arrays and deadlocks
        for big ones.
        """
        dest = _wire.check_peer(dest, self._size, self._rank, 'send',
                                allow_self=True)
        tag = _wire.check_tag(tag, 'send', self._rank)
        is_tuple = isinstance(data, (tuple, list))
        from_device = False
        if not is_tuple and _wire.is_plain_sendable(data):
            arrays = (data,)      # the common case, without building texts
        else:
            arrays = data if is_tuple else (data,)
            try:
                from_device = any(_device.is_device_array(x) for x in arrays)
                arrays = [_wire.as_sendable(x, 'send (rank {} to {})'.format(
                    self._rank, dest)) for x in arrays]
            except Exception as error:
                if dest != self._rank:
                    # The receiver raises too, instead of waiting.
                    self._p2p.send_failure(error, dest, tag)
                raise
        _wire.check_not_self(dest, self._rank, 'send')
        self._p2p.send_arrays(arrays, is_tuple, dest, tag, from_device)

    def recv(self, source, tag):
        """recv(source, tag): the array (or tuple of arrays) sent; arrays
        sent from a GPU arrive on the current device (as in ChainerMN)."""
        source = _wire.check_peer(source, self._size, self._rank, 'recv',
                                  wildcard=self._module.ANY_SOURCE)
        tag = _wire.check_tag(tag, 'recv', self._rank,
                              wildcard=self._module.ANY_TAG)
        return self._p2p.recv_arrays(source, tag)

    def send_exact(self, arrays, dest, tag):
        """send_exact(arrays, dest, tag): send the bytes of each array, with
        no shape or dtype: the receiver's ``recv_exact`` names them (the
        differentiable functions' gradients, whose layout both sides
        know). One message per array (per ``max_buf_len`` bytes)."""
        dest = _wire.check_peer(dest, self._size, self._rank, 'send_exact')
        tag = _wire.check_tag(tag, 'send_exact', self._rank)
        arrays = tuple(arrays)      # (any iterable, walked twice below)
        if not all(_wire.is_plain_sendable(x) for x in arrays):
            what = 'send_exact (rank {} to {})'.format(self._rank, dest)
            arrays = [_wire.as_sendable(x, what) for x in arrays]
        self._p2p.send_exact(arrays, dest, tag)

    def recv_exact(self, specs, source, tag):
        """recv_exact(specs, source, tag): receive what ``send_exact``
        sent into fresh arrays of the ``(shape, dtype)`` pairs ``specs``;
        a list of arrays."""
        source = _wire.check_peer(source, self._size, self._rank,
                                  'recv_exact')
        tag = _wire.check_tag(tag, 'recv_exact', self._rank)
        return self._p2p.recv_exact(specs, source, tag)

    def send_obj(self, obj, dest, tag=0):
        """send_obj(obj, dest, tag=0): send a picklable object."""
        dest = _wire.check_peer(dest, self._size, self._rank, 'send_obj',
                                allow_self=True)
        tag = _wire.check_tag(tag, 'send_obj', self._rank)
        self._p2p.send_object(obj, dest, tag)

    def recv_obj(self, source, status=None, tag=None):
        """recv_obj(source, status=None, tag=ANY_TAG): receive an object."""
        if tag is None:
            tag = self._module.ANY_TAG
        source = _wire.check_peer(source, self._size, self._rank,
                                  'recv_obj', wildcard=self._module.ANY_SOURCE,
                                  allow_self=True)
        tag = _wire.check_tag(tag, 'recv_obj', self._rank,
                              wildcard=self._module.ANY_TAG)
        return self._p2p.recv_object(source, tag, status)

    # -- array collectives -----------------------------------------------
    def _sendable_everywhere(self, data, call, refuse_tuple=False):
        """(``data`` as a sendable array, every rank's (dtype, shape) by
        rank) in collective ``call``; when ``data`` is no sendable array
        on some rank, every rank raises (see
        ``_wire.allgather_descriptors``)."""
        what = '{} (rank {})'.format(call, self._rank)

        def make():
            if refuse_tuple and isinstance(data, (tuple, list)):
                raise TypeError(what + ': tuple data cannot be allreduced')
            return _wire.as_sendable(data, what)
        return _wire.allgather_descriptors(self.mpi_comm, make, call,
                                           self._header)

    def _v_layout(self, descs, what):
        """Byte counts, 16-aligned displacements and the total of a buffer
        that receives one array per descriptor."""
        counts = [_wire.nbytes_of(d, s) for d, s in descs]
        displs, total = _wire.offsets(counts, alignment=16)
        _wire.check_count(total, what, self._rank)
        return counts, displs, total

    def _one_per_rank(self, parts, what, whole=None, on_device=()):
        """(descriptor rows, v-send spec) of one array per rank, packed end
        to end (``whole``: the parts are its rows, already end to end;
        ``on_device``: per part, whether it came from a GPU array)."""
        if len(parts) != self._size:
            raise ValueError('{}: expecting {} arrays (one per rank), got '
                             '{}'.format(what, self._size, len(parts)))
        rows = numpy.empty((self._size, _wire.DESCRIPTOR_WORDS),
                           dtype=numpy.int64)
        for i, (row, p) in enumerate(zip(rows, parts)):
            _wire.describe_fixed(p, row, i < len(on_device) and on_device[i])
        counts = [p.nbytes for p in parts]
        displs, total = _wire.offsets(counts)
        _wire.check_count(total, what, self._rank)
        if whole is not None:
            sbuf = _wire.byte_view(whole)
        else:
            sbuf = numpy.empty(total, dtype=numpy.uint8)
            _packing.pack([_wire.byte_view(p) for p in parts], sbuf)
        return rows, [sbuf, (counts, displs)]

    def bcast(self, x, root=0, *, max_buf_len=None):
        """bcast(x, root=0): root's array everywhere (on each receiver's
        current device when root's is a GPU array). ChainerMN 7.8.1's MPI
        communicators take ``root`` second (its abstract base names
        ``max_buf_len`` there, which only this keyword accepts here: the
        Bcast piece size, the config's ``max_buf_len`` by default)."""
        data = x
        self._check_root(root, 'bcast')
        chunk = max_buf_len or self._configs['max_buf_len']
        header = self._header
        if self._rank == root:
            try:
                if isinstance(data, (tuple, list)):
                    raise TypeError('bcast: tuple data cannot be broadcast '
                                    '(root {})'.format(root))
                x = _wire.as_sendable(data, 'bcast (root {})'.format(root))
                _wire.describe_fixed(x, header,
                                     _device.is_device_array(data))
            except Exception as error:
                header[:] = 0
                header[0] = _wire.failure_word(error)
                self.mpi_comm.Bcast(header, root=root)
                raise
        self.mpi_comm.Bcast(header, root=root)
        if self._rank != root:
            _wire.raise_if_failed(header[0], 'bcast', self._rank, root)
            dtype, shape = _wire.parse_fixed(header)
            x = numpy.empty(shape, dtype=dtype)
        view = _wire.byte_view(x)
        for start in range(0, view.size, chunk):
            self.mpi_comm.Bcast(view[start:start + chunk], root=root)
        if self._rank == root:
            return data
        return _device.to_current_device(x) if _wire.fixed_on_device(
            header) else x

    def gather(self, x, root=0):
        """gather(x, root=0): tuple of every rank's array at root."""
        data = x
        self._check_root(root, 'gather')
        x, descs = self._sendable_everywhere(data, 'gather')
        counts, displs, total = self._v_layout(descs, 'gather')
        if self._rank != root:
            self.mpi_comm.Gatherv(_wire.byte_view(x), None, root=root)
            return None
        buf = numpy.empty(total, dtype=numpy.uint8)
        self.mpi_comm.Gatherv(_wire.byte_view(x),
                              [buf, (counts, displs)], root=root)
        return _device.like(data, _wire.arrays_at(buf, descs, displs))

    def allgather(self, x):
        """allgather(x): tuple of every rank's array on every rank (on the
        current device when ``x`` is a device array)."""
        data = x
        x, descs = self._sendable_everywhere(data, 'allgather')
        counts, displs, total = self._v_layout(descs, 'allgather')
        buf = numpy.empty(total, dtype=numpy.uint8)
        self.mpi_comm.Allgatherv(_wire.byte_view(x), [buf, (counts, displs)])
        return _device.like(data, _wire.arrays_at(buf, descs, displs))

    def scatter(self, xs, root=0):
        """scatter(xs, root=0): rank i gets xs[i] (a tuple of arrays, or
        an array split along its first axis) from root, on its current
        device when xs[i] is a GPU array."""
        self._check_root(root, 'scatter')
        rows = None
        sendspec = None
        header = self._header
        if self._rank == root:
            try:
                rows, sendspec = self._scatter_rows(xs, root)
            except Exception as error:
                rows = _wire.failure_rows(error, self._size)
                self.mpi_comm.Scatter(rows, header, root=root)
                raise
        self.mpi_comm.Scatter(rows, header, root=root)
        _wire.raise_if_failed(header[0], 'scatter', self._rank, root)
        dtype, shape = _wire.parse_fixed(header)
        out = numpy.empty(shape, dtype=dtype)
        self.mpi_comm.Scatterv(sendspec, _wire.byte_view(out), root=root)
        return _device.to_current_device(out) if _wire.fixed_on_device(
            header) else out

    def _scatter_rows(self, xs, root):
        """Root's (descriptor rows, Scatterv spec) for ``scatter(xs)``."""
        what = 'scatter (root {})'.format(root)
        if isinstance(xs, (tuple, list)):
            parts = [_wire.as_sendable(x, what) for x in xs]
            packed = None
            on_device = [_device.is_device_array(x) for x in xs]
        else:
            arr = _wire.as_sendable(xs, what)
            if arr.ndim == 0:
                raise ValueError(what + ': cannot scatter a 0-d array')
            parts = [arr[i] for i in range(arr.shape[0])]
            packed = arr
            on_device = [_device.is_device_array(xs)] * len(parts)
        return self._one_per_rank(parts, what, packed, on_device)

    def alltoall(self, xs):
        """alltoall(xs): tuple whose i-th array is rank i's xs[rank]."""
        what = 'alltoall (rank {})'.format(self._rank)
        got = numpy.empty((self._size, _wire.DESCRIPTOR_WORDS), numpy.int64)
        try:
            rows, sendspec = self._one_per_rank(
                [_wire.as_sendable(x, what) for x in xs], what)
        except Exception as error:
            # The others learn it from their row of ours and raise too.
            self.mpi_comm.Alltoall(_wire.failure_rows(error, self._size),
                                   got)
            raise
        self.mpi_comm.Alltoall(rows, got)
        _wire.raise_if_any_failed(got[:, 0].tolist(), 'alltoall',
                                  self._rank)
        descs = [_wire.parse_fixed(row) for row in got]
        rcounts, rdispls, total = self._v_layout(descs, what)
        rbuf = numpy.empty(total, dtype=numpy.uint8)
        self.mpi_comm.Alltoallv(sendspec, [rbuf, (rcounts, rdispls)])
        return _device.like(xs[0] if len(xs) else None,
                            _wire.arrays_at(rbuf, descs, rdispls))

    def allreduce(self, x):
        """allreduce(x): elementwise sum of every rank's array.

        Every rank must pass the same shape and dtype; otherwise every rank
        raises ValueError listing each rank's shape and dtype.
        """
        data = x
        x, descs = self._sendable_everywhere(data, 'allreduce',
                                             refuse_tuple=True)
        if any(d != descs[0] for d in descs):
            raise ValueError('allreduce: ranks passed different arrays: ' +
                             ', '.join('rank {}: shape {} dtype {}'.format(
                                 r, s, d) for r, (d, s) in enumerate(descs)))
        wire = numpy.float32 if x.dtype == numpy.float16 else x.dtype
        _mpi.reduce_datatype(self._module, wire)
        send = x.astype(wire, copy=False)
        out = numpy.empty(x.shape, dtype=wire)
        self.mpi_comm.Allreduce(send, out, op=self._module.SUM)
        return _device.like(data, out.astype(x.dtype, copy=False))

    # -- object collectives ----------------------------------------------
    def _max_buf_len(self, max_buf_len):
        if max_buf_len is None:
            return self._configs['max_buf_len']
        return objects.check_max_buf_len(max_buf_len)

    def bcast_obj(self, obj, max_buf_len=None, root=0):
        """bcast_obj(obj, max_buf_len=256 MiB, root=0): root's object."""
        return objects.bcast_obj(self.mpi_comm, obj,
                                 self._max_buf_len(max_buf_len), root)

    def gather_obj(self, obj, root=0):
        """gather_obj(obj, root=0): list of every rank's object at root."""
        return objects.gather_obj(self.mpi_comm, obj,
                                  self._configs['max_buf_len'], root)

    def allgather_obj(self, obj):
        """allgather_obj(obj): list of every rank's object everywhere."""
        return objects.allgather_obj(self.mpi_comm, obj,
                                     self._configs['max_buf_len'])

    def scatter_obj(self, objs, root=0):
        """scatter_obj(objs, root=0): rank i gets objs[i] from root."""
        return objects.scatter_obj(self.mpi_comm, objs,
                                   self._configs['max_buf_len'], root)

    def allreduce_obj(self, obj):
        """allreduce_obj(obj): sum (``+``) of every rank's object."""
        return objects.allreduce_obj(self.mpi_comm, obj,
                                     self._configs['max_buf_len'])

    # -- models ----------------------------------------------------------
    def bcast_data(self, model):
        """bcast_data(model): every rank gets rank 0's parameter data;
        GradientMismatchError on every rank when the ranks' initialised
        parameters differ in size or dtype."""
        named = _grads.params_with_data(model)
        _grads.check_same_data(self.mpi_comm, self._module, named,
                               self._configs['max_buf_len'])
        params = [p for _, p in named]
        arrays = [p.raw_array for p in params]
        # Data broadcast again in the same arrays moves into one buffer per
        # dtype, broadcast from there (the messages are the same wherever
        # the data lie, so the ranks need not agree on it).
        arena = _grads.GradArena.of(model, 'data')
        held = arena.holds(arrays)
        _host_staging.bcast_arrays(
            self._strategy, self._context, arena.flats() if held else arrays,
            self._configs['max_buf_len'])
        if not held:
            arena.settle(params, arrays)

    def multi_node_mean_grad(self, model, zero_fill=False):
        """multi_node_mean_grad(model, zero_fill=False): every grad becomes
        its mean over the ranks; see ChainerMN for ``zero_fill``."""
        arena = _grads.GradArena.of(model)
        params, grads, in_arenas = _grads.grads_for_mean(
            self.mpi_comm, self._module, model, zero_fill,
            self._configs['max_buf_len'], arena)
        if in_arenas:
            _host_staging.mean_grad(self._strategy, self._context,
                                    arena.flats())
        elif grads:
            _host_staging.mean_grad(self._strategy, self._context, grads)
            arena.settle(params, grads)
        if chainer.is_debug():
            self._check_finite_grads(model)

    def _mean_arrays(self, arrays):
        """Replace each array by its mean over the ranks, in place, with
        this communicator's gradient strategy (the double-buffering helper
        thread's call: no model, no agreement check)."""
        _host_staging.mean_grad(self._strategy, self._context, arrays)

    def _mean_bucket(self, arrays):
        """The means of ``arrays`` (one ``overlap`` bucket), maybe as new
        arrays: the strategy's ``mean_bucket``."""
        return _host_staging.mean_bucket(self._strategy, self._context,
                                         arrays)

    def _check_finite_grads(self, model):
        # ChainerMN's debug-mode check; every rank sees the same means, so
        # every rank raises together.
        for name, p in _grads.params_with_data(model):
            g = p.grad
            if g is not None and not \
                    chainer.backend.get_array_module(g).isfinite(g).all():
                raise ValueError(
                    'multi_node_mean_grad: parameters diverged after '
                    'allreduce: {} has NaN or inf gradients (rank {}, '
                    'chainer debug mode)'.format(name, self._rank))
