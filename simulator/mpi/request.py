"""``Request`` and ``Status``, mpi4py-style, for simulated operations.

A request wraps an engine activity (what the rank waits for); waiting and
testing go through :mod:`simulator.engine.activity`. ``_finish(status)``
runs outside the world lock (it may copy large buffers) and returns the
lowercase ``wait()`` result.
"""
import functools
import warnings

import numpy as np

from simulator.engine import activity
from simulator.engine.libraries import is_library_file
from simulator.engine.trace import user_frame
from simulator.errors import IncompleteRequestWarning
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, ERR_COUNT,
                                     ERR_REQUEST, ERR_TYPE, PROC_NULL,
                                     SUCCESS, UNDEFINED)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.datatypes import DATATYPE_NAMES
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.naming import (class_ref, describe, is_ours, no_attribute,
                                   reduce_constant, unserializable)


__all__ = ['Status', 'Request', 'ProcNullRequest', 'Grequest',
           'REQUEST_NULL', 'track']

# Status.Get_count's default datatype (mpi4py's)
BYTE = DATATYPE_NAMES['BYTE']


def track(request):
    """``request``, kept as one the program got from a non-blocking call:
    if it is neither completed nor freed when the rank's program ends,
    an IncompleteRequestWarning names the call and its line."""
    act = request._activity
    if act is None:
        return request
    world = act.world
    mine = world.open_requests.get(act.rank)
    if mine is None:
        if not world.open_requests:
            world.end_checks.append(functools.partial(_warn_open, world))
        mine = world.open_requests[act.rank] = []
    elif len(mine) >= _PRUNE_AT and not len(mine) & (len(mine) - 1):
        # Completed ones dropped at each power of two: a rank keeping
        # thousands pending pays a constant amount per request.
        mine[:] = [r for r in mine if not r._done]
    mine.append(request)
    return request


_PRUNE_AT = 64


def _warn_open(world, rank):
    for request in world.open_requests.pop(rank, ()):
        if request._done or getattr(request._activity, 'message',
                                    True) is None:
            # (a receive nothing matched: reported as left posted when
            # the run ends, an error)
            continue
        record = request._record
        filename, lineno, _ = user_frame(record.frames)
        if is_library_file(filename):
            continue        # a library's own request: not the program's
        warnings.warn_explicit(IncompleteRequestWarning(
            'rank {}\'s {} was never completed: MPI requires every '
            'non-blocking request to be completed (Wait, Test) or freed '
            '(Free) before the program ends (a real MPI may never finish '
            'it: a large message then never arrives)'.format(
                rank, record.describe())),
            IncompleteRequestWarning, filename, lineno)


