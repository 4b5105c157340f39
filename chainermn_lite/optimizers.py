"""Multi-node optimizers: an actual Chainer optimizer plus a gradient mean.

The wrapper behaves as the optimizer it wraps (``lr``, ``target``, hooks
such as ``WeightDecay``, serialization are all the wrapped one's). At the
first update, and whenever the set of initialised parameters changes, it
broadcasts rank 0's parameters instead of stepping, so that every rank
starts from identical weights, as ChainerMN does.
"""
import threading

import chainer
import numpy

from chainermn_lite import _backward_buckets as buckets
from chainermn_lite import _mpi
from chainermn_lite.communicators import _grads
from chainermn_lite._checks import check_communicator, check_optimizer

__all__ = ['create_multi_node_optimizer']


def _param_signature(target):
    """[(name, initialised?)] of every parameter, in name order."""
    return [(name, p.data is not None)
            for name, p in sorted(target.namedparams())]


def _compute_grads(optimizer, target, lossfun, args, kwds):
    """Run lossfun and backprop into target's grads, as Optimizer.update."""
    loss = _forward(optimizer, target, lossfun, args, kwds)
    loss.backward(loss_scale=getattr(optimizer, '_loss_scale', None))
    del loss


def _forward(optimizer, target, lossfun, args, kwds):
    """The loss, and target's grads cleared as Optimizer.update does."""
    loss = lossfun(*args, **kwds)
    if getattr(optimizer, '_use_cleargrads', True):
        target.cleargrads()
    else:
        target.zerograds()
    return loss


class _Wrapper(object):
    """Delegates every unknown attribute to the actual optimizer."""

    def _own(self, name, value):
        object.__setattr__(self, name, value)

    def setup(self, link):
        """setup(link): set up the actual optimizer on ``link``."""
        self.actual_optimizer.setup(link)
        return self

    def __getattr__(self, name):
        return getattr(self.actual_optimizer, name)

    def __setattr__(self, name, value):
        setattr(self.actual_optimizer, name, value)


class _MultiNodeOptimizer(_Wrapper):

    def __init__(self, actual_optimizer, communicator, zero_fill):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('_signature', None)

    def update(self, lossfun=None, *args, **kwds):
        """update(lossfun=None, *args, **kwds): mean the grads, then step."""
        target = self.target
        if lossfun is not None:
            _compute_grads(self.actual_optimizer, target, lossfun, args, kwds)
        signature = _param_signature(target)
        if signature != self._signature:
            self._own('_signature', signature)
            self.communicator.bcast_data(target)
            return
        self.communicator.multi_node_mean_grad(target, self.zero_fill)
        self.actual_optimizer.update(None, *args, **kwds)


class _DoubleBufferingOptimizer(_Wrapper):
    """Step t applies the mean gradient of step t - 1 (one-step staleness).

    The grad arrays of step t themselves are averaged in place by a helper
    thread, with the communicator's own strategy on a ``Dup`` of it (Open
    MPI advances a non-blocking collective only inside MPI calls, and its
    blocking algorithms are faster): no copy, no extra memory. It needs an
    MPI that lets any thread call it (``Query_thread() ==
    THREAD_MULTIPLE``: mpi4py's default, and the simulator's, whose ranks'
    threads inherit their rank). The next ``update`` waits for them and
    binds them to the params as the grads to apply, so the arrays in
    flight are never the ones a backward (or ``zerograds``) writes into.
    The first step after a broadcast only starts a reduction; gradients
    that are None are reduced as zeros. Device (CuPy) grads stay on their
    device: NCCL reduces them there, an MPI strategy through the host.
    """

    def __init__(self, actual_optimizer, communicator, zero_fill):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('_signature', None)
        self._own('_pending', None)
        self._own('_done', None)
        self._own('_thread_comm', None)
        self._own('_communicated', None)

    def update(self, lossfun=None, *args, **kwds):
        """update(lossfun=None, *args, **kwds): apply the mean grads of the
        previous step while this step's grads are being reduced."""
        target = self.target
        if lossfun is not None:
            _compute_grads(self.actual_optimizer, target, lossfun, args, kwds)
        signature = _param_signature(target)
        if signature != self._signature:
            self.wait()
            self._own('_done', None)
            self._own('_communicated', None)
            self._own('_signature', signature)
            self.communicator.bcast_data(target)
            return
        params = [p for _, p in _grads.params_with_data(target)]
        previous = self.wait()
        self._own('_done', None)
        start = self._prepare(params)
        if previous is not None:
            self._apply(params, previous)
            self.actual_optimizer.update(None, *args, **kwds)
        # Started after the update: the helper thread then needs the GIL
        # while the next forward/backward runs, not during the update.
        in_flight = start()
        if previous is None and in_flight is not None:
            # Nothing applied: p.grad must still not share memory with the
            # arrays being averaged.
            for p, grad in zip(params, in_flight):
                if p.grad is grad:
                    p.grad = grad.copy()

    def _prepare(self, params):
        """Take hold of the params' current grads; returns ``start()``,
        which starts the helper thread averaging them in place and returns
        those arrays."""
        if self._thread_comm is None:
            _require_thread_multiple(self.communicator.mpi_comm)
            self._own('_thread_comm', self.communicator._dup())
        grads = [_reducible_grad(p) for p in params]

        def start():
            errors = []
            waiter = threading.Thread(
                target=_mean_in_background,
                args=(self._thread_comm, grads, errors), daemon=True,
                name='chainermn_lite-double-buffering')
            waiter.start()
            self._own('_pending', (errors, waiter, grads, params))
            return grads
        return start

    def wait(self):
        """wait(): finish the reduction in flight; the mean grads (one
        array per param) that the next ``update`` applies, or None when
        no reduction was started since the last ``update``."""
        pending = self._pending
        if pending is not None:
            self._own('_pending', None)
            errors, waiter, grads, params = pending
            waiter.join()
            if errors:          # the helper thread's exception
                raise errors[0]
            self._own('_done', grads)
            # The copy shares the data: its initialised params, in name
            # order, are the ones these grads belong to.
            copies = _grads.params_with_data(self.communicated_target)
            for (_, q), grad in zip(copies, grads):
                q.grad = grad if grad.dtype == q.dtype else \
                    grad.astype(q.dtype)
        return self._done

    @property
    def communicated_target(self):
        """ChainerMN's: a copy of the target (sharing its parameter data)
        whose params' grads are the means of the last finished reduction
        (set by ``wait()``, which ``update`` calls)."""
        if self._communicated is None:
            self._own('_communicated', self.target.copy(mode='share'))
        return self._communicated

    def _apply(self, params, grads):
        for p, grad in zip(params, grads):
            # The averaged arrays are the grads of a step whose backward is
            # over: no copy while dtypes agree.
            p.grad = grad if grad.dtype == p.data.dtype else \
                grad.astype(p.data.dtype)


