"""vecpar (neon's LayerDist): linear layers over features split by rank.

Rank ``r`` of a communicator of ``n`` ranks holds the features
``numpy.array_split(range(size), n)[r]`` of a 1-d feature vector (per
sample: arrays are ``(batch, features)``).

Gradients follow the replicated convention: a tensor that every rank holds
whole (the input before ``split_features``, the output of
``gather_features``) is computed identically on every rank, and each rank's
gradient of it is the whole gradient. So ``split_features`` gathers in
backward and ``gather_features`` just keeps this rank's slice.
"""
import chainer
import numpy

from chainermn_lite import _wire
from chainermn_lite.parallel import buffer_collectives
from chainermn_lite.parallel.grid import as_mpi_comm
from chainermn_lite.parallel.grid import axis_bounds

__all__ = ['feature_bounds', 'split_features', 'gather_features',
           'vecpar_linear']


def feature_bounds(size, comm):
    """feature_bounds(size, comm): (start, stop) of this rank's features."""
    mpi_comm = as_mpi_comm(comm)
    return axis_bounds(size, mpi_comm.Get_size())[mpi_comm.Get_rank()]


def _check_2d(x, what):
    """``x``, if it is a (batch, features) array."""
    if x.ndim != 2:
        raise ValueError('{} expects (batch, features) arrays, got shape '
                         '{}'.format(what, x.shape))
    return x


class SplitFeatures(chainer.function_node.FunctionNode):
    """Whole (replicated) features -> this rank's slice."""

    def __init__(self, mpi_comm):
        self.mpi_comm = mpi_comm

    def forward(self, inputs):
        x, = inputs
        _check_2d(x, 'split_features')
        size = self.mpi_comm.Get_size()
        if x.shape[1] < size:
            raise ValueError(
                'split_features: {} features cannot be split over {} '
                'ranks'.format(x.shape[1], size))
        self.counts = [b - a for a, b in axis_bounds(x.shape[1], size)]
        start, stop = axis_bounds(x.shape[1], size)[
            self.mpi_comm.Get_rank()]
        return numpy.ascontiguousarray(x[:, start:stop]),

    def backward(self, indexes, grad_outputs):
        gy, = grad_outputs
        gy_t = gy.array.T
        gx_t = buffer_collectives.allgatherv_rows(self.mpi_comm, gy_t,
                                                  self.counts)
        return chainer.Variable(numpy.ascontiguousarray(gx_t.T)),


class GatherFeatures(chainer.function_node.FunctionNode):
    """This rank's slice -> whole features on every rank."""

    def __init__(self, mpi_comm):
        self.mpi_comm = mpi_comm

    def forward(self, inputs):
        x, = inputs
        # A rank's wrong slice raises on every rank.
        _, descs = _wire.allgather_descriptors(
            self.mpi_comm, lambda: _check_2d(x, 'gather_features'),
            'gather_features')
        shapes = [shape for _, shape in descs]
        counts = [s[1] if len(s) == 2 else -1 for s in shapes]
        total = sum(counts)
        expected = [b - a for a, b in axis_bounds(total,
                                                  len(shapes))]
        if (len({s[:1] for s in shapes}) != 1 or counts != expected
                or any(len(s) != 2 for s in shapes)):
            raise ValueError(
                'gather_features: the slices do not form one feature '
                'vector: shapes by rank {} (feature counts must be '
                'numpy.array_split of their total, e.g. {}, with one '
                'batch size)'.format(shapes, expected))
        rank = self.mpi_comm.Get_rank()
        self.start = sum(counts[:rank])
        self.stop = self.start + counts[rank]
        full_t = buffer_collectives.allgatherv_rows(self.mpi_comm, x.T,
                                                    counts)
        return numpy.ascontiguousarray(full_t.T),

    def backward(self, indexes, grad_outputs):
        gy, = grad_outputs
        return chainer.Variable(numpy.ascontiguousarray(
            gy.array[:, self.start:self.stop])),


def split_features(x, comm):
    """split_features(x, comm): this rank's features of a whole batch.

    ``x`` is ``(batch, features)``, the same on every rank; the result is
    ``x[:, start:stop]`` with this rank's ``numpy.array_split`` bounds.
    Differentiable (backward gathers the slices' gradients).
    """
    return SplitFeatures(as_mpi_comm(comm)).apply((x,))[0]


def gather_features(x, comm):
    """gather_features(x, comm): the whole features from every rank's slice.

    The inverse of ``split_features``; every rank gets the whole
    ``(batch, features)`` array. Differentiable (backward keeps this rank's
    slice of the gradient).
    """
    return GatherFeatures(as_mpi_comm(comm)).apply((x,))[0]


class VecparLinearFunction(chainer.function_node.FunctionNode):
    """y_r = (x_r @ W_r.T summed over ranks)[out_r] + b_r.

    ``W_r`` is ``W[:, in_r]`` (all outputs, this rank's inputs). One
    reduce-scatter forward, one allgather backward.
    """

    def __init__(self, mpi_comm, out_counts):
        self.mpi_comm = mpi_comm
        self.out_counts = out_counts

    def forward(self, inputs):
        x, W = inputs[:2]
        rank = self.mpi_comm.Get_rank()
        if x.ndim != 2 or x.shape[1] != W.shape[1]:
            raise ValueError(
                'vecpar_linear: rank {} holds {} input features (W has '
                'shape {}) but got x of shape {}'.format(
                    rank, W.shape[1], W.shape, x.shape))
        if x.dtype != W.dtype:
            raise TypeError('vecpar_linear: x dtype {} differs from W '
                            'dtype {}'.format(x.dtype, W.dtype))
        self.retain_inputs((0, 1))
        # (out, batch) rows: the reduce-scatter splits along outputs.
        partial_t = W.dot(x.T)
        y_t = buffer_collectives.reduce_scatter_rows(
            self.mpi_comm, partial_t, self.out_counts)
        y = numpy.ascontiguousarray(y_t.T)
        if len(inputs) == 3:
            y += inputs[2]
        return y,

    def backward(self, indexes, grad_outputs):
        x, W = self.get_retained_inputs()
        gy, = grad_outputs
        gy_full_t = buffer_collectives.allgatherv_rows(
            self.mpi_comm, gy.array.T, self.out_counts)
        grads = []
        for i in indexes:
            if i == 0:
                grads.append(gy_full_t.T.dot(W.array))
            elif i == 1:
                grads.append(gy_full_t.dot(x.array))
            else:
                grads.append(gy.array.sum(axis=0))
        return tuple(chainer.Variable(g.astype(x.dtype, copy=False))
                     for g in grads)


def vecpar_linear(x, W, b, comm, out_size):
    """vecpar_linear(x, W, b, comm, out_size): one vecpar linear layer.

    ``x`` is ``(batch, in_r)``, ``W`` is ``(out_size, in_r)`` (this rank's
    input columns of the whole matrix), ``b`` is ``(out_r,)`` or None. The
    result is ``(batch, out_r)``: this rank's outputs of ``x_full @ W.T +
    b``.
    """
    mpi_comm = as_mpi_comm(comm)
    counts = [b_ - a for a, b_ in axis_bounds(out_size,
                                                mpi_comm.Get_size())]
    if W.shape[0] != out_size:
        raise ValueError('vecpar_linear: W has {} rows but out_size is '
                         '{}'.format(W.shape[0], out_size))
    inputs = (x, W) if b is None else (x, W, b)
    return VecparLinearFunction(mpi_comm, counts).apply(inputs)[0]
