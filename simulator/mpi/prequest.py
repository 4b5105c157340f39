"""Persistent requests (``Send_init``/``Recv_init`` + ``Start``) and
requests made of two others (``Isendrecv``).

A persistent request is a recipe: each ``Start`` begins one ordinary
operation through the same code path as ``Isend``/``Irecv``; waiting and
testing go to that operation. Between completion and the next Start the
request is inactive, not null: it keeps its handle, as in MPI.

Each started operation, and the send of each ``Isendrecv`` pair, is
tracked (:func:`simulator.mpi.request.track`): a rank whose program ends
without completing or freeing it gets an ``IncompleteRequestWarning``
naming the call and its line, as for ``Isend``. Freeing an active
request lets its operation finish on its own (MPI allows it).
"""
from simulator.mpi.handles import handle_argument_error
from simulator.mpi.msgspec import parse_p2p
from simulator.mpi.naming import describe
from simulator.mpi.p2p import BUFFER, checked_send, guard_receive, replace_peer
from simulator.mpi.constants import ANY_SOURCE, ANY_TAG, ERR_ARG, ERR_REQUEST
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.partitioned import (PartitionEnd, Partitions, RecvRound,
                                       SendRound)
from simulator.mpi.request import Request, track

__all__ = ['Prequest', 'PairRequest', 'PersistentP2P', 'PartitionedP2P']


class Prequest(Partitions, Request):
    """A persistent request: ``Start`` it, wait for it, start it again."""

    __module__ = 'simulator.mpi'

    def __init__(self, request=None, start=None):
        # any null request, else only a persistent one (mpi4py's check)
        if request is not None and not isinstance(request, Prequest) and \
                (not isinstance(request, Request) or request):
            raise handle_argument_error('Prequest', request)
        super().__init__()
        # Prequest(REQUEST_NULL) is a null persistent request
        self._start = start if request is None else \
            getattr(request, '_start', None)
        self._current = None

    def Start(self):
        """Begin one operation."""
        if self._start is None:
            raise MPIException(ERR_REQUEST, 'Start of a null persistent '
                               'request')
        self._current = self._start()
        self._done = False

    @staticmethod
    def Startall(requests):
        """Start every request (persistent ones only, as MPI_Startall)."""
        requests = list(requests)
        for request in requests:
            if not isinstance(request, Prequest):
                raise MPIException(ERR_REQUEST, 'Startall: {} is not a '
                                   'persistent request'.format(
                                       describe(request)))
        for request in requests:
            request.Start()

    def _inner(self):
        return self._current if self._current is not None else Request()

    def wait(self, status=None):
        """Wait for the started operation; its object, if any."""
        result = self._inner().wait(status)
        self._done = True
        return result

    def test(self, status=None):
        """Test the started operation: (done, its object or None)."""
        done, result = self._inner().test(status)
        if done:
            self._done = True
        return done, result

    def Get_status(self, status=None):
        """Whether the started operation is complete (not freeing it)."""
        return self._inner().Get_status(status)

    def Cancel(self):
        """Cancel the started operation."""
        self._inner().Cancel()

    def _waitable(self):
        return self._inner()._waitable() if not self._done else None

    def __bool__(self):
        return self._start is not None

    def __eq__(self, other):
        if isinstance(other, Prequest):
            return self._start is other._start
        return Request.__eq__(self, other)

    __hash__ = None     # unhashable, as mpi4py's handles

    def Free(self):
        """Forget the recipe (the handle becomes null); an operation still
        active completes on its own, as MPI lets it."""
        if self._start is None:
            raise MPIException(ERR_REQUEST, 'Free of a null persistent '
                               'request')
        if self._current is not None:
            self._current.free()
        self._start = None


class PairRequest(Request):
    """Completes when both of two requests do (a send and a receive)."""

    def __init__(self, first, second):
        super().__init__()
        self._done = False
        self._parts = (first, second)

    def wait(self, status=None):
        first, second = self._parts
        second.wait(status)
        first.wait()
        self._done = True
        return None

    def test(self, status=None):
        first, second = self._parts
        if not (first.Get_status() and second.Get_status()):
            for part in self._parts:
                part.test()         # progress, and stuck-poll detection
            return False, None
        self.wait(status)
        return True, None

    def Get_status(self, status=None):
        return all(p.Get_status() for p in self._parts)

    def Free(self):
        """Forget both operations (they still take place)."""
        for part in self._parts:
            part.free()
        self._done = True

    def _waitable(self):
        return None


