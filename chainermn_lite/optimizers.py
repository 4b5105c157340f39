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
from chainermn_lite.communicators import _strategies

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

    The gradients of step t are packed (scaled by 1/size) into one of two
    float buffers and summed in place in the background; the next
    ``update`` (after the forward/backward of step t + 1 ran) waits for it
    and applies it. The grads it applies are views of that buffer (no copy
    back), which is why there are two: the other one takes the next
    reduction while these grads are in use. On real MPI (THREAD_MULTIPLE)
    a helper thread runs blocking chunked Allreduces on a ``Dup`` of the
    communicator: Open MPI advances a non-blocking collective only inside
    MPI calls, and its blocking algorithms are faster. Elsewhere (the
    simulator) it is an ``Iallreduce`` completed in the final wait. The
    first step after a broadcast only starts a reduction; gradients that
    are None are reduced as zeros.
    """

    def __init__(self, actual_optimizer, communicator, zero_fill):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('_signature', None)
        self._own('_pending', None)
        self._own('_buffers', [])
        self._own('_next_buffer', 0)
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
            self._own('_buffers', [])
            self.communicator.bcast_data(target)
            return
        params = [p for _, p in sorted(target.namedparams())
                  if p.data is not None]
        previous = self.wait()
        # Without a previous mean to apply, p.grad stays bound to the
        # arrays being packed and the next backward may write into them
        # (zerograds): pack them before returning.
        self._start(params, pack_in_background=previous is not None)
        if previous is not None:
            self._apply(params, previous)
            self.actual_optimizer.update(None, *args, **kwds)

    def _buffer(self, params):
        dtype = numpy.result_type(numpy.float32,
                                  *[p.data.dtype for p in params])
        size = sum(p.data.size for p in params)
        index = self._next_buffer
        self._own('_next_buffer', 1 - index)
        buffers = self._buffers
        if len(buffers) <= index or buffers[index].dtype != dtype or \
                buffers[index].size != size:
            del buffers[index:]
            buffers.append(numpy.empty(size, dtype))
        return buffers[index]

    def _start(self, params, pack_in_background):
        comm = self.communicator.mpi_comm
        module = _mpi.mpi_module_of(comm)
        flat = self._buffer(params)
        # The arrays, not the params: _apply rebinds p.grad right after.
        grads = [(p.grad, p.data.size) for p in params]
        scale = 1.0 / self.communicator.size
        if not pack_in_background:
            _pack(grads, scale, flat)
            grads = None
        if _progress_thread_allowed(comm, module):
            if self._thread_comm is None:
                # The helper thread's own communicator, so that its
                # collectives never interleave with the main thread's.
                self._own('_thread_comm', comm.Dup())
            errors = []
            waiter = threading.Thread(
                target=_pack_and_allreduce,
                args=(self._thread_comm, module, grads, scale, flat, errors),
                daemon=True, name='chainermn_lite-double-buffering')
            waiter.start()
            self._own('_pending', (errors, waiter, flat))
            return
        if grads is not None:
            _pack(grads, scale, flat)
        request = comm.Iallreduce(module.IN_PLACE, flat, op=module.SUM)
        self._own('_pending', (request, None, flat))

    def wait(self):
        """wait(): finish the reduction in flight; its mean, or None."""
        pending = self._pending
        if pending is None:
            return None
        self._own('_pending', None)
        request, waiter, flat = pending
        if waiter is not None:
            waiter.join()
            if request:         # the helper thread's exception
                raise request[0]
        else:
            request.Wait()
        return flat

    def _apply(self, params, flat):
        offset = 0
        for p in params:
            n = p.data.size
            grad = flat[offset:offset + n].reshape(p.data.shape)
            # A view while the dtype allows: the buffer stays untouched
            # until the step after next, when these grads are long used.
            p.grad = grad if grad.dtype == p.data.dtype else \
                grad.astype(p.data.dtype)
            offset += n


def _pack(grads, scale, flat):
    """Copy each (grad, size) of ``grads`` times ``scale`` into ``flat``
    (a None grad as zeros): the sum of the scaled copies is the mean."""
    scale = flat.dtype.type(scale)
    offset = 0
    for grad, size in grads:
        part = flat[offset:offset + size]
        if grad is None:
            part[...] = 0
        else:
            numpy.multiply(numpy.asarray(grad).reshape(-1), scale, out=part)
        offset += size


def _pack_and_allreduce(comm, module, grads, scale, flat, errors):
    """Pack (unless ``grads`` is None: packed already), then sum in place
    with blocking Allreduces in the pieces the flat strategy uses (Open
    MPI's tuned blocking algorithms beat its non-blocking ones on a
    ResNet-50-sized buffer); an exception is kept for ``wait``."""
    try:
        if grads is not None:
            _pack(grads, scale, flat)
        step = max(1, _strategies.CHUNK_BYTES // flat.itemsize)
        for start in range(0, flat.size, step):
            comm.Allreduce(module.IN_PLACE, flat[start:start + step],
                           op=module.SUM)
    except BaseException as e:  # noqa: B902 -- re-raised by wait()
        errors.append(e)


def _progress_thread_allowed(comm, module):
    """A helper thread may wait on a request: real MPI with
    THREAD_MULTIPLE (mpi4py's default level)."""
    if _mpi.is_simulated(comm):
        return False
    try:
        return module.Query_thread() == module.THREAD_MULTIPLE
    except Exception:  # noqa: B902 -- an MPI without Query_thread
        return False


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
