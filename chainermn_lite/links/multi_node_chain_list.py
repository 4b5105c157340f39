"""MultiNodeChainList: a rank's share of a model split across ranks.

Components run in the order they were added. Each one takes its inputs from
the model's arguments (``rank_in=None``) or from other ranks, and hands its
output back as the model output (``rank_out=None``) or to other ranks. All
communication of one forward pass is threaded on one chain of delegate
variables, so backward replays it in exactly the reverse order and users
never touch a delegate variable.

Tags: the k-th message this rank sends to rank p in one forward pass gets
tag ``k`` (and p's k-th receive from this rank expects tag ``k``), so every
edge and every repeated exchange has its own tag rather than one tag for
all; a wrongly wired model then stops with a clear error instead of taking
one component's data for another's.
"""
import collections

import chainer

from chainermn_lite.functions import point_to_point
from chainermn_lite.functions.pseudo_connect import pseudo_connect
from chainermn_lite._checks import check_communicator

__all__ = ['MultiNodeChainList']


def _ranks(value, what, comm):
    """None or a tuple of valid ranks."""
    if value is None:
        return None
    ranks = (value,) if isinstance(value, int) else tuple(value)
    if not ranks:
        raise ValueError('add_link: {} is an empty list; use None for '
                         '"no other rank"'.format(what))
    for r in ranks:
        if not isinstance(r, int) or isinstance(r, bool) or \
                not 0 <= r < comm.size:
            raise ValueError('add_link: {} contains {!r}, not a rank of a '
                             'communicator of size {} (rank {})'.format(
                                 what, r, comm.size, comm.rank))
    return ranks


def _handle(x):
    """One Variable of ``x`` (a Variable or a tuple) to hang the chain on."""
    return x[-1] if isinstance(x, tuple) else x


def _connect(delegate, x):
    """``x`` (Variable or tuple) joined to ``delegate`` for backward."""
    if delegate is None:
        return x
    if isinstance(x, tuple):
        out = pseudo_connect(delegate, *x)
        return out if isinstance(out, tuple) else (out,)
    return pseudo_connect(delegate, x)


class MultiNodeChainList(chainer.ChainList):
    """MultiNodeChainList(comm): components of a model on this rank."""

    def __init__(self, comm):
        check_communicator(comm, 'MultiNodeChainList')
        super().__init__()
        self._comm = comm
        self._rank_inouts = []

    def add_link(self, link, rank_in=None, rank_out=None):
        """add_link(link, rank_in=None, rank_out=None): add a component.

        ``rank_in``: None (take the model's arguments), a rank or a list of
        ranks to receive the inputs from (one positional argument each).
        ``rank_out``: None (this is the model output; at most one such
        component), a rank or a list of ranks to send the output to.
        A rank may name itself: the value is handed over in-process.
        """
        rank_in = _ranks(rank_in, 'rank_in', self._comm)
        rank_out = _ranks(rank_out, 'rank_out', self._comm)
        if rank_out is None and any(out is None
                                    for _, out in self._rank_inouts):
            raise ValueError('add_link: only one component can produce the '
                             'model output (rank_out=None); rank {} already '
                             'has one'.format(self._comm.rank))
        super().add_link(link)
        self._rank_inouts.append((rank_in, rank_out))

    def forward(self, *inputs):
        """Run the components; returns the model output, or, when this rank
        has none, the delegate variable to call ``backward()`` on."""
        comm = self._comm
        sent = collections.Counter()
        received = collections.Counter()
        local = collections.deque()
        delegate = None
        output = None
        for link, (rank_in, rank_out) in zip(self._children,
                                             self._rank_inouts):
            if rank_in is None:
                xs = inputs
                if delegate is not None and inputs:
                    xs = _connect(delegate, tuple(inputs))
            else:
                xs = []
                for r in rank_in:
                    if r == comm.rank:
                        if not local:
                            raise ValueError(
                                'MultiNodeChainList: rank {} expects an '
                                'input from itself but no earlier '
                                'component sent one'.format(comm.rank))
                        x = _connect(delegate, local.popleft())
                    else:
                        x = point_to_point.recv(
                            comm, r, delegate_variable=delegate,
                            tag=received[r])
                        received[r] += 1
                    xs.append(x)
                    delegate = _handle(x)
            # Joined again in case the link ignored its inputs.
            y = link(*xs)
            if rank_out is None:
                output = _connect(delegate, y)
                delegate = _handle(output)
                continue
            for r in rank_out:
                y = _connect(delegate, y)
                if r == comm.rank:
                    local.append(y)
                    delegate = _handle(y)
                else:
                    delegate = point_to_point.send(y, comm, r, tag=sent[r])
                    sent[r] += 1
        if local:
            raise ValueError(
                'MultiNodeChainList: rank {} sent {} value(s) to itself that '
                'no component received; check rank_in / rank_out'.format(
                    comm.rank, len(local)))
        if output is None:
            return delegate
        if delegate is _handle(output):
            return output
        return _connect(delegate, output)
