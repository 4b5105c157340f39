"""Batch normalization over the global batch of every rank.

With plain ``BatchNormalization`` each rank normalizes with the statistics
of its own (small) local batch. ``MultiNodeBatchNormalization`` sums the
per-channel statistics over all ranks instead, so N ranks with B/N
examples each compute exactly what one process computes with B examples:
outputs, input gradients, gamma/beta gradients and running statistics.

Forward sends two small allreduces per call (sums and example counts,
then squared deviations from the global mean: the two-pass variance
stays exact where E[x^2] - E[x]^2 cancels); backward sends one. Counts
travel too, so ranks may hold different numbers of examples (a short last
batch). The per-channel vectors travel on the host through the
communicator's checked ``allreduce``: a rank with another channel count
makes every rank raise, naming each rank's shape.
"""
import copy

import chainer
import numpy
from chainer import backend
from chainer import function_node
from chainer import initializers
from chainer import link
from chainer import variable
from chainer.functions.normalization import batch_normalization
from chainermn_lite._checks import check_communicator

__all__ = ['MultiNodeBatchNormalization', 'multi_node_batch_normalization',
           'communication_backend_of']

_BACKENDS = ('mpi', 'nccl', 'auto')


def _is_pure_nccl(comm):
    return 'pure_nccl' in (getattr(comm, 'name', None),
                           getattr(comm, 'communicator_name', None))


def communication_backend_of(comm, communication_backend='auto'):
    """communication_backend_of(comm, communication_backend='auto'): 'mpi'
    or 'nccl', as ChainerMN picks it ('auto': 'nccl' for pure_nccl)."""
    if communication_backend not in _BACKENDS:
        raise ValueError('MultiNodeBatchNormalization: communication_backend '
                         'must be one of {}, got {!r}'.format(
                             _BACKENDS, communication_backend))
    if communication_backend == 'nccl' and not _is_pure_nccl(comm):
        raise ValueError('MultiNodeBatchNormalization: communication_backend '
                         "'nccl' needs a pure_nccl communicator, got "
                         '{!r}'.format(comm))
    if communication_backend == 'auto':
        return 'nccl' if _is_pure_nccl(comm) else 'mpi'
    return communication_backend


def _global_sum(comm, local):
    """Elementwise sum over the ranks of a small float64 host vector."""
    host = numpy.ascontiguousarray(
        chainer.backend.CpuDevice().send(local), dtype=numpy.float64)
    return comm.allreduce(host)


def _layout(x, gamma):
    """(reduced axes, expander) for channels on axes 1..gamma.ndim."""
    channel_axes = range(1, 1 + gamma.ndim)
    axis = tuple(i for i in range(x.ndim) if i not in channel_axes)
    expander = tuple(slice(None) if i in channel_axes else None
                     for i in range(x.ndim))
    return axis, expander


