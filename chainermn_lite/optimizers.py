"""Multi-node optimizers: an actual Chainer optimizer plus a gradient mean.

The wrapper behaves as the optimizer it wraps (``lr``, ``target``, hooks
such as ``WeightDecay``, serialization are all the wrapped one's). At the
first update, and whenever the set of initialised parameters changes, it
broadcasts rank 0's parameters instead of stepping, so that every rank
starts from identical weights, as ChainerMN does.
"""
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

    The gradients of step t are packed into one float buffer and a
    non-blocking ``Iallreduce`` is started on the communicator's own
    ``mpi_comm``; the next ``update`` (after the forward/backward of step
    t + 1 ran) waits for it and applies it. Using the comm's non-blocking
    collective instead of a helper thread makes it work the same on real
    MPI and on the simulator. The first step after a broadcast only starts
    a reduction; gradients that are None are reduced as zeros.
    """

    def __init__(self, actual_optimizer, communicator, zero_fill):
        self._own('actual_optimizer', actual_optimizer)
        self._own('communicator', communicator)
        self._own('zero_fill', zero_fill)
        self._own('_signature', None)
        self._own('_pending', None)

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
        params = [p for _, p in sorted(target.namedparams())
                  if p.data is not None]
        previous = self.wait()
        self._start(params)
        if previous is not None:
            self._apply(params, previous)
            self.actual_optimizer.update(None, *args, **kwds)

    def _start(self, params):
        comm = self.communicator.mpi_comm
        module = _mpi.mpi_module_of(comm)
        dtype = numpy.result_type(numpy.float32,
                                  *[p.data.dtype for p in params])
        send = numpy.concatenate([
            numpy.zeros(p.data.size, dtype) if p.grad is None
            else numpy.asarray(p.grad, dtype).ravel() for p in params])
        recv = numpy.empty_like(send)
        request = comm.Iallreduce(send, recv, op=module.SUM)
        # send must stay alive until the request completes.
        self._own('_pending', (request, send, recv))

    def wait(self):
        """wait(): finish the reduction in flight; its mean, or None."""
        pending = self._pending
        if pending is None:
            return None
        self._own('_pending', None)
        request, _, recv = pending
        request.Wait()
        recv /= self.communicator.size
        return recv

    def _apply(self, params, flat):
        offset = 0
        for p in params:
            n = p.data.size
            grad = flat[offset:offset + n].reshape(p.data.shape)
            p.grad = grad.astype(p.data.dtype, copy=True)
            offset += n


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
