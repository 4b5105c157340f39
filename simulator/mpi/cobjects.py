"""mpi4py's C-object queries ``MPI._sizeof``, ``MPI._addressof`` and
``MPI._handleof`` of handle objects and types, answered as over Open MPI
(an ``MPI_Status`` is 24 bytes, every other handle a pointer); no C
object exists here, so an address is the Python object's (a Status's,
its memory's).
"""
from simulator.mpi.naming import describe, is_ours
from simulator.mpi.request import Status, status_nbytes

__all__ = ['sizeof', 'addressof', 'handleof']

_KINDS = frozenset(('Status', 'Datatype', 'Request', 'Message', 'Op',
                    'Group', 'Info', 'Errhandler', 'Session', 'Comm', 'Win',
                    'File'))


def _kind(arg, what):
    """The simulator.mpi class ``arg`` is (or is an instance of)."""
    cls = arg if isinstance(arg, type) else type(arg)
    # The MRO, not the package's names: a module of the package must not
    # import the package (tests/test_layers.py).
    for kind in cls.__mro__:
        if kind.__name__ in _KINDS and is_ours(kind):
            return kind
    raise TypeError('{}: expected an MPI handle object or type, got '
                    '{}'.format(what, describe(arg)))


def sizeof(arg):
    """As ``MPI._sizeof``: bytes of the C object behind a handle object or
    type, as over Open MPI: an MPI_Status is 24 bytes, handles are
    pointers."""
    return status_nbytes() if _kind(arg, '_sizeof') is Status else 8


def addressof(arg):
    """As ``MPI._addressof``: where the handle lives: a Status's memory, or
    the Python object that holds the handle (no C handle exists here)."""
    if isinstance(arg, type) or _kind(arg, '_addressof') is not Status:
        _kind(arg, '_addressof')
        return id(arg)
    return arg._mem.__array_interface__['data'][0]


def handleof(arg):
    """As ``MPI._handleof``: the int handle (a Status's address)."""
    if isinstance(arg, type) or _kind(arg, '_handleof') is Status:
        return addressof(arg)
    return arg.handle
