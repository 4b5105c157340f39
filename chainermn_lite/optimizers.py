"""Multi-node optimizers: an actual Chainer optimizer plus a gradient mean.

The wrapper behaves as the optimizer it wraps (``lr``, ``target``, hooks
such as ``WeightDecay``, serialization are all the wrapped one's). At the
first update, and whenever the set of initialised parameters changes, it
broadcasts rank 0's parameters instead of stepping, so that every rank
starts from identical weights, as ChainerMN does.
"""
import threading

import numpy

from chainermn_lite import _mpi

__all__ = ['create_multi_node_optimizer']


def _param_signature(target):
    """[(name, initialised?)] of every parameter, in name order."""
    return [(name, p.data is not None)
            for name, p in sorted(target.namedparams())]


def _compute_grads(optimizer, target, lossfun, args, kwds):
    """Run lossfun and backprop into target's grads, as Optimizer.update."""
    loss = lossfun(*args, **kwds)
    if getattr(optimizer, '_use_cleargrads', True):
        target.cleargrads()
    else:
        target.zerograds()
    loss.backward(loss_scale=getattr(optimizer, '_loss_scale', None))
    del loss


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
    that are None are reduced as zeros.
    """

    def __init__(self, actual_optimizer, communicator, zero_fill):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('_signature', None)
        self._own('_pending', None)
        self._own('_thread_comm', None)

    def update(self, lossfun=None, *args, **kwds):
        """update(lossfun=None, *args, **kwds): apply the mean grads of the
        previous step while this step's grads are being reduced."""
        target = self.target
        if lossfun is not None:
            _compute_grads(self.actual_optimizer, target, lossfun, args, kwds)
        signature = _param_signature(target)
        if signature != self._signature:
            self.wait()
            self._own('_signature', signature)
            self.communicator.bcast_data(target)
            return
        params = _host_params(target, self.communicator.rank)
        previous = self.wait()
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
            self._own('_pending', (errors, waiter, grads))
            return grads
        return start

    def wait(self):
        """wait(): finish the reduction in flight; the mean grads (one
        array per param), or None when nothing was in flight."""
        pending = self._pending
        if pending is None:
            return None
        self._own('_pending', None)
        errors, waiter, grads = pending
        waiter.join()
        if errors:              # the helper thread's exception
            raise errors[0]
        return grads

    def _apply(self, params, grads):
        for p, grad in zip(params, grads):
            # The averaged arrays are the grads of a step whose backward is
            # over: no copy while dtypes agree.
            p.grad = grad if grad.dtype == p.data.dtype else \
                grad.astype(p.data.dtype)


def _host_params(target, rank):
    """The initialised params in name order; double buffering averages
    host (NumPy) arrays only, anything else is refused by name."""
    params = []
    for name, p in sorted(target.namedparams()):
        if p.data is None:
            continue
        if not isinstance(p.data, numpy.ndarray):
            raise TypeError(
                'double_buffering (rank {}): parameter {} is a {} array; '
                "chainermn_lite's double buffering averages NumPy arrays "
                'only (use double_buffering=False for device arrays)'
                .format(rank, name, type(p.data).__module__.split('.')[0]))
        params.append(p)
    return params


def _reducible_grad(param):
    """The array to average in place for ``param``: its grad itself when
    MPI can sum it where it lies, else a float32/64 C-contiguous copy
    (float16, non-contiguous), zeros for a None grad."""
    grad = param.grad
    if grad is None:
        return numpy.zeros(param.data.shape,
                           numpy.result_type(numpy.float32,
                                             param.data.dtype))
    grad = numpy.asarray(grad)
    if grad.dtype == numpy.float16:
        return grad.astype(numpy.float32)
    return numpy.ascontiguousarray(grad)


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
                                double_buffering=False, zero_fill=True):
    """create_multi_node_optimizer(actual_optimizer, communicator,
    double_buffering=False, zero_fill=True): an optimizer that averages
    gradients over the communicator's ranks before every update.

    ``double_buffering=True`` overlaps the reduction of step t with the
    computation of step t + 1, so each update applies the previous step's
    mean gradient (one-step staleness). Unlike ChainerMN it is not limited
    to ``pure_nccl``: it works with every communicator.
    """
    if double_buffering:
        return _DoubleBufferingOptimizer(actual_optimizer, communicator,
                                         zero_fill)
    return _MultiNodeOptimizer(actual_optimizer, communicator, zero_fill)
