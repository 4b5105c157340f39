"""Differentiable send / recv between two ranks of a communicator.

``send`` returns a *delegate variable*: an empty variable whose backward
receives the gradients of what was sent. ``recv`` returns the received
data; its backward sends the gradients back. Forward data and gradients
travel on different MPI tags (see ``_wire``).

A gradient has the shape and dtype of the array it belongs to, which both
ranks learnt in forward, so on a communicator with ``send_exact`` /
``recv_exact`` (every chainermn_lite one) backward moves the bare bytes:
one message per array, received into a fresh array, as a hand-written
mpi4py program would. Other communicators get their ``send`` / ``recv``.
"""
import chainer
import numpy
from chainer import backend

from chainermn_lite.functions import _wire

__all__ = ['Send', 'Recv', 'send', 'recv']


class Send(chainer.FunctionNode):
    """Send its inputs (all but the trailing dummy, if ``dummy``) to
    ``peer``."""

    def __init__(self, comm, peer, tag, as_tuple, dummy=True):
        self.comm = comm
        self.peer = peer
        self.tag = tag
        self.as_tuple = as_tuple
        self.dummy = dummy

    @property
    def label(self):
        return 'Send (peer_rank: {}, tag: {})'.format(self.peer, self.tag)

    def forward(self, inputs):
        xs = inputs[:-1] if self.dummy else inputs
        self._specs = [(x.shape, x.dtype) for x in xs]
        self._xp = _wire.array_module(inputs[-1])
        self.comm.send(xs if self.as_tuple else xs[0], self.peer,
                       _wire.forward_tag(self.tag))
        return _wire.empty_delegate(self._xp),

    def backward(self, indexes, grad_outputs):
        specs = self._specs
        recv_exact = getattr(self.comm, 'recv_exact', None)
        if recv_exact is not None:
            # Fresh arrays of exactly ``specs``: nothing to check.
            grads = recv_exact(specs, self.peer,
                               _wire.backward_tag(self.tag))
        else:
            grads = self._recv_checked(specs)
        if self._xp is not numpy:
            # MPI moved them through host memory: back to the device.
            grads = [self._xp.asarray(g) for g in grads]
        n = len(specs)
        # The dummy input (index n, if any) only makes backward reach this
        # node; it needs no gradient.
        return tuple(None if i == n else _wire.as_grad(grads[i])
                     for i in indexes)

    def _recv_checked(self, specs):
        """The gradients from a communicator without ``recv_exact``,
        checked against ``specs``."""
        got = self.comm.recv(self.peer, _wire.backward_tag(self.tag))
        grads = got if isinstance(got, tuple) else (got,)
        if len(grads) != len(specs) or any(
                g.shape != s or g.dtype != d
                for g, (s, d) in zip(grads, specs)):
            raise ValueError(
                'send backward: rank {} expected gradients {} from rank {} '
                '(tag {}) but got {}'.format(
                    self.comm.rank, [(s, str(d)) for s, d in specs],
                    self.peer, self.tag,
                    [(g.shape, str(g.dtype)) for g in grads]))
        return grads


class Recv(chainer.FunctionNode):
    """Receive an array or a tuple of arrays from ``peer``."""

    def __init__(self, comm, peer, tag, device=None):
        self.comm = comm
        self.peer = peer
        self.tag = tag
        self.device = device

    @property
    def label(self):
        return 'Recv (peer_rank: {}, tag: {})'.format(self.peer, self.tag)

    def forward(self, inputs):
        delegate, = inputs
        self._delegate_spec = (delegate.shape, delegate.dtype)
        self._xp = _wire.array_module(delegate)
        got = self.comm.recv(self.peer, _wire.forward_tag(self.tag))
        self.as_tuple = isinstance(got, tuple)
        ys = got if self.as_tuple else (got,)
        if self.device is not None:
            ys = tuple(self.device.send(y) for y in ys)
        self._specs = [(y.shape, y.dtype) for y in ys]
        return ys

    def backward(self, indexes, grad_outputs):
        gys = []
        for gy, (shape, dtype) in zip(grad_outputs, self._specs):
            if gy is None:
                # The peer's send waits for a gradient of every array.
                gys.append(self._xp.zeros(shape, dtype=dtype))
            else:
                gys.append(gy.array)
        send_exact = getattr(self.comm, 'send_exact', None)
        if send_exact is not None:
            send_exact(gys, self.peer, _wire.backward_tag(self.tag))
        else:
            self.comm.send(tuple(gys) if self.as_tuple else gys[0],
                           self.peer, _wire.backward_tag(self.tag))
        # A non-None gradient keeps Chainer walking into the delegate's
        # creator (the previous send), so its backward runs next.
        shape, dtype = self._delegate_spec
        return _wire.zeros_grad(shape, dtype, self._xp),


def _as_variables(x):
    if isinstance(x, (tuple, list)):
        if not x:
            raise ValueError('send: nothing to send (empty {})'.format(
                type(x).__name__))
        return tuple(chainer.as_variable(v) for v in x), True
    return (chainer.as_variable(x),), False


def send(x, communicator, rank, tag=0):
    """send(x, communicator, rank, tag=0): send ``x`` to ``rank``.

    ``x`` is a Variable (or array) or a tuple/list of them. Returns the
    delegate variable: pass it to the next ``recv`` (``delegate_variable``)
    or to ``pseudo_connect``, or return it from the model, so that backward
    reaches this send and receives its gradients. Backward runs even when
    ``x`` needs no gradient, so the receiving rank never waits forever.
    """
    tag = _wire.check_tag(tag, 'send', communicator)
    rank = _wire.check_peer(communicator, rank, 'send')
    xs, as_tuple = _as_variables(x)
    node = Send(communicator, rank, tag, as_tuple,
                dummy=not any(v.requires_grad for v in xs))
    if node.dummy:
        # A dummy input that requires grad, so that backward reaches this
        # node (and receives what the peer sends back) all the same.
        xp = _wire.array_module(xs[0].array)
        xs += (chainer.Variable(_wire.empty_delegate(xp)),)
    delegate, = node.apply(xs)
    delegate.name = 'delegate_variable'
    return delegate


def recv(communicator, rank, delegate_variable=None, tag=0, force_tuple=False,
         device=None):
    """recv(communicator, rank, delegate_variable=None, tag=0,
    force_tuple=False): receive what ``rank`` sent with ``send``.

    Returns a Variable, or a tuple of Variables when a tuple was sent (or
    ``force_tuple``). Backward sends the gradients back to ``rank``, then
    continues into ``delegate_variable`` (the output of the previous
    component of this rank's graph, typically a ``send``'s delegate).
    ``device`` (a Chainer device specifier; not in ChainerMN, so it comes
    after ChainerMN's positional arguments) moves the received arrays.
    """
    tag = _wire.check_tag(tag, 'recv', communicator)
    rank = _wire.check_peer(communicator, rank, 'recv')
    if delegate_variable is None:
        delegate_variable = chainer.Variable(_wire.empty_delegate())
    elif isinstance(delegate_variable, (tuple, list)):
        raise TypeError('recv: delegate_variable must be one Variable, got a '
                        '{} of {}'.format(type(delegate_variable).__name__,
                                          len(delegate_variable)))
    if device is not None:
        device = backend.get_device(device)
    ys = Recv(communicator, rank, tag, device).apply((delegate_variable,))
    if len(ys) == 1 and not force_tuple:
        return ys[0]
    return ys
