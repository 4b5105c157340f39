"""Differentiable collectives: allgather, alltoall, bcast, gather, scatter,
allreduce.

Every rank of the communicator must call the same function, in forward and
(through Chainer's backward) in backward. Each node takes a trailing dummy
input that requires grad, so its backward runs on every rank whose output
is reached, even where the real input needs no gradient or there is none
(non-root ``bcast`` / ``scatter``, chainer#5512 and chainermn#214).
"""
import chainer
from chainer import backend

from chainermn_lite.functions import _wire

__all__ = ['AllGather', 'AllToAll', 'Bcast', 'Gather', 'Scatter',
           'AllReduce', 'allgather', 'alltoall', 'bcast', 'gather',
           'scatter', 'allreduce']


class _Collective(chainer.FunctionNode):
    """Shared bookkeeping: the communicator and the dummy input's index."""

    def __init__(self, comm):
        self.comm = comm

    def _remember(self, inputs, outputs):
        self._xp = backend.get_array_module(inputs[-1])
        self._n_real = len(inputs) - 1
        self._out_specs = [(y.shape, y.dtype) for y in outputs]
        return outputs

    def _grad_arrays(self, grad_outputs):
        """Output gradients as arrays; a missing one counts as zeros."""
        xp = self._xp
        return tuple(xp.zeros(s, dtype=d) if g is None else g.array
                     for g, (s, d) in zip(grad_outputs, self._out_specs))

    def _pick(self, indexes, grads):
        """Gradients for ``indexes``: ``grads`` for real inputs, an empty
        one for the dummy."""
        out = []
        for i in indexes:
            if i == self._n_real:
                out.append(_wire.as_grad(_wire.empty_delegate(self._xp)))
            else:
                out.append(_wire.as_grad(grads[i]))
        return tuple(out)


class AllGather(_Collective):
    """Every rank gets every rank's x; gradients are summed back."""

    def forward(self, inputs):
        return self._remember(inputs, self.comm.allgather(inputs[0]))

    def backward(self, indexes, grad_outputs):
        parts = self.comm.alltoall(self._grad_arrays(grad_outputs))
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        return self._pick(indexes, (total,))


class AllToAll(_Collective):
    """Rank j gets everyone's xs[j]; gradients go back the same way."""

    def forward(self, inputs):
        return self._remember(inputs, self.comm.alltoall(inputs[:-1]))

    def backward(self, indexes, grad_outputs):
        grads = self.comm.alltoall(self._grad_arrays(grad_outputs))
        return self._pick(indexes, grads)


class Bcast(_Collective):
    """Root's x on every rank; gradients are summed at root."""

    def __init__(self, comm, root):
        super().__init__(comm)
        self.root = root

    def forward(self, inputs):
        is_root = self.comm.rank == self.root
        y = self.comm.bcast(inputs[0] if is_root else None, root=self.root)
        return self._remember(inputs, (y,))

    def backward(self, indexes, grad_outputs):
        gy, = self._grad_arrays(grad_outputs)
        parts = self.comm.gather(gy, root=self.root)
        if self.comm.rank != self.root:
            return self._pick(indexes, ())
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        return self._pick(indexes, (total,))


class Gather(_Collective):
    """Every rank's x at root; elsewhere an empty delegate output."""

    def __init__(self, comm, root):
        super().__init__(comm)
        self.root = root

    def forward(self, inputs):
        ys = self.comm.gather(inputs[0], root=self.root)
        if self.comm.rank != self.root:
            ys = (_wire.empty_delegate(backend.get_array_module(inputs[0])),)
        return self._remember(inputs, ys)

    def backward(self, indexes, grad_outputs):
        if self.comm.rank == self.root:
            gx = self.comm.scatter(self._grad_arrays(grad_outputs),
                                   root=self.root)
        else:
            gx = self.comm.scatter(None, root=self.root)
        return self._pick(indexes, (gx,))


