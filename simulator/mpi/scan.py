"""Prefix reductions (``Scan``, ``Exscan``, their non-blocking,
persistent and object forms), an ``Intracomm`` mixin: mpi4py has them on
intracommunicators only.

Open MPI 5.0 (single node, default parameters) runs both with
``coll/basic``'s linear algorithm: rank ``r`` receives the prefix of ranks
``0..r-1`` and combines it with its own block, so every prefix is the left
chain ``((x0 op x1) op x2) ... op xr``. The simulator combines in that
order, which makes float results bit-identical (checked by
tests/simulator/test_conformance_collectives.py under mpiexec).
"""
import numpy as np

from simulator.mpi import pickling
from simulator.mpi.coll import (_check_blocks, _check_op,
                                _check_same_count, _check_same_datatype,
                                _op_name, _prefix, _run)
from simulator.mpi.msgspec import parse, parse_send
from simulator.mpi.ops import OP_NAMES
from simulator.mpi.pcoll import _init

__all__ = ['Scans']

SUM = OP_NAMES['SUM']


def _left_chain_prefixes(op, args, exclusive):
    """Every rank's prefix; None for rank 0 of an exclusive scan."""
    prefixes, acc = [], None
    for block in args:
        if exclusive:
            prefixes.append(None if acc is None else acc)
        if acc is None:
            acc = block.copy()
        else:
            combined = np.empty_like(block)
            op._combine_into(combined, acc, block)
            acc = combined
        if not exclusive:
            prefixes.append(acc)
    return prefixes


def _scan(self, op_name, sendbuf, recvbuf, op, exclusive):
    op = _check_op(op)
    s = self._s
    recv = parse(recvbuf, '{} receive buffer'.format(op_name),
                 writable=True)
    send = parse_send(sendbuf, '{} send buffer'.format(op_name))
    _check_same_datatype(send, recv)
    source = recv.head() if send.in_place else send.head()
    _check_op(op, source.dtype, op_name,
              (recv if send.in_place else send).datatype)
    if not send.in_place:
        _check_same_count(send, recv)
    out = recv.head(source.size)

    def combine(args):
        # Runs once every rank has arrived and before any leaves, so the
        # contributions can be read in place (IN_PLACE included).
        _check_blocks(op_name, s.name, args)
        return _left_chain_prefixes(op, args, exclusive)

    def finish(st, slot):
        prefix = slot.result[st.rank]
        # Open MPI leaves rank 0's receive buffer alone in Exscan.
        if prefix is not None:
            out[...] = prefix
    # Rank 0's receive buffer of Exscan is neither read nor written
    # (but IN_PLACE it is what rank 0 sends).
    skipped = exclusive and s.rank == 0 and not send.in_place
    return _run(self, op_name, (('op', op._name), ('count', source.size),
                                ('dtype', str(source.dtype))),
                source, finish, combine,
                watch=None if send.in_place else source,
                receives=None if skipped else out)


class Scans:
    """Prefix reductions; mixed into ``simulator.mpi.Intracomm``."""

    def Scan(self, sendbuf, recvbuf, op=SUM):
        """Rank ``r`` gets ``op`` over the blocks of ranks ``0..r``."""
        _scan(self, 'Scan', sendbuf, recvbuf, op, exclusive=False)

    def Exscan(self, sendbuf, recvbuf, op=SUM):
        """Rank ``r > 0`` gets ``op`` over the blocks of ranks ``0..r-1``;
        rank 0's receive buffer is left as it was."""
        _scan(self, 'Exscan', sendbuf, recvbuf, op, exclusive=True)

    def Iscan(self, sendbuf, recvbuf, op=SUM):
        """Non-blocking Scan."""
        return _scan(self, 'Iscan', sendbuf, recvbuf, op, exclusive=False)

    def Iexscan(self, sendbuf, recvbuf, op=SUM):
        """Non-blocking Exscan."""
        return _scan(self, 'Iexscan', sendbuf, recvbuf, op, exclusive=True)

    def Scan_init(self, sendbuf, recvbuf, op=SUM, info=None):
        """A persistent Scan."""
        return _init(self, 'Iscan', sendbuf, recvbuf, op)

    def Exscan_init(self, sendbuf, recvbuf, op=SUM, info=None):
        """A persistent Exscan."""
        return _init(self, 'Iexscan', sendbuf, recvbuf, op)

    def scan(self, sendobj, op=SUM):
        """Inclusive prefix reduction of objects over ranks 0..rank."""
        return _run(self, 'scan', (('op', _op_name(op)),),
                    pickling.dumps(sendobj),
                    lambda s, slot: pickling.loads(slot.result[s.rank]),
                    combine=_prefix(op, False))

    def exscan(self, sendobj, op=SUM):
        """Exclusive prefix reduction (None on rank 0)."""
        return _run(self, 'exscan', (('op', _op_name(op)),),
                    pickling.dumps(sendobj),
                    lambda s, slot: pickling.loads(slot.result[s.rank]),
                    combine=_prefix(op, True))