class PersistentP2P:
    """Persistent and paired point-to-point calls; mixed into ``Comm``."""

    def _init(self, op, start):
        return Prequest(start=start)

    def _start_send(self, op, b, dest, tag, sync=False):
        # Each Start sends the buffer as it is then; until that send
        # completes the buffer must stay as it was (checked_send).
        sent = b.data[:b.count].copy()
        return track(checked_send(self._isend(op, BUFFER, sent, b.datatype,
                                              dest, tag, sync), b, sent))

    def Send_init(self, buf, dest, tag=0):
        """A persistent standard send."""
        b = parse_p2p(buf, dest, 'Send_init')
        dest = self._peer(dest, 'destination', False)
        return Prequest(start=lambda: self._start_send('Send_init', b, dest,
                                                       tag))

    Bsend_init = Send_init
    Rsend_init = Send_init

    def Ssend_init(self, buf, dest, tag=0):
        """A persistent synchronous send."""
        b = parse_p2p(buf, dest, 'Ssend_init')
        dest = self._peer(dest, 'destination', False)
        return Prequest(start=lambda: self._start_send(
            'Ssend_init', b, dest, tag, sync=True))

    def Recv_init(self, buf, source=-1, tag=-1):
        """A persistent receive."""
        b = parse_p2p(buf, source, 'Recv_init')
        source = self._peer(source, 'source', True)
        return Prequest(start=lambda: track(guard_receive(self._irecv(
            'Recv_init', BUFFER, b, source, tag), b)))

    def Isendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None,  # noqa
                  source=-1, recvtag=-1):
        """Start a send and a receive; one request for both."""
        sb = parse_p2p(sendbuf, dest, 'Isendrecv send buffer')
        rb = parse_p2p(recvbuf, source, 'Isendrecv receive buffer')
        send = track(self._isend('Isendrecv', BUFFER,
                                 sb.data[:sb.count].copy(), sb.datatype,
                                 dest, sendtag))
        return PairRequest(send, guard_receive(self._irecv(
            'Isendrecv', BUFFER, rb, source, recvtag), rb))

    def Isendrecv_replace(self, buf, dest, sendtag=0,
                          source=-1, recvtag=-1):
        """Isendrecv with one buffer (sent as it is now)."""
        b = parse_p2p(buf, replace_peer(dest, source),
                      'Isendrecv_replace buffer')
        send = track(self._isend('Isendrecv_replace', BUFFER,
                                 b.data[:b.count].copy(), b.datatype, dest,
                                 sendtag))
        return PairRequest(send, guard_receive(self._irecv(
            'Isendrecv_replace', BUFFER, b, source, recvtag), b))


def _partitioned(comm, sending, buf, partitions, peer, tag, where):
    if not isinstance(partitions, int) or partitions < 1:
        raise MPIException(ERR_ARG, '{}: partitions {!r} must be an int '
                           '>= 1'.format(where, partitions))
    b = parse_p2p(buf, peer, where)
    if b.count % partitions:
        raise ValueError('{}: {} elements do not split into {} equal '
                         'partitions'.format(where, b.count, partitions))
    peer = comm._peer(peer, 'destination' if sending else 'source',
                      not sending)
    tag = comm._tag(tag, not sending)
    end = PartitionEnd(comm, sending, b, partitions, peer, tag, where)
    end.enlist()

    def start():
        world = end.state.world
        with world.lock:
            world.version += 1
            end.round += 1
        if sending:
            return track(SendRound(end))
        return track(RecvRound(end))
    request = Prequest(start=start)
    request._part = end
    return request


class PartitionedP2P:
    """``Psend_init`` and ``Precv_init``; mixed into ``Comm``."""

    def Psend_init(self, buf, partitions, dest, tag=0, info=None):
        """A partitioned persistent send of ``buf`` in ``partitions``
        equal parts."""
        return _partitioned(self, True, buf, partitions, dest, tag,
                            'Psend_init')

    def Precv_init(self, buf, partitions, source=ANY_SOURCE, tag=ANY_TAG,
                   info=None):
        """A partitioned persistent receive into ``buf``."""
        return _partitioned(self, False, buf, partitions, source, tag,
                            'Precv_init')
