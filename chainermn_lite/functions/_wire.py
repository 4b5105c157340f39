"""The differentiable functions' tag convention, and their delegates.

Every user tag ``t`` of ``functions.send`` / ``recv`` becomes two MPI
tags: ``forward_tag(t) == 2 * t`` carries the forward activations and
``backward_tag(t) == 2 * t + 1`` the backward gradients; ``user_tag``
maps an MPI tag back to ``(t, phase)``. A gradient therefore can never be
taken for the next iteration's activation, even when a peer runs ahead
(MPI buffers small sends eagerly, so a mix-up would otherwise corrupt
training silently). Only chainermn_lite's own functions speak this
convention: pair ``functions.send`` with ``functions.recv``, not with the
communicator's ``recv``.

What goes on the wire otherwise (descriptors, frames) is
``chainermn_lite._wire``'s, and so are the checks of peers, roots and tags:
``check_peer``, ``check_root`` and ``check_tag`` below only take them from
a communicator.
"""
import chainer
import numpy
from chainer import backend

from chainermn_lite import _wire

__all__ = ['FORWARD', 'BACKWARD', 'PHASES', 'TAGS_PER_USER_TAG',
           'forward_tag', 'backward_tag', 'user_tag', 'check_peer',
           'check_root', 'check_tag', 'array_module', 'empty_delegate',
           'zeros_grad', 'as_grad']

FORWARD = 'forward'
BACKWARD = 'backward'
# MPI tag = TAGS_PER_USER_TAG * user tag + PHASES.index(phase)
PHASES = (FORWARD, BACKWARD)
TAGS_PER_USER_TAG = len(PHASES)


def forward_tag(tag):
    """The MPI tag that carries forward data for user tag ``tag``."""
    return TAGS_PER_USER_TAG * tag


def backward_tag(tag):
    """The MPI tag that carries gradients for user tag ``tag``."""
    return TAGS_PER_USER_TAG * tag + 1


def user_tag(wire_tag):
    """``(user tag, phase)`` of an MPI tag of the functions, ``phase``
    being ``FORWARD`` or ``BACKWARD``; ValueError for a negative tag
    (``ANY_TAG`` and the like are no function's tag)."""
    wire_tag = _wire.check_tag(wire_tag, 'user_tag')
    tag, phase = divmod(wire_tag, TAGS_PER_USER_TAG)
    return tag, PHASES[phase]


def check_peer(communicator, rank, what):
    """``rank`` as an int peer of ``communicator``: in range and not the
    caller's own rank (ValueError naming it otherwise)."""
    return _wire.check_peer(rank, communicator.size, communicator.rank, what)


def check_root(communicator, root, what):
    """``root`` as an int rank of ``communicator`` (ValueError naming it
    otherwise)."""
    return _wire.check_root(root, communicator.size, communicator.rank, what)


def check_tag(tag, what, communicator):
    """``tag`` as an int >= 0 (ValueError naming it otherwise)."""
    return _wire.check_tag(tag, what, communicator.rank)


def array_module(array):
    """``backend.get_array_module(array)``, without its dispatch for the
    common NumPy array."""
    if type(array) is numpy.ndarray:
        return numpy
    return backend.get_array_module(array)


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