class _OverlappingOptimizer(_Wrapper):
    """Gradient means that run while backward still runs (no staleness).

    ``update(lossfun, ...)`` runs backward with a hook that hands each
    bucket of gradients (``bucket_bytes``, reverse creation order) to a
    helper thread as soon as the bucket is final; the thread averages it
    with the communicator's own strategy on a ``Dup`` of it, and the update
    waits only for what is still in flight. ``update()`` after a backward
    of the caller's own averages the same buckets in the same order, so
    the two give the same bits. See ``_backward_buckets``.
    """

    def __init__(self, actual_optimizer, communicator, zero_fill,
                 bucket_bytes):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('bucket_bytes', bucket_bytes)
        self._own('_signature', None)
        self._own('_plan', None)
        self._own('_thread_comm', None)
        self._own('_reducer', None)    # this step's, while it runs

    def update(self, lossfun=None, *args, **kwds):
        """update(lossfun=None, *args, **kwds): backward with the mean
        overlapped, then step."""
        target = self.target
        reducer = None
        signature = None
        if lossfun is not None:
            optimizer = self.actual_optimizer
            loss = _forward(optimizer, target, lossfun, args, kwds)
            loss_scale = getattr(optimizer, '_loss_scale', None)
            # Backward initialises no parameter: one look after forward.
            signature = _param_signature(target)
            if signature == self._signature:
                reducer = self._new_reducer()
                readiness = buckets.GradReadiness(self._plan.params,
                                                  reducer.put)
                readiness.count_uses(loss)
                self._own('_reducer', reducer)
                reducer.start()
                try:
                    with readiness:
                        loss.backward(loss_scale=loss_scale)
                    readiness.finish()
                finally:
                    self._own('_reducer', None)
            else:
                loss.backward(loss_scale=loss_scale)
            del loss
        else:
            signature = _param_signature(target)
        if signature != self._signature:
            self._own('_signature', signature)
            self._own('_plan', None)
            self.communicator.bcast_data(target)
            return
        if reducer is None:
            reducer = self._new_reducer()
            means = reducer.reduce_all([p.grad for p in self._plan.params])
        else:
            means = reducer.wait()
        self._bind(means)
        self.actual_optimizer.update(None, *args, **kwds)

    def _new_reducer(self):
        comm = self.communicator
        if self._plan is None:
            if self._thread_comm is None:
                _require_thread_multiple(comm.mpi_comm)
                self._own('_thread_comm', comm._dup())
            plan = buckets.BucketPlan(
                [p for p in self.target.params() if p.data is not None],
                self.bucket_bytes)
            plan.check_agreement(comm.mpi_comm, _mpi.mpi_module_of(
                comm.mpi_comm))
            self._own('_plan', plan)
        return buckets.BucketReducer(self._plan, self._thread_comm)

    def _bind(self, means):
        """The params' grads become the means; a grad backward never gave
        stays None without zero_fill (which the ranks must agree on)."""
        params = self._plan.params
        missing = [buckets.is_missing(m) for m in means]
        comm = self.communicator
        if not self.zero_fill and comm.size > 1:
            _check_missing_agree(comm, params, missing)
        for p, mean, gone in zip(params, means, missing):
            if gone and not self.zero_fill:
                p.grad = None
                continue
            mean = buckets.array_of(mean)
            # Averaged in place, a mean is mostly the param's own grad
            # already; Chainer's setter checks cost ~10 us a param.
            if p.grad is not mean:
                p.grad = mean
        if chainer.is_debug():
            comm._check_finite_grads(self.target)


