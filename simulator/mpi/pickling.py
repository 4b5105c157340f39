"""``MPI.pickle``: how the object (lowercase) calls serialize objects.

mpi4py lets a program choose the serializer of every object message by
re-initialising the one ``MPI.pickle`` object (``MPI.pickle.__init__(
dumps, loads, protocol)``: dill, marshal, JSON...), and gives
``dumps_oob`` / ``loads_oob`` for pickle protocol 5's out-of-band
buffers (what ``mpi4py.util.pkl5`` sends). Every object call of the
simulator (p2p and collectives) goes through :data:`pickle` via
:func:`dumps` / :func:`loads`, so such a choice applies here too.

A rank is a process: one rank re-initialising ``MPI.pickle`` must not
change how another rank serializes, so a :class:`Pickle`'s settings are
kept per rank while a world runs (each rank starts from the settings the
object had when the rank first used it).
"""
import os
import pickle as _std

from simulator.engine.process import process_state
from simulator.mpi.memory import buffer
from simulator.mpi.naming import unpicklable

__all__ = ['Pickle', 'pickle', 'dumps', 'loads', 'PROTOCOL', 'THRESHOLD']

# mpi4py's defaults, and the environment variables that change them.
PROTOCOL = int(os.environ.get('MPI4PY_PICKLE_PROTOCOL',
                              _std.HIGHEST_PROTOCOL))
THRESHOLD = int(os.environ.get('MPI4PY_PICKLE_THRESHOLD', 1024 ** 2 // 4))


class Pickle:
    """Serialize and deserialize Python objects for object messages."""

    __module__ = 'simulator.mpi'
    __slots__ = ('_shared',)       # no weak references, as mpi4py's

    def __reduce__(self):
        # mpi4py's cannot be pickled or copied (its settings hold
        # functions), in Python's words
        raise unpicklable(self)

    def __reduce_ex__(self, protocol):
        return self.__reduce__()

    def __init__(self, dumps=None, loads=None, protocol=None,
                 threshold=None):
        if dumps is None:
            dumps = _std.dumps
        if loads is None:
            loads = _std.loads
        if protocol is None and dumps is _std.dumps:
            protocol = PROTOCOL
        if threshold is None:
            threshold = THRESHOLD
        settings = {'dumps': dumps, 'loads': loads, 'protocol': protocol,
                    'threshold': threshold}
        if not hasattr(self, '_shared'):
            self._shared = settings
        self._settings().update(settings)

    def _settings(self):
        """This rank's settings (the shared ones outside a rank)."""
        state = process_state()
        if state is None:
            return self._shared
        key = ('simulator.mpi.Pickle', id(self))
        own = state.objects.get(key)
        if own is None:
            own = state.objects[key] = dict(self._shared)
        return own

    @property
    def PROTOCOL(self):
        """The pickle protocol (None: the serializer's default)."""
        return self._settings()['protocol']

    @PROTOCOL.setter
    def PROTOCOL(self, protocol):
        settings = self._settings()
        if protocol is None and settings['dumps'] is _std.dumps:
            protocol = PROTOCOL
        settings['protocol'] = protocol

    @property
    def THRESHOLD(self):
        """Buffers of at least this many bytes go out of band."""
        return self._settings()['threshold']

    @THRESHOLD.setter
    def THRESHOLD(self, threshold):
        self._settings()['threshold'] = THRESHOLD if threshold is None \
            else threshold

    def dumps(self, obj):
        """The serialized bytes of ``obj``."""
        settings = self._settings()
        if settings['protocol'] is None:
            data = settings['dumps'](obj)
        else:
            data = settings['dumps'](obj, settings['protocol'])
        if type(data) is not bytes:
            # Messages carry bytes (mpi4py reads the result as bytes).
            data = bytes(memoryview(data))
        return data

    def loads(self, data):
        """The object serialized in ``data`` (a bytes-like object)."""
        return self._settings()['loads'](data)

    def dumps_oob(self, obj):
        """Return (bytes, buffers): ``obj`` pickled with protocol >= 5, its
        buffers of at least THRESHOLD bytes kept out of band."""
        settings = self._settings()
        protocol = settings['protocol']
        protocol = max(PROTOCOL if protocol is None else protocol, 5)
        threshold = settings['threshold']
        wrap = buffer       # mpi4py hands out MPI.buffer objects
        buffers = []

        def keep_large(pickle_buffer):
            view = pickle_buffer.raw()
            if view.nbytes < threshold:
                return True             # serialized in band
            buffers.append(wrap(view))
            return False

        data = settings['dumps'](obj, protocol, buffer_callback=keep_large)
        return data, buffers

    def loads_oob(self, data, buffers):
        """The object of ``dumps_oob``'s data and buffers."""
        return self._settings()['loads'](data, buffers=buffers)

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<simulator.mpi.Pickle protocol={}>'.format(self.PROTOCOL)


pickle = Pickle()


def dumps(obj):
    """``obj`` serialized by ``MPI.pickle`` (what object sends carry)."""
    return pickle.dumps(obj)


def loads(data):
    """The object of an object message's bytes, by ``MPI.pickle``."""
    return pickle.loads(data)
