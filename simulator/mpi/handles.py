"""Integer handles (``handle``, ``toint``/``fromint``, ``py2f``/``f2py``)
for the simulator's MPI objects.

An MPI object is named by an int that another handle object can be made
from (``MPI.Request.fromhandle(req.handle)``), as C and Fortran code do
with mpi4py's handles. Each rank numbers the objects it was asked about in
its own table (a rank is a process); 0 is the null handle of every kind.
``Info`` and ``Errhandler`` live in :mod:`simulator.mpi.commattr`.
"""
import itertools

from simulator.mpi.naming import class_ref
from simulator.mpi.ranklocal import rank_local

__all__ = ['HandleMixin', 'handle_of', 'target_of', 'register_fixed',
           'handle_argument_error']

# Predefined objects keep one number in every rank (filled at import).
_FIXED_NUMBER = {}
_FIXED_TARGET = {}


def handle_argument_error(kind, value):
    """The TypeError of ``MPI.<kind>(value)`` given a ``value`` that is not
    a handle of that kind (mpi4py's copy constructors take only their own)."""
    article = 'an' if kind[0] in 'AEIOU' else 'a'
    return TypeError('{}() argument must be {} {}, not {}'.format(
        kind, article, kind, type(value).__name__))


def register_fixed(target, number, kind):
    """Give the predefined ``target`` the handle ``number`` (< 1024)
    in every rank; ``kind`` is its class's name."""
    _FIXED_NUMBER[id(target)] = (number, target)
    _FIXED_TARGET[kind, number] = target


def _table():
    return rank_local('mpi.handles', lambda: {
        'numbers': itertools.count(1 << 10), 'by_id': {}, 'by_number': {}})


def handle_of(target):
    """The int naming ``target`` in this rank (0 for None: the null)."""
    if target is None:
        return 0
    fixed = _FIXED_NUMBER.get(id(target))
    if fixed is not None and fixed[1] is target:
        return fixed[0]
    table = _table()
    entry = table['by_id'].get(id(target))
    if entry is None:
        number = next(table['numbers'])
        # Keep the object: a handle stays valid while the program holds
        # the int, as an MPI handle does until the object is freed.
        table['by_id'][id(target)] = entry = (number, target)
        table['by_number'][number] = target
    return entry[0]


def target_of(number, kind):
    """The object the int ``number`` names in this rank (None for 0)."""
    if not isinstance(number, int):
        raise TypeError('{} handle must be an int, got {!r}'.format(
            kind, number))
    if number == 0:
        return None
    if (kind, number) in _FIXED_TARGET:
        return _FIXED_TARGET[kind, number]
    try:
        return _table()['by_number'][number]
    except KeyError:
        raise ValueError('{} handle {} names no object of this '
                         'rank'.format(kind, number)) from None


class HandleMixin:
    """``handle``, ``toint``, ``py2f`` and their inverses for a class whose
    instances name a target object (``_handle_target()``) and can be made
    from one (``_from_target(target)``)."""

    def __new__(cls, *args, **kwargs):
        # mpi4py's handle types take their argument in __new__: a
        # subclass calls super().__new__(cls, obj).
        return super().__new__(cls)

    def _handle_target(self):
        raise NotImplementedError

    def _reduce_copy(self, constant):
        """The ``__reduce__`` of a handle to a named object that is not the
        constant itself: the constant, given to the handle's own class
        (mpi4py's: a subclass's copy is of that subclass)."""
        return (class_ref(type(self)), (constant,))

    @classmethod
    def _from_target(cls, target):
        return cls() if target is None else cls(target)

    @property
    def handle(self):
        """The object's int handle (0 for the null object)."""
        return handle_of(self._handle_target())

    def toint(self):
        """The C int of the handle."""
        return self.handle

    def py2f(self):
        """The Fortran int of the handle."""
        return self.handle

    @classmethod
    def fromhandle(cls, handle):
        """A new handle object of this class for the int ``handle``."""
        return cls._from_target(target_of(handle, cls.__name__))

    @classmethod
    def fromint(cls, value):
        """The handle of a C int (as ``fromhandle``)."""
        return cls.fromhandle(value)

    @classmethod
    def f2py(cls, value):
        """``fromhandle`` for a Fortran int."""
        return cls.fromhandle(value)
