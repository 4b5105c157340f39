"""User-level failure mitigation (ULFM) on communicators: ``Revoke``,
``Is_revoked``, ``Agree``/``Iagree``, ``Shrink``/``Ishrink``,
``Get_failed`` and ``Ack_failed``, as Open MPI 5.0 offers them.

No simulated rank ever fails (a rank that raises ends the world), so the
failed group is always empty, an agreement is the bitwise AND of every
rank's flag and a shrink is a new communicator over the same group.
``Revoke`` is the part with effect: it marks the communicator revoked in
every rank at once (MPI only promises "eventually"; Open MPI spreads it
in the background), and from then on its communication and constructors
raise ``MPI.Exception`` of class ERR_REVOKED, while local queries
(rank, size, group, attributes), ``Free``, ``Agree`` and ``Shrink`` still
work, as MPI specifies (Open MPI 5.0.11 answers the queries and Free,
but hangs in Agree on a revoked communicator). An operation already
waiting in another rank when the communicator is revoked is not
interrupted.
"""
import weakref

import numpy as np

from simulator.engine import collectives as coll
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.request import ProcNullRequest
from simulator.mpi.values import VALUES

__all__ = ['FaultTolerance', 'check_revoked']

# world -> the contexts of its revoked communicators
_REVOKED = weakref.WeakKeyDictionary()


def check_revoked(state):
    """Raise ERR_REVOKED if the communicator of ``state`` was revoked."""
    if _REVOKED:
        revoked = _REVOKED.get(state.world)
        if revoked and state.ctx in revoked:
            raise MPIException(VALUES['ERR_REVOKED'], '{} was revoked '
                               '(rank {})'.format(state.name, state.rank))


class _Agreements:
    """What the collective helpers read of a communicator (``_s``) for
    its agreements: a state of their own, so that they match among
    themselves, not with the communicator's other collectives (Open MPI
    agrees on a channel of its own: a rank's Iagree may come before a
    Barrier that another rank calls first), and that works once the
    communicator is revoked."""

    __slots__ = ('_s',)

    def __init__(self, state):
        from simulator.engine.communicator import CommState
        agree = state.props.get('agreements')
        if agree is None:
            # An intercommunicator's agreements join both groups.
            members = getattr(state, 'joint', state)
            agree = state.props['agreements'] = CommState(
                state.world, (state.ctx, 'agree'), members.group,
                members.rank, 'agreements of {}'.format(state.name))
        self._s = agree


class _Started(ProcNullRequest):
    """A request for an operation complete from the start here (no rank
    can fail): active, as Open MPI's, until waited for."""

    def _finish(self, status):
        status._empty()
        return None


def _int_flag(buf):
    """The C int buffer of Iagree (mpi4py's checks and messages)."""
    view = memoryview(buf)
    if view.format not in ('i', '@i'):
        raise ValueError("expecting buffer with format 'i', got {!r}".format(
            view.format))
    if view.nbytes != view.itemsize:
        raise ValueError('flag: expecting int buffer of length one')
    return np.frombuffer(view, np.intc)


def _and_all(flags):
    out = -1
    for flag in flags:
        out &= flag
    return out


class FaultTolerance:
    """The ULFM methods of ``Comm`` (a mixin over ``_local``)."""

    def Revoke(self):
        """Revoke the communicator in every rank: later communication on
        it raises ERR_REVOKED."""
        s = self._local
        _REVOKED.setdefault(s.world, set()).add(s.ctx)

    def Is_revoked(self):
        """Whether the communicator was revoked (by any rank)."""
        s = self._local
        return s.ctx in _REVOKED.get(s.world, ())

    def Get_failed(self):
        """The group of failed processes: empty (no rank fails here)."""
        self._local  # noqa: B018 -- raises on COMM_NULL or a freed comm
        from simulator.mpi.group import Group
        return Group._of(())

    def Ack_failed(self, num_to_ack=None):
        """Acknowledge failures: none, so 0 acknowledged."""
        self._local  # noqa: B018
        if num_to_ack is not None and not isinstance(num_to_ack, int):
            raise TypeError('Ack_failed: num_to_ack must be an int, got '
                            '{!r}'.format(num_to_ack))
        return 0

    def Agree(self, flag):
        """The bitwise AND of every rank's int ``flag`` (collective)."""
        if not isinstance(flag, int):
            raise TypeError('Agree: flag must be an int, got {!r}'.format(
                flag))
        from simulator.mpi.coll import _run
        return _run(_Agreements(self._local), 'Agree', (), int(flag),
                    combine=_and_all)

    def Iagree(self, flag):
        """Agree on the C int in the buffer ``flag``, which receives the
        AND once the request completes."""
        from simulator.mpi.coll import _CollectiveRequest, _start
        array = _int_flag(flag)
        s, slot, record = _start(_Agreements(self._local), 'Iagree', (),
                                 int(array[0]), _and_all)

        def store(result):
            array[0] = result
        return _CollectiveRequest(s, slot, record,
                                  finish=lambda _s, sl: sl.result,
                                  after=store)

    def Shrink(self):
        """A new communicator of the live ranks: all of them here."""
        return self._new(self._dup_state(self._local, 'Shrink', capture(2)))

    def Ishrink(self):
        """Shrink, with a request: (comm, request)."""
        return self.Shrink(), _Started()

    def _dup_state(self, s, op, raw):
        """The state of a new communicator over ``s``'s group, made
        collectively (Dup, Shrink)."""
        from simulator.engine.communicator import CommState
        seq = s.next_seq()
        record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                            raw=raw)
        if s.world.clock is not None:
            s.world.clock.stamp(record)
        slot = coll.arrive(s, seq, op, (), None, record)
        coll.wait_ready(s, slot, record)
        if s.world.clock is not None:
            s.world.clock.collective(s.world_rank, slot)
        coll.leave(s, slot)
        return CommState(s.world, (s.ctx, seq, op.lower()), s.group, s.rank,
                         '{}.{}#{}'.format(s.name, op, seq), title='')
