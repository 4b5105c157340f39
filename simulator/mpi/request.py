"""``Request`` and ``Status``, mpi4py-style, for simulated operations.

A request wraps an engine activity (what the rank waits for); waiting and
testing go through :mod:`simulator.engine.activity`. ``_finish(status)``
runs outside the world lock (it may copy large buffers) and returns the
lowercase ``wait()`` result.
"""
from simulator.engine import activity
from simulator.mpi.constants import ANY_SOURCE, ANY_TAG, SUCCESS, UNDEFINED

__all__ = ['Status', 'Request', 'REQUEST_NULL']


class Status:
    """Source, tag, size and error of a completed receive."""

    __module__ = 'simulator.mpi'

    def __init__(self, status=None):
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self.nbytes = 0
        self.cancelled = False
        if status is not None:
            self.source, self.tag = status.source, status.tag
            self.error, self.nbytes = status.error, status.nbytes

    def Get_source(self):  # noqa: N802
        """Rank the message came from (in the receive's communicator)."""
        return self.source

    def Get_tag(self):  # noqa: N802
        """Tag of the message."""
        return self.tag

    def Get_error(self):  # noqa: N802
        """Error code (SUCCESS)."""
        return self.error

    def Get_count(self, datatype=None):  # noqa: N802
        """Number of ``datatype`` elements received (bytes by default)."""
        size = 1 if datatype is None else datatype.Get_size()
        if size == 0:
            return 0
        if self.nbytes % size:
            return UNDEFINED
        return self.nbytes // size

    def Get_elements(self, datatype):  # noqa: N802
        """Same as Get_count for predefined datatypes."""
        return self.Get_count(datatype)

    def Is_cancelled(self):  # noqa: N802
        """True for a receive withdrawn by ``Cancel`` before it matched."""
        return self.cancelled

    def Set_source(self, source):  # noqa: N802
        self.source = source

    def Set_tag(self, tag):  # noqa: N802
        self.tag = tag

    def Set_error(self, error):  # noqa: N802
        self.error = error

    count = property(Get_count)

    def _fill(self, source, tag, nbytes):
        self.source, self.tag, self.nbytes = source, tag, nbytes
        self.cancelled = False

    def __repr__(self):
        return '<Status source={} tag={} bytes={}>'.format(
            self.source, self.tag, self.nbytes)


class Request:
    """A pending operation: ``Wait/Test/wait/test`` and the static
    ``Waitall/Testall/Waitany/waitall``.

    It wraps the engine's :class:`~simulator.engine.activity.Activity`
    (None for a request that is complete from the start); subclasses
    deliver results in ``_finish(status)``, outside the world lock.
    """

    __module__ = 'simulator.mpi'

    def __init__(self, activity=None):
        self._activity = activity
        self._done = activity is None
        self._result = None

    @property
    def record(self):
        """The CallRecord of the call that started the operation."""
        return self._activity.record

    # subclasses override these
    def _finish(self, status):
        return None

    def _ready(self):
        return self._activity.ready()

    def _complete(self, status):
        if not self._done:
            self._result = self._finish(status)
            self._done = True
        return self._result

    def Wait(self, status=None):  # noqa: N802
        """Block until the operation completes."""
        self.wait(status)
        return True

    def wait(self, status=None):
        """Block until complete; return the received object (or None)."""
        if self._done:
            return None
        activity.wait(self._activity)
        return self._complete(status)

    def Test(self, status=None):  # noqa: N802
        """Complete the operation if possible; True when done."""
        return self.test(status)[0]

    def test(self, status=None):
        """(done, object): never blocks."""
        if self._done:
            return True, None
        if not activity.test(self._activity):
            return False, None
        return True, self._complete(status)

    def Get_status(self, status=None):  # noqa: N802
        """True when the operation is complete (does not complete it)."""
        return self._done or activity.test(self._activity)

    def Cancel(self):  # noqa: N802
        """Sends cannot be cancelled (as in Open MPI); receives can."""

    def Free(self):  # noqa: N802
        """Forget the request (the operation still takes place)."""

    def __bool__(self):
        return not self._done

    @staticmethod
    def Waitall(requests, statuses=None):  # noqa: N802
        """Wait for every request."""
        Request.waitall(requests, statuses)
        return True

    @staticmethod
    def waitall(requests, statuses=None):
        """Wait for every request; return their objects."""
        out = []
        for i, req in enumerate(requests):
            st = statuses[i] if statuses is not None and \
                i < len(statuses) else None
            out.append(req.wait(st))
        return out

    @staticmethod
    def Testall(requests, statuses=None):  # noqa: N802
        """True (completing them all) when every request is done."""
        return Request.testall(requests, statuses)[0]

    @staticmethod
    def testall(requests, statuses=None):
        """(all done, objects or None)."""
        for req in requests:
            if not req.Get_status():
                return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    def Waitany(requests, status=None):  # noqa: N802
        """Wait for one request; return its index."""
        return Request.waitany(requests, status)[0]

    @staticmethod
    def waitany(requests, status=None):
        """(index, object) of the first request that completes."""
        active = [r for r in requests if not r._done]
        if not active:
            return UNDEFINED, None
        chosen = active[activity.wait_any([r._activity for r in active])]
        if chosen._activity.world.schedule is not None:
            # The schedule chose which one completes (not the first).
            return requests.index(chosen), chosen._complete(status)
        for i, req in enumerate(requests):
            if not req._done and req.Get_status():
                return i, req._complete(status)
        raise AssertionError('waitany woke without a ready request')

    @staticmethod
    def Testany(requests, status=None):  # noqa: N802
        """(index, flag) of a completed request, never blocking."""
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if active and active[0][1]._activity.world.schedule is not None:
            # Which complete request it reports is the schedule's choice.
            k = activity.test_any([r._activity for _, r in active])
            if k is None:
                return UNDEFINED, False
            active[k][1]._complete(status)
            return active[k][0], True
        for i, req in enumerate(requests):
            if not req._done and req.Get_status():
                req._complete(status)
                return i, True
        return UNDEFINED, all(r._done for r in requests)

    @staticmethod
    def Waitsome(requests, statuses=None):  # noqa: N802
        """Wait until some requests complete; their indices (None when
        none is active)."""
        return Request.waitsome(requests, statuses)[0]

    @staticmethod
    def waitsome(requests, statuses=None):
        """(indices, objects) of at least one completed request."""
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if not active:
            return None, None
        return Request._completed(active, activity.wait_some(
            [r._activity for _, r in active]), statuses)

    @staticmethod
    def Testsome(requests, statuses=None):  # noqa: N802
        """Indices of the requests complete now (None when none is
        active); never blocks."""
        return Request.testsome(requests, statuses)[0]

    @staticmethod
    def testsome(requests, statuses=None):
        """(indices, objects) of the requests complete now."""
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if not active:
            return None, None
        return Request._completed(active, activity.test_some(
            [r._activity for _, r in active]), statuses)

    @staticmethod
    def _completed(active, picked, statuses):
        indices, objects = [], []
        for k in picked:
            i, req = active[k]
            n = len(indices)
            st = statuses[n] if statuses is not None and \
                n < len(statuses) else None
            objects.append(req._complete(st))
            indices.append(i)
        return indices, objects


REQUEST_NULL = Request()