class Status:
    """Source, tag, error, byte count and cancelled flag of a completed
    operation, laid out like Open MPI's ``MPI_Status`` (three ints, the
    cancelled flag, a size_t count), which ``tomemory()`` exposes."""

    __module__ = 'simulator.mpi'
    __slots__ = ('_mem', '__weakref__')

    def __init__(self, status=None):
        if status is not None and not isinstance(status, Status):
            raise handle_argument_error('Status', status)
        self._mem = np.zeros(1, _STATUS_LAYOUT)
        if status is None:
            self._mem['source'] = ANY_SOURCE
            self._mem['tag'] = ANY_TAG
        else:
            self._mem[:] = status._mem

    def _get(self, field):
        return int(self._mem[field][0])

    def _set(self, field, value):
        if not isinstance(value, int):
            raise TypeError('Status {} must be an int, got {!r}'.format(
                field, value))
        self._mem[field] = value

    def Get_source(self):
        """Rank the message came from (in the receive's communicator)."""
        return self._get('source')

    def Set_source(self, source):
        """Set the message source."""
        self._set('source', source)

    def Get_tag(self):
        """Tag of the message."""
        return self._get('tag')

    def Set_tag(self, tag):
        """Set the message tag."""
        self._set('tag', tag)

    def Get_error(self):
        """Error code (SUCCESS)."""
        return self._get('error')

    def Set_error(self, error):
        """Set the error code."""
        self._set('error', error)

    source = property(Get_source, Set_source)
    tag = property(Get_tag, Set_tag)
    error = property(Get_error, Set_error)

    # The byte count (simulator only: mpi4py's Status has no such
    # attribute, a program reads count or Get_count).
    @property
    def _nbytes(self):
        return self._get('ucount')

    @_nbytes.setter
    def _nbytes(self, value):
        self._mem['ucount'] = value

    def Get_count(self, datatype=BYTE):
        """Number of ``datatype`` elements received (bytes by default);
        UNDEFINED when the bytes are not a whole number of them."""
        # mpi4py's typed argument: None is a TypeError, not the default
        size = _type_size(datatype, 'Get_count')
        nbytes = self._nbytes
        if size == 0:
            return 0
        if nbytes % size:
            return UNDEFINED
        return nbytes // size

    def Get_elements(self, datatype):
        """Number of basic elements of ``datatype`` received."""
        _type_size(datatype, 'Get_elements')
        count = datatype._elements_in(self._nbytes)
        return UNDEFINED if count is None else count

    def Set_elements(self, datatype, count):
        """Record ``count`` elements of ``datatype`` (for Get_count)."""
        size = _type_size(datatype, 'Set_elements')
        if not isinstance(count, int):
            raise TypeError('Set_elements count must be an int, got '
                            '{!r}'.format(count))
        if count < 0:
            raise MPIException(ERR_COUNT, 'Set_elements count {} < 0'.format(
                count))
        self._nbytes = count * size

    def Is_cancelled(self):
        """True for a receive withdrawn by ``Cancel`` before it matched."""
        return bool(self._mem['cancelled'][0])

    def Set_cancelled(self, flag):
        """Mark the status cancelled (or not)."""
        self._mem['cancelled'] = bool(flag)

    cancelled = property(Is_cancelled, Set_cancelled)

    @property
    def count(self):
        """Byte count."""
        return self.Get_count()

    @count.setter
    def count(self, value):
        self.Set_elements(_byte(), value)

    def tomemory(self):
        """The status's bytes (writable: changes show in the fields)."""
        return memoryview(self._mem.view(np.intc))

    def py2f(self):
        """The Fortran status: F_STATUS_SIZE ints, source, tag and error
        at F_SOURCE, F_TAG, F_ERROR (Open MPI's layout)."""
        return [int(v) for v in self._mem.view(np.intc)]

    @classmethod
    def f2py(cls, arg):
        """A Status from a Fortran status (``py2f``'s list)."""
        fields = np.asarray(arg, np.intc)
        if fields.shape != (_STATUS_LAYOUT.itemsize // 4,):
            raise ValueError('Status.f2py: expecting {} ints, got {!r}'.format(
                _STATUS_LAYOUT.itemsize // 4, arg))
        status = cls()
        status._mem.view(np.intc)[:] = fields
        return status

    def _fill(self, source, tag, nbytes):
        self._mem['source'] = source
        self._mem['tag'] = tag
        self._mem['error'] = SUCCESS
        self._mem['cancelled'] = 0
        self._mem['ucount'] = nbytes

    def _empty(self):
        """MPI's empty status (what a null or inactive request gives)."""
        self._fill(ANY_SOURCE, ANY_TAG, 0)

    def _copy_from(self, other):
        self._mem[:] = other._mem

    def __eq__(self, other):
        if not isinstance(other, Status):
            return NotImplemented
        return self._mem.tobytes() == other._mem.tobytes()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None

    def __reduce__(self):
        # As mpi4py's: a new object of the class (a subclass's copy is of
        # that subclass) given the fields by __setstate__.
        return (_new_status, (class_ref(type(self)),), self.__getstate__())

    def __getstate__(self):
        """The fields, as mpi4py names them (``count`` in bytes)."""
        return {'source': self.Get_source(), 'tag': self.Get_tag(),
                'error': self.Get_error(), 'count': self._nbytes,
                'cancelled': self.Is_cancelled()}

    def __setstate__(self, state):
        """Set the fields from ``__getstate__``'s dict (source, tag and
        error required, count and cancelled optional, as mpi4py's)."""
        self.Set_source(state['source'])
        self.Set_tag(state['tag'])
        self.Set_error(state['error'])
        if 'count' in state:
            self.Set_elements(_byte(), state['count'])
        if 'cancelled' in state:
            self.Set_cancelled(state['cancelled'])

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<Status source={} tag={} bytes={}>'.format(
            self.source, self.tag, self._nbytes)


def _request_list(requests):
    """A request array as mpi4py reads one: a sized sequence of
    Requests."""
    len(requests)       # mpi4py's TypeError for an int, a generator...
    requests = list(requests)
    for req in requests:
        if not isinstance(req, Request):
            raise TypeError('Cannot convert {} to mpi4py.MPI.Request'.format(
                type(req).__name__))
    return requests


def check_status(status):
    """mpi4py's typed ``status`` argument, checked on entry: a Status
    (None is checked by the caller, on its fast path)."""
    if not isinstance(status, Status):
        raise TypeError("Argument 'status' has incorrect type (expected "
                        "mpi4py.MPI.Status, got {})".format(
                            type(status).__name__))


_STATUS_LAYOUT = np.dtype([('source', np.intc), ('tag', np.intc),
                           ('error', np.intc), ('cancelled', np.intc),
                           ('ucount', np.uintp)])


class _KeptStatus(Status):
    """The status a completion keeps for later queries (Waitsome after
    Waitany, Get_status): its fields as a tuple, the array made only when
    something reads it, since most completions are never asked (a
    ``Status()`` and its fill cost a receive more than its matching)."""

    __slots__ = ('_fields',)

    def __init__(self):
        self._fields = (ANY_SOURCE, ANY_TAG, SUCCESS, 0, 0)

    @property
    def _mem(self):
        fields = self._fields
        if type(fields) is tuple:
            fields = self._fields = np.array([fields], _STATUS_LAYOUT)
        return fields

    def _fill(self, source, tag, nbytes):
        self._fields = (source, tag, SUCCESS, 0, nbytes)

    def __reduce__(self):
        # copied or pickled, it is the Status it shows itself as
        return (_new_status, (class_ref(Status),), self.__getstate__())


def status_nbytes():
    """Bytes of one Open MPI MPI_Status."""
    return _STATUS_LAYOUT.itemsize


def _new_status(cls):
    # made as mpi4py unpickles (cls.__new__): a subclass's __init__ may
    # take other arguments; __setstate__ then fills it. copy.copy hands
    # over naming.class_ref's stand-in as it is: its class is inside.
    cls = getattr(cls, '_cls', cls)
    status = cls.__new__(cls)
    Status.__init__(status)
    return status


def _byte():
    from simulator.mpi.datatypes import DATATYPE_NAMES
    return DATATYPE_NAMES['BYTE']


def _type_size(datatype, what):
    from simulator.mpi.datatypes import DATATYPE_NULL, Datatype
    if not isinstance(datatype, Datatype):
        raise TypeError('Status.{}: expected a Datatype, got {}'.format(
            what, describe(datatype)))
    if datatype == DATATYPE_NULL:
        raise MPIException(ERR_TYPE, 'Status.{} with DATATYPE_NULL'.format(
            what))
    datatype._check_committed('Status.' + what)
    return datatype.Get_size()


class Request(HandleMixin):
    """A pending operation: ``Wait/Test/wait/test`` and the static
    ``Waitall/Testall/Waitany/waitall``.

    It wraps the engine's :class:`~simulator.engine.activity.Activity`
    (None for a request that is complete from the start); subclasses
    deliver results in ``_finish(status)``, outside the world lock.
    ``Request(req)`` is another handle to ``req``'s operation: it
    forwards to that request (its ``_origin``).
    """

    __module__ = 'simulator.mpi'

    def __init__(self, request=None):
        if isinstance(request, Request):
            _forward_to(self, request._origin)
            return
        if request is not None and not isinstance(request,
                                                  activity.Activity):
            raise handle_argument_error('Request', request)
        self._activity = request
        self._done = request is None
        self._result = None
        self._last = None

    def __getattr__(self, name):
        # Only handles made by Request(req) miss attributes: they are
        # the original request's.
        origin = self.__dict__.get('_origin_req')
        if origin is None or name.startswith('__'):
            raise no_attribute(self, name)
        return getattr(origin, name)

    @property
    def _origin(self):
        return self.__dict__.get('_origin_req', self)

    def _handle_target(self):
        origin = self._origin
        return origin if origin else None

    @property
    def _record(self):
        """The CallRecord of the call that started the operation."""
        return self._activity.record

    # subclasses override these
    def _finish(self, status):
        return None

    def _ready(self):
        return self._activity.ready()

    def _complete(self, status):
        if not self._done:
            # Every completion keeps its status: Waitsome reports it
            # after Waitany completed the request.
            last = _KeptStatus()
            try:
                self._result = self._finish(last)
            finally:
                # Complete even when finishing fails (a truncated
                # receive): an MPI Wait that reports an error completes
                # the request all the same.
                self._last = last
                self._done = True
                if status is not None:
                    status._copy_from(last)
        elif status is not None:
            if self._last is not None:
                status._copy_from(self._last)
            else:
                status._empty()
        return self._result

    def Wait(self, status=None):
        """Block until the operation completes."""
        _own(self, 'wait')(status)
        return True

    def wait(self, status=None):
        """Block until complete; return the received object (or None)."""
        if status is not None:
            check_status(status)
        if self._done:
            if status is not None:
                status._empty()     # a null request's empty status
            return None
        activity.wait(self._activity)
        return self._complete(status)

    def Test(self, status=None):
        """Complete the operation if possible; True when done."""
        return _own(self, 'test')(status)[0]

    def test(self, status=None):
        """Return (done, object): never blocks."""
        if status is not None:
            check_status(status)
        if self._done:
            if status is not None:
                status._empty()
            return True, None
        if not activity.test(self._activity):
            return False, None
        return True, self._complete(status)

    def Get_status(self, status=None):
        """True when the operation is complete (does not complete it)."""
        if status is not None:
            check_status(status)
        if self._done:
            if status is not None:
                status._empty()
            return True
        return activity.test(self._activity)

    def Cancel(self):
        """Sends cannot be cancelled (as in Open MPI); receives can."""
        if self._done:
            raise MPIException(ERR_REQUEST, 'Cancel of a null request')

    def Free(self):
        """Forget the request (the operation still takes place); the
        handle becomes REQUEST_NULL."""
        if self._done:
            raise MPIException(ERR_REQUEST, 'Free of a null request')
        if self.Get_status():
            self._complete(None)
        self._done = True

    def free(self):
        """Call ``Free`` unless the request is null (mpi4py's)."""
        if not self._done:
            self.Free()

    def cancel(self):
        """Lowercase ``Cancel`` (mpi4py's object-request spelling)."""
        self.Cancel()

    def get_status(self, status=None):
        """Lowercase ``Get_status``."""
        return self.Get_status(status)

    def __bool__(self):
        origin = self.__dict__.get('_origin_req')
        if origin is not None:
            return bool(origin)
        return not self._done

    def __eq__(self, other):
        # A completed request is REQUEST_NULL, as mpi4py's handle becomes.
        if not isinstance(other, Request):
            return NotImplemented
        a, b = self._origin, other._origin
        return a is b or (not a and not b)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if self is REQUEST_NULL:
            return reduce_constant(self, 'REQUEST_NULL')
        if not self:
            return self._reduce_copy(REQUEST_NULL)
        raise unserializable(self, 'a request belongs to the process that '
                             'started it')

    @staticmethod
    def Waitall(requests, statuses=None):
        """Wait for every request."""
        Request.waitall(requests, statuses)
        return True

    @staticmethod
    def waitall(requests, statuses=None):
        """Wait for every request; return their objects."""
        requests = _request_list(requests)
        sts = [Status() for _ in requests]
        out = [req.wait(st) for req, st in zip(requests, sts)]
        _release(statuses, sts, len(requests))
        return out

    @staticmethod
    def Testall(requests, statuses=None):
        """True (completing them all) when every request is done."""
        return Request.testall(requests, statuses)[0]

    @staticmethod
    def testall(requests, statuses=None):
        """Return (all done, objects or None)."""
        requests = _request_list(requests)
        for req in requests:
            if not req.Get_status():
                return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    def Waitany(requests, status=None):
        """Wait for one request; return its index."""
        return Request.waitany(requests, status)[0]

    @staticmethod
    def waitany(requests, status=None):
        """Return (index, object) of the first request that completes."""
        if status is not None:
            check_status(status)
        requests = _request_list(requests)
        active = [r for r in requests if not r._done]
        if not active:
            if status is not None:
                status._empty()
            return UNDEFINED, None
        if any(r._waitable() is None for r in active):
            # Requests that are not one engine activity (persistent,
            # paired): the first complete one, else wait for the first.
            for i, req in enumerate(requests):
                if not req._done and req.Get_status():
                    return i, req.wait(status)
            i = requests.index(active[0])
            return i, requests[i].wait(status)
        chosen = active[activity.wait_any([r._waitable() for r in active])]
        if chosen._waitable().world.schedule is not None:
            # The schedule chose which one completes (not the first).
            return requests.index(chosen), chosen.wait(status)
        for i, req in enumerate(requests):
            if not req._done and req.Get_status():
                return i, req.wait(status)
        raise AssertionError('waitany woke without a ready request')

    def _waitable(self):
        """The engine activity to wait for (None when not one)."""
        return self._activity

    @staticmethod
    def Testany(requests, status=None):
        """Return (index, flag) of a completed request, never blocking."""
        index, flag, _ = Request.testany(requests, status)
        return index, flag

    @staticmethod
    def testany(requests, status=None):
        """Return (index, flag, object) of a completed request, never
        blocking."""
        requests = _request_list(requests)
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if not active:
            if status is not None:
                status._empty()
            return UNDEFINED, True, None
        if all(r._waitable() is not None for _, r in active) \
                and active[0][1]._waitable().world.schedule is not None:
            # Which complete request it reports is the schedule's choice.
            k = activity.test_any([r._waitable() for _, r in active])
            if k is None:
                return UNDEFINED, False, None
            return active[k][0], True, active[k][1].wait(status)
        for i, req in active:
            if req.Get_status():
                return i, True, req.wait(status)
        return UNDEFINED, False, None

    # MPI 4.1's Request_get_status_{any,all,some}: Open MPI 5.0, whose
    # behaviour the simulator reproduces, does not have them, and
    # mpi4py raises NotImplementedError there; so does the simulator, so
    # that a program needing them learns it before the cluster job.
    @staticmethod
    def Get_status_any(requests, status=None):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise _missing('Get_status_any')

    @staticmethod
    def Get_status_all(requests, statuses=None):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise _missing('Get_status_all')

    @staticmethod
    def Get_status_some(requests, statuses=None):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise _missing('Get_status_some')

    get_status_any = Get_status_any
    get_status_all = Get_status_all
    get_status_some = Get_status_some

    @staticmethod
    def Waitsome(requests, statuses=None):
        """Wait until some requests complete; their indices (None when
        none is active)."""
        return Request.waitsome(requests, statuses)[0]

    @staticmethod
    def waitsome(requests, statuses=None):
        """Return (indices, objects) of at least one completed request."""
        requests = _request_list(requests)
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if not active:
            return None, None
        if any(r._waitable() is None for _, r in active):
            index, _ = Request.waitany([r for _, r in active])
            picked = [index] + [k for k, (_, r) in enumerate(active)
                                if k != index and not r._done and
                                r.Get_status()]
            return Request._completed(requests, active, picked, statuses)
        return Request._completed(requests, active, activity.wait_some(
            [r._waitable() for _, r in active]), statuses)

    @staticmethod
    def Testsome(requests, statuses=None):
        """Indices of the requests complete now (None when none is
        active); never blocks."""
        return Request.testsome(requests, statuses)[0]

    @staticmethod
    def testsome(requests, statuses=None):
        """Return (indices, objects) of the requests complete now."""
        requests = _request_list(requests)
        active = [(i, r) for i, r in enumerate(requests) if not r._done]
        if not active:
            return None, None
        if any(r._waitable() is None for _, r in active):
            return Request._completed(requests, active, [
                k for k, (_, r) in enumerate(active) if r.Get_status()],
                statuses)
        return Request._completed(requests, active, activity.test_some(
            [r._waitable() for _, r in active]), statuses)

    @staticmethod
    def _completed(requests, active, picked, statuses):
        indices, objects = [], []
        sts = [Status() for _ in requests]
        for n, k in enumerate(picked):
            i, req = active[k]
            if req._done:       # completed by waitany just above
                objects.append(req._result)
                req._complete(sts[n])
            else:
                objects.append(req.wait(sts[n]))
            indices.append(i)
        _release(statuses, sts, len(indices))
        return indices, objects


class ProcNullRequest(Request):
    """An operation with PROC_NULL as its peer: active until waited for
    (a handle that tests true, as MPI's), then empty of data."""

    __module__ = 'simulator.mpi'

    def __init__(self):
        super().__init__()
        self._done = False

    def _finish(self, status):
        status._fill(PROC_NULL, ANY_TAG, 0)
        return None

    def wait(self, status=None):
        if status is not None:
            check_status(status)
        return self._complete(status) if not self._done else \
            super().wait(status)

    def test(self, status=None):
        return True, self.wait(status)

    def Get_status(self, status=None):
        if status is not None and not self._done:
            self._finish(status)
            return True
        return super().Get_status(status)

    def Free(self):
        """Forget the request: nothing is pending."""
        self._done = True

    def Cancel(self):
        """Nothing to cancel."""

    def _waitable(self):
        return None


class Grequest(Request):
    """A generalized request: the program's own operation, complete once
    ``Complete()`` is called (by any thread of the rank)."""

    __module__ = 'simulator.mpi'

    def __init__(self, request=None):
        # any null request, else only a generalized one (mpi4py's check)
        if request is not None and not isinstance(request, Grequest) and \
                (not isinstance(request, Request) or request):
            raise handle_argument_error('Grequest', request)
        super().__init__()
        if request is not None:
            _forward_to(self, request._origin)

    @classmethod
    def Start(cls, query_fn=None, free_fn=None, cancel_fn=None,
              args=None, kwargs=None):
        """Begin a generalized request; ``query_fn(status, *args,
        **kwargs)`` fills its status, ``free_fn`` runs when it is freed
        or completed by a wait, ``cancel_fn(completed)`` on Cancel."""
        from simulator.engine.actors import current
        from simulator.engine.trace import CallRecord
        ctx = current()
        if ctx is None:
            raise RuntimeError('Grequest.Start outside a simulated rank')
        req = cls()
        req._fns = (query_fn, free_fn, cancel_fn, tuple(args or ()),
                    dict(kwargs or {}))
        req._completed = False
        req._activity = activity.Condition(
            ctx.world, ctx.rank, CallRecord('Grequest.Start', ctx.rank),
            lambda: req._completed)
        req._done = False
        return req

    def complete(self, obj=None):
        """Call ``Complete``, with ``obj`` as what ``test``/``wait`` return."""
        self._value = obj
        self.Complete()

    def Complete(self):
        """Mark the operation complete (wakes a rank waiting for it)."""
        if self._done or self._completed:
            raise MPIException(ERR_REQUEST, 'Complete of a null or '
                               'completed generalized request')
        world = self._activity.world
        with world.lock:
            self._completed = True
            world.version += 1      # a change: pollers are not stuck
            world.wake(self._activity.rank)

    def _finish(self, status):
        query_fn, free_fn, _, args, kwargs = self._fns
        status._empty()
        if query_fn is not None:
            query_fn(status, *args, **kwargs)
        if free_fn is not None:
            free_fn(*args, **kwargs)
        return getattr(self, '_value', None)

    def Cancel(self):
        """Run the cancel callback (told whether it completed)."""
        super().Cancel()
        cancel_fn, args, kwargs = self._fns[2:]
        if cancel_fn is not None:
            cancel_fn(self._completed, *args, **kwargs)


_OWN = {}


def _own(request, name):
    """The simulator's own ``wait``/``test`` of ``request``: Wait and Test
    must not call a program's subclass override of the lowercase method
    (mpi4py's do not; mpi4py's test_subclass overrides them to call
    Wait/Test)."""
    origin = request.__dict__.get('_origin_req')
    if origin is not None:          # another handle: the request's own
        return _own(origin, name)
    cls = type(request)
    fn = _OWN.get((cls, name))
    if fn is None:
        fn = _OWN[cls, name] = next(
            k.__dict__[name] for k in cls.__mro__
            if name in k.__dict__ and is_ours(k))
    return fn.__get__(request, cls)


def _missing(name):
    from simulator.mpi.unsupported import mpi41_missing
    return mpi41_missing('Request.' + name)


def _forward_to(handle, origin):
    """Make ``handle`` another name of the request ``origin``."""
    handle.__dict__['_origin_req'] = origin
    mro = type(handle).__mro__
    for name in ('Wait', 'wait', 'Test', 'test', 'Get_status',
                 'get_status', 'Cancel', 'cancel', 'Free', 'Start',
                 '_complete', '_finish', '_ready', '_waitable'):
        owner = next((k for k in mro if name in k.__dict__), None)
        if owner is not None and not is_ours(owner):
            continue    # the program's subclass overrides it
        method = getattr(origin, name, None)
        if method is not None:
            handle.__dict__[name] = method


def _release(statuses, sts, outcount):
    """Copy the per-request statuses ``sts`` into the caller's
    ``statuses`` as mpi4py does: a list grows to ``outcount`` entries,
    then the first min(len(requests), len(statuses)) are overwritten."""
    if statuses is None:
        return
    if outcount > len(statuses) and isinstance(statuses, list):
        statuses.extend(Status() for _ in range(len(statuses), outcount))
    for st, src in zip(statuses, sts):
        st._copy_from(src)


REQUEST_NULL = Request()
