"""What the differentiable communication functions put on the wire.

Every user tag ``t`` becomes two MPI tags: ``2 * t`` carries the forward
activations and ``2 * t + 1`` the backward gradients. A gradient therefore
can never be taken for the next iteration's activation, even when a peer
runs ahead (MPI buffers small sends eagerly, so a mix-up would otherwise
corrupt training silently). Only chainermn_lite's own functions speak this
convention: pair ``functions.send`` with ``functions.recv``, not with the
communicator's ``recv``.
"""
import chainer
import numpy

__all__ = ['forward_tag', 'backward_tag', 'user_tag', 'check_tag',
           'check_peer',
           'empty_delegate', 'zeros_grad', 'as_grad']


def check_tag(tag, what):
    """``tag`` as an int >= 0, or ValueError naming it."""
    if not isinstance(tag, (int, numpy.integer)) or isinstance(tag, bool) \
            or tag < 0:
        raise ValueError('{}: tag must be an int >= 0, got {!r}'.format(
            what, tag))
    return int(tag)


def forward_tag(tag):
    """The MPI tag that carries forward data for user tag ``tag``."""
    return 2 * tag


def backward_tag(tag):
    """The MPI tag that carries gradients for user tag ``tag``."""
    return 2 * tag + 1


def user_tag(wire_tag):
    """The user tag whose forward or backward messages use ``wire_tag``."""
    return wire_tag // 2


def check_peer(communicator, rank, what):
    """Refuse a peer out of range or equal to the caller's own rank."""
    size = communicator.size
    if not isinstance(rank, (int, numpy.integer)) or isinstance(rank, bool) \
            or not 0 <= rank < size:
        raise ValueError('{}: rank {!r} is out of range for a communicator '
                         'of size {} (called on rank {})'.format(
                             what, rank, size, communicator.rank))
    if rank == communicator.rank:
        # A blocking send to oneself is only returned from if MPI buffers
        # it, and in backward both directions would wait on each other.
        raise ValueError('{}: rank {} cannot communicate with itself '
                         '(rank={}); that deadlocks'.format(
                             what, communicator.rank, rank))
    return int(rank)


def empty_delegate(xp=numpy):
    """A fresh, empty float32 array: the data of a delegate variable."""
    return xp.empty((0,), dtype=numpy.float32)


def zeros_grad(shape, dtype, xp=numpy):
    """A zero gradient (as a Variable) for an input of shape and dtype."""
    return chainer.Variable(xp.zeros(shape, dtype=dtype),
                            requires_grad=False)


def as_grad(array):
    """Wrap a received gradient array as a Variable without a graph."""
    return chainer.Variable(array, requires_grad=False)
