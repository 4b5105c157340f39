"""Matched probes: ``Comm.Mprobe/Improbe`` and ``MPI.Message``.

A matched probe takes the message out of the matching queue at once, so
no other receive can match it; ``Message.Recv`` (or ``recv`` for an
object) then delivers exactly that message. Delivery is the ordinary
receive's (:class:`~simulator.mpi.p2p.RecvRequest`): the same dtype,
size and kind checks and the same Status.
"""
from simulator.engine import activity, p2p
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.constants import ANY_SOURCE, ANY_TAG, ERR_REQUEST
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import PROC_NULL
from simulator.mpi.handles import HandleMixin
from simulator.mpi.msgspec import parse_p2p
from simulator.mpi.naming import describe, reduce_constant, unserializable
from simulator.mpi.p2p import BUFFER, OBJECT, RecvRequest, guard_receive
from simulator.mpi.request import Request, check_status, track

__all__ = ['Message', 'MESSAGE_NULL', 'MESSAGE_NO_PROC', 'MatchedProbes']

_NULL, _NO_PROC = 'null', 'no_proc'


class Message(HandleMixin):
    """A message taken by a matched probe, to be received once."""

    __module__ = 'simulator.mpi'

    def __init__(self, message=None):
        if message is None:
            self._state = _NULL
        elif isinstance(message, Message):
            self._state = message._state
        else:
            raise TypeError('Message() takes a Message, got {}'.format(
                describe(message)))

    def _handle_target(self):
        return None if self._state is _NULL else self._state

    @classmethod
    def _from_target(cls, target):
        message = cls()
        message._state = _NULL if target is None else target
        return message

    @classmethod
    def _taken(cls, recv):
        message = cls()
        message._state = recv
        return message

    def __bool__(self):
        return self._state is not _NULL

    def free(self):
        """Clear the handle (the constants stay, as mpi4py's)."""
        if self is not MESSAGE_NULL and self is not MESSAGE_NO_PROC:
            self._state = _NULL

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        a, b = self._state, other._state
        return a is b or (isinstance(a, str) and a == b)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if self is MESSAGE_NULL:
            return reduce_constant(self, 'MESSAGE_NULL')
        if self is MESSAGE_NO_PROC:
            return reduce_constant(self, 'MESSAGE_NO_PROC')
        if self._state in (_NULL, _NO_PROC):
            return self._reduce_copy(MESSAGE_NULL if self._state is _NULL
                                     else MESSAGE_NO_PROC)
        raise unserializable(self, 'a matched message belongs to the '
                             'process that probed it')

    def _buffer(self, buf, where):
        # As mpi4py reads it: for MESSAGE_NO_PROC nothing is read.
        return parse_p2p(buf, PROC_NULL if self._state is _NO_PROC
                         else ANY_SOURCE, where, writable=True)

    def _request(self, kind, buf):
        state = self._state
        if state is _NULL:
            raise MPIException(ERR_REQUEST, 'receive from MESSAGE_NULL')
        if self is not MESSAGE_NO_PROC:
            self._state = _NULL         # a message is received once
        if state is _NO_PROC:
            return Request()
        request = RecvRequest(state, kind, buf)
        return request

    def Recv(self, buf, status=None):
        """Receive the probed message into ``buf``."""
        if status is not None:
            check_status(status)
        request = self._request(BUFFER, self._buffer(buf, 'Message.Recv'))
        if request._activity is None:
            _no_proc_status(status)
            return
        request._complete(status)

    def Irecv(self, buf):
        """Start receiving the probed message (already here: it
        completes at the first Wait or Test)."""
        b = self._buffer(buf, 'Message.Irecv')
        request = self._request(BUFFER, b)
        if request._activity is None:
            return _NoProcRequest()
        return track(guard_receive(request, b))

    def recv(self, status=None):
        """Receive the probed object."""
        if status is not None:
            check_status(status)
        request = self._request(OBJECT, None)
        if request._activity is None:
            _no_proc_status(status)
            return None
        return request._complete(status)

    def irecv(self):
        """Start receiving the probed object."""
        request = self._request(OBJECT, None)
        if request._activity is None:
            return _NoProcRequest()
        return track(request)

    @classmethod
    def Probe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG,
              status=None):
        """The same as ``comm.Mprobe(source, tag, status)``."""
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG,
               status=None):
        """The same as ``comm.Improbe(source, tag, status)``."""
        return comm.Improbe(source, tag, status)

    probe = Probe
    iprobe = Iprobe

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        name = {_NULL: 'MESSAGE_NULL', _NO_PROC: 'MESSAGE_NO_PROC'}.get(
            self._state, 'matched')
        return '<simulator.mpi.Message {}>'.format(name)


class _NoProcRequest(Request):
    """The receive of MESSAGE_NO_PROC: pending until waited for."""

    def __init__(self):
        super().__init__()
        self._done = False

    def wait(self, status=None):
        self._done = True
        _no_proc_status(status)
        return None

    def test(self, status=None):
        self._done = True
        _no_proc_status(status)
        return True, None

    def Get_status(self, status=None):
        return True


def _copy_of(state):
    message = Message()
    message._state = state
    return message


def _no_proc_status(status):
    if status is not None:
        status._fill(PROC_NULL, ANY_TAG, 0)


MESSAGE_NULL = Message()
MESSAGE_NO_PROC = _copy_of(_NO_PROC)


class MatchedProbes:
    """``Mprobe/Improbe/mprobe/improbe``; mixed into ``Comm``."""

    def _mprobe(self, op, source, tag, status, block):
        if status is not None:
            check_status(status)
        s = self._s
        source = self._peer(source, 'source', True)
        tag = self._tag(tag, True)
        if source == PROC_NULL:
            _no_proc_status(status)
            # A fresh handle equal to MESSAGE_NO_PROC: receiving from it
            # makes it MESSAGE_NULL, as MPI_Mrecv does.
            return _copy_of(_NO_PROC)
        world = s.world
        record = CallRecord(op, s.world_rank, source, tag, s.name,
                            raw=capture(3))
        taken = []

        def arrived():
            if not taken:
                msg = p2p.take_message(world, s.world_rank, s.ctx, source,
                                       tag)
                if msg is not None:
                    taken.append(msg)
            return bool(taken)

        probe = activity.Condition(world, s.world_rank, record, arrived)
        if block:
            activity.wait(probe)
        elif not activity.test(probe):
            return None
        msg = taken[0]
        if status is not None:
            status._fill(msg.source, msg.tag, msg.nbytes)
        recv = p2p.Recv(world, s.world_rank, record, msg.source, msg.tag,
                        s.peers, s.name)
        recv.message = msg
        return Message._taken(recv)

    def Mprobe(self, source=ANY_SOURCE, tag=ANY_TAG,
               status=None):
        """Wait for a matching message and take it: only the returned
        Message can receive it."""
        return self._mprobe('Mprobe', source, tag, status, True)

    def Improbe(self, source=ANY_SOURCE, tag=ANY_TAG,
                status=None):
        """Take a matching message if one is queued; None otherwise."""
        return self._mprobe('Improbe', source, tag, status, False)

    def mprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Mprobe for an object message."""
        return self._mprobe('mprobe', source, tag, status, True)

    def improbe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Improbe for an object message."""
        return self._mprobe('improbe', source, tag, status, False)