class _MultiNodeBN(function_node.FunctionNode):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta with global stats."""

    def __init__(self, comm, eps, running_mean, running_var, decay):
        self.comm = comm
        self.eps = eps
        self.running_mean = running_mean
        self.running_var = running_var
        self.decay = decay

    def forward(self, inputs):
        self.retain_inputs((0, 1))
        x, gamma, beta = inputs
        if gamma.shape != x.shape[1:1 + gamma.ndim]:
            raise ValueError(
                'MultiNodeBatchNormalization (rank {}): input of shape {} '
                'does not have channels {} on axes 1..{}'.format(
                    self.comm.rank, x.shape, gamma.shape, gamma.ndim))
        xp = backend.get_array_module(x)
        interm = numpy.promote_types(x.dtype, gamma.dtype)
        axis, expander = _layout(x, gamma)

        local = xp.empty(gamma.size + 1, dtype=numpy.float64)
        local[:-1] = x.sum(axis=axis, dtype=numpy.float64).ravel()
        local[-1] = x.size // gamma.size
        total = _global_sum(self.comm, local)
        count = float(total[-1])
        mean = xp.asarray(total[:-1] / count, dtype=interm).reshape(
            gamma.shape)
        centered = x.astype(interm, copy=False) - mean[expander]
        squares = (centered * centered).sum(axis=axis, dtype=numpy.float64)
        var = xp.asarray(_global_sum(self.comm, squares.ravel()) / count,
                         dtype=interm).reshape(gamma.shape)
        inv_std = 1 / xp.sqrt(var + self.eps, dtype=interm)
        x_hat = centered * inv_std[expander]
        y = gamma.astype(interm)[expander] * x_hat + \
            beta.astype(interm)[expander]

        if self.running_mean is not None:
            # Unbiased variance of the global batch, as one process's BN.
            adjust = count / max(count - 1., 1.)
            self.running_mean *= self.decay
            self.running_mean += (1 - self.decay) * mean
            self.running_var *= self.decay
            self.running_var += (1 - self.decay) * adjust * var
        self.mean, self.inv_std, self.count = mean, inv_std, count
        self.axis, self.expander = axis, expander
        return y.astype(x.dtype, copy=False),

    def backward(self, indexes, grad_outputs):
        x, gamma = self.get_retained_inputs()
        gy, = grad_outputs
        grad = _MultiNodeBNGrad(self)
        return grad.apply((x, gamma, gy))


class _MultiNodeBNGrad(function_node.FunctionNode):
    """(gx, ggamma, gbeta) with gamma/beta sums taken over every rank."""

    def __init__(self, forward):
        self.f = forward

    def forward(self, inputs):
        x, gamma, gy = inputs
        f = self.f
        xp = backend.get_array_module(x)
        interm = numpy.promote_types(x.dtype, gamma.dtype)
        x_hat = (x.astype(interm, copy=False) - f.mean[f.expander]) * \
            f.inv_std[f.expander]
        local = xp.concatenate([
            gy.sum(axis=f.axis, dtype=numpy.float64).ravel(),
            (gy * x_hat).sum(axis=f.axis, dtype=numpy.float64).ravel()])
        total = _global_sum(f.comm, local)
        gbeta = xp.asarray(total[:gamma.size], interm).reshape(gamma.shape)
        ggamma = xp.asarray(total[gamma.size:], interm).reshape(gamma.shape)
        gx = (gamma.astype(interm) * f.inv_std)[f.expander] * (
            gy - (x_hat * ggamma[f.expander] + gbeta[f.expander]) / f.count)
        # Every rank holds the global sums; report their mean over ranks
        # (ChainerMN's convention): the multi-node optimizer's average
        # then equals one process's gradient of the global batch mean.
        size = f.comm.size
        return (gx.astype(x.dtype, copy=False),
                (ggamma / size).astype(gamma.dtype, copy=False),
                (gbeta / size).astype(gamma.dtype, copy=False))

    def backward(self, indexes, grad_outputs):
        raise NotImplementedError(
            'MultiNodeBatchNormalization does not support double '
            'backpropagation (second-order gradients)')


def multi_node_batch_normalization(x, gamma, beta, comm, eps=2e-5,
                                   running_mean=None, running_var=None,
                                   decay=0.9):
    """multi_node_batch_normalization(x, gamma, beta, comm, eps=2e-5,
    running_mean=None, running_var=None, decay=0.9): batch normalization
    with statistics of the batches of every rank of ``comm``."""
    func = _MultiNodeBN(comm, eps, running_mean, running_var, decay)
    return func.apply((x, gamma, beta))[0]


class MultiNodeBatchNormalization(link.Link):
    """MultiNodeBatchNormalization(size, comm, decay=0.9, eps=2e-5,
    dtype=None, use_gamma=True, use_beta=True, initial_gamma=None,
    initial_beta=None, communication_backend='auto'): BatchNormalization
    whose training statistics cover the global batch of all ranks.

    Every rank must call it at the same step. In evaluation mode (and in
    ``finetune``'s collection of population statistics) it behaves as
    ``chainer.links.BatchNormalization`` with the running statistics.
    """

    def __init__(self, size, comm, decay=0.9, eps=2e-5, dtype=None,
                 use_gamma=True, use_beta=True, initial_gamma=None,
                 initial_beta=None, communication_backend='auto'):
        check_communicator(comm, 'MultiNodeBatchNormalization')
        super().__init__()
        self._highprec_dtype = chainer.get_dtype(
            dtype, map_mixed16=numpy.float32)
        self.comm = comm
        self.communication_backend = communication_backend_of(
            comm, communication_backend)
        self.decay = decay
        self.eps = eps
        self.avg_mean = numpy.zeros(size, dtype=self._highprec_dtype)
        self.register_persistent('avg_mean')
        # Ones, as chainer.links.BatchNormalization (ChainerMN starts from
        # zeros, a variance no data has).
        self.avg_var = numpy.ones(size, dtype=self._highprec_dtype)
        self.register_persistent('avg_var')
        self.N = 0
        self.register_persistent('N')
        with self.init_scope():
            if use_gamma:
                self.gamma = self._parameter(initial_gamma, 1, size)
            if use_beta:
                self.beta = self._parameter(initial_beta, 0, size)

    def _parameter(self, initial, default, size):
        initializer = initializers._get_initializer(
            default if initial is None else initial)
        initializer.dtype = self._highprec_dtype
        return variable.Parameter(initializer, size)

    def _constant(self, name, fill):
        if hasattr(self, name):
            return getattr(self, name)
        value = self.xp.full(self.avg_mean.shape, fill,
                             dtype=self._highprec_dtype)
        return variable.Variable(value)

    def forward(self, x, finetune=False):
        """forward(x, finetune=False): normalize ``x`` (channels on axis 1
        onwards, shaped like ``size``)."""
        gamma = self._constant('gamma', 1)
        beta = self._constant('beta', 0)
        if not chainer.config.train:
            return batch_normalization.fixed_batch_normalization(
                x, gamma, beta, variable.Variable(self.avg_mean),
                variable.Variable(self.avg_var), self.eps)
        if finetune:
            self.N += 1
            decay = 1. - 1. / self.N
        else:
            decay = self.decay
        return multi_node_batch_normalization(
            x, gamma, beta, self.comm, self.eps, self.avg_mean,
            self.avg_var, decay)

    def start_finetuning(self):
        """start_finetuning(): restart the population count of finetune."""
        self.N = 0

    def __deepcopy__(self, memo):
        # The communicator is shared, never copied (it owns MPI handles).
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        memo[id(self.comm)] = self.comm
        for name, value in self.__dict__.items():
            clone.__dict__[name] = copy.deepcopy(value, memo)
        return clone