def _check_missing_agree(comm, params, missing):
    """Without zero_fill a param whose grad is None on some ranks only
    would be updated on the others: every rank raises the same error."""
    module = _mpi.mpi_module_of(comm.mpi_comm)
    words = numpy.array([sum(1 << (k % 62) for k, m in enumerate(missing)
                             if m and k // 62 == w)
                         for w in range((len(missing) + 61) // 62)] or [0],
                        dtype=numpy.int64)
    if _grads._agree(comm.mpi_comm, module, words):
        return
    mine = [p.name for p, m in zip(params, missing) if m]
    table = comm.allgather_obj(mine)
    raise _grads.GradientMismatchError(
        'overlap (rank {}): ranks disagree on the gradients to average: '
        'grad None on {} (pass zero_fill=True to treat a missing grad as '
        'zeros)'.format(comm.rank, ', '.join(
            'rank {}: {}'.format(r, names) for r, names in
            enumerate(table))))


def _reducible_grad(param):
    """The array to average in place for ``param``: its grad itself when
    it can be summed where it lies, else a float32/64 C-contiguous copy
    (float16, non-contiguous), zeros for a None grad; on the param's own
    device."""
    grad = param.grad
    xp = chainer.backend.get_array_module(param.data)
    if grad is None:
        return xp.zeros(param.data.shape,
                        numpy.result_type(numpy.float32, param.data.dtype))
    if grad.dtype == numpy.float16:
        return grad.astype(numpy.float32)
    return xp.ascontiguousarray(grad)


def _mean_in_background(thread_comm, grads, errors):
    """The helper thread: average ``grads`` in place with the
    communicator's strategy; an exception is kept for ``wait``."""
    try:
        thread_comm._mean_arrays(grads)
    except BaseException as e:  # re-raised by wait()
        errors.append(e)


def _require_thread_multiple(comm):
    """The helper thread calls MPI: refuse, naming the level, an MPI
    initialised without THREAD_MULTIPLE."""
    module = _mpi.mpi_module_of(comm)
    level = module.Query_thread()
    if level != module.THREAD_MULTIPLE:
        raise RuntimeError(
            'double_buffering averages gradients on a helper thread, which '
            'needs MPI initialised with THREAD_MULTIPLE (Query_thread() '
            'returned {}, THREAD_MULTIPLE is {}); initialise MPI with '
            'THREAD_MULTIPLE (mpi4py.rc.thread_level = "multiple", the '
            'default) or use double_buffering=False'.format(
                level, module.THREAD_MULTIPLE))


def create_multi_node_optimizer(actual_optimizer, communicator,
                                double_buffering=False, zero_fill=True,
                                overlap=False, bucket_bytes=None):
    """create_multi_node_optimizer(actual_optimizer, communicator,
    double_buffering=False, zero_fill=True, overlap=False,
    bucket_bytes=None): an optimizer that averages gradients over the
    communicator's ranks before every update.

    ``double_buffering=True`` overlaps the reduction of step t with the
    computation of step t + 1, so each update applies the previous step's
    mean gradient (one-step staleness). Unlike ChainerMN it is not limited
    to ``pure_nccl``: it works with every communicator.

    ``overlap=True`` (not in ChainerMN) averages the gradients of step t
    while step t's own backward still runs, without staleness: buckets of
    about ``bucket_bytes`` (default 4 MiB) start as soon as their
    gradients are final, when ``update(lossfun, ...)`` runs the backward.
    """
    if overlap:
        if double_buffering:
            raise ValueError('create_multi_node_optimizer: overlap=True and '
                             'double_buffering=True exclude each other '
                             '(overlap has no staleness)')
        if bucket_bytes is None:
            bucket_bytes = buckets.DEFAULT_BUCKET_BYTES
        if isinstance(bucket_bytes, bool) or \
                not isinstance(bucket_bytes, int) or bucket_bytes <= 0:
            raise ValueError('create_multi_node_optimizer: bucket_bytes must '
                             'be a positive int, got {!r}'.format(
                                 bucket_bytes))
    elif bucket_bytes is not None:
        raise ValueError('create_multi_node_optimizer: bucket_bytes={!r} is '
                         'only used with overlap=True'.format(bucket_bytes))
    check_optimizer(actual_optimizer, 'create_multi_node_optimizer')
    check_communicator(communicator, 'create_multi_node_optimizer')
    if overlap:
        return _OverlappingOptimizer(actual_optimizer, communicator,
                                     zero_fill, bucket_bytes)
    if double_buffering:
        return _DoubleBufferingOptimizer(actual_optimizer, communicator,
                                         zero_fill)
    return _MultiNodeOptimizer(actual_optimizer, communicator, zero_fill)