class Scatter(_Collective):
    """Rank i gets root's xs[i]; gradients are gathered at root."""

    def __init__(self, comm, root):
        super().__init__(comm)
        self.root = root

    def forward(self, inputs):
        if self.comm.rank == self.root:
            y = self.comm.scatter(inputs[:-1], root=self.root)
        else:
            y = self.comm.scatter(None, root=self.root)
        return self._remember(inputs, (y,))

    def backward(self, indexes, grad_outputs):
        gy, = self._grad_arrays(grad_outputs)
        grads = self.comm.gather(gy, root=self.root)
        return self._pick(indexes, grads or ())


class AllReduce(_Collective):
    """The elementwise sum of every rank's x, on every rank."""

    def forward(self, inputs):
        return self._remember(inputs, (self.comm.allreduce(inputs[0]),))

    def backward(self, indexes, grad_outputs):
        gy, = self._grad_arrays(grad_outputs)
        return self._pick(indexes, (self.comm.allreduce(gy),))


def _dummy(x=None):
    """A fresh empty Variable that requires grad, on x's device."""
    if x is None:
        return chainer.Variable(_wire.empty_delegate())
    array = x.array if isinstance(x, chainer.Variable) else x
    return chainer.Variable(
        _wire.empty_delegate(backend.get_array_module(array)))


def allgather(comm, x):
    """allgather(comm, x): tuple of every rank's ``x`` (as Variables).

    Backward sums, on each rank, the gradients every rank computed for its
    ``x``.
    """
    return AllGather(comm).apply((x, _dummy(x)))


def alltoall(comm, xs):
    """alltoall(comm, xs): tuple whose i-th Variable is rank i's ``xs[me]``.

    ``xs`` holds one Variable per rank. Backward sends gradients back.
    """
    if len(xs) != comm.size:
        raise ValueError('alltoall: expecting {} variables (one per rank), '
                         'got {} (rank {})'.format(comm.size, len(xs),
                                                   comm.rank))
    return AllToAll(comm).apply(tuple(xs) + (_dummy(xs[0]),))


def bcast(comm, x, root=0):
    """bcast(comm, x, root=0): root's ``x`` as a Variable on every rank.

    ``x`` is ignored (may be None) on non-root ranks. Backward sums every
    rank's gradient into root's ``x``; non-root ranks keep a backward path,
    so they must back-propagate through the result too.
    """
    _wire.check_root(comm, root, 'bcast')
    if comm.rank == root:
        if x is None:
            raise ValueError('bcast: root {} must give x'.format(root))
        y, = Bcast(comm, root).apply((x, _dummy(x)))
    else:
        y, = Bcast(comm, root).apply((_dummy(),))
    return y


def gather(comm, x, root=0):
    """gather(comm, x, root=0): at root a tuple of every rank's ``x``;
    elsewhere a delegate variable to back-propagate from.

    Backward scatters root's gradients back to each rank's ``x``.
    """
    _wire.check_root(comm, root, 'gather')
    ys = Gather(comm, root).apply((x, _dummy(x)))
    return ys if comm.rank == root else ys[0]


def scatter(comm, xs, root=0):
    """scatter(comm, xs, root=0): rank i gets root's ``xs[i]``.

    ``xs`` (one Variable per rank) is only read at root. Backward gathers
    the gradients into root's ``xs``.
    """
    _wire.check_root(comm, root, 'scatter')
    if comm.rank == root:
        if xs is None or len(xs) != comm.size:
            raise ValueError('scatter: root {} must give {} variables (one '
                             'per rank), got {}'.format(
                                 root, comm.size,
                                 None if xs is None else len(xs)))
        y, = Scatter(comm, root).apply(tuple(xs) + (_dummy(xs[0]),))
    else:
        y, = Scatter(comm, root).apply((_dummy(),))
    return y


def allreduce(comm, x):
    """allreduce(comm, x): the sum of every rank's ``x``, on every rank.

    Not in ChainerMN. Backward is again an allreduce of the gradients.
    """
    y, = AllReduce(comm).apply((x, _dummy(x)))
    return y
