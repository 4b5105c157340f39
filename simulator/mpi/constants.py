"""mpi4py's special values, error classes and ``MPI.Exception``."""
import operator as _operator
import sys

from simulator.engine.actors import current
from simulator.engine.libraries import is_simulator_file

from simulator.engine.p2p import ANY_SOURCE, ANY_TAG, PROC_NULL
from simulator.mpi.bufexport import export_nothing
from simulator.mpi.cargs import c_int
from simulator.mpi.errstrings import ERROR_STRINGS
from simulator.mpi.naming import class_ref, reduce_constant

__all__ = ['ANY_SOURCE', 'ANY_TAG', 'PROC_NULL', 'ROOT', 'UNDEFINED',
           'COMM_TYPE_SHARED', 'IDENT', 'CONGRUENT', 'SIMILAR', 'UNEQUAL',
           'SUCCESS', 'ERR_BUFFER', 'ERR_COUNT', 'ERR_TYPE', 'ERR_TAG',
           'ERR_COMM', 'ERR_RANK', 'ERR_ROOT', 'ERR_REQUEST', 'ERR_GROUP',
           'ERR_TRUNCATE', 'ERR_OTHER',
           'ERR_ARG', 'ERR_OP', 'ERR_INTERN', 'ERR_UNKNOWN', 'ERR_INFO_KEY',
           'ERR_INFO_NOKEY', 'ERR_INFO_VALUE', 'ERR_INFO', 'ERR_KEYVAL',
           'ERR_ERRHANDLER', 'ERR_LASTCODE', 'ERR_SESSION', 'ERR_WIN',
           'ERR_UNSUPPORTED_OPERATION', 'InPlaceType', 'IN_PLACE',
           'BottomType', 'BOTTOM', 'BufferAutomaticType',
           'BUFFER_AUTOMATIC', 'BSEND_OVERHEAD', 'Exception', 'THREAD_SINGLE',
           'THREAD_FUNNELED', 'THREAD_SERIALIZED', 'THREAD_MULTIPLE']

# Values as Open MPI 5 / mpi4py 4 define them, so printed numbers agree.
# The wildcards and PROC_NULL come from the engine, which matches with them.
ROOT = -4
UNDEFINED = -32766
COMM_TYPE_SHARED = 0
# What a buffered send holds in the attached buffer beside its data.
BSEND_OVERHEAD = 128
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = range(4)

SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_REQUEST = 7
ERR_ROOT = 8
ERR_GROUP = 9
ERR_OP = 10
ERR_ARG = 13
ERR_OTHER = 16
ERR_TRUNCATE = 15
ERR_INTERN = 17
ERR_UNKNOWN = 14
ERR_INFO_KEY = 31
ERR_INFO_NOKEY = 32
ERR_INFO_VALUE = 33
ERR_INFO = 34
ERR_KEYVAL = 36
ERR_UNSUPPORTED_OPERATION = 52
ERR_WIN = 53
ERR_SESSION = 78
# Open MPI 5 numbers MPI_ERR_ERRHANDLER as its last code.
ERR_ERRHANDLER = ERR_LASTCODE = 92



@export_nothing
class _AddressConstant:
    """A buffer address that is a name (mpi4py's BOTTOM, IN_PLACE,
    BUFFER_AUTOMATIC): one instance per class, equal to its address as an
    int and hashed as it, exporting zero bytes, pickled by name; no
    arithmetic (it is no int)."""

    __slots__ = ()
    _value = 0

    def __new__(cls, *args):
        # type(BOTTOM)() is BOTTOM, as mpi4py's
        try:
            return cls.__dict__['_instance']
        except KeyError:
            return object.__new__(cls)

    def __int__(self):
        return self._value

    def __eq__(self, other):
        if isinstance(other, (_AddressConstant, int)):
            return self._value == int(other)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(self._value)

    def __bool__(self):
        return bool(self._value)

    def __repr__(self):
        return self._name

    def __reduce__(self):
        return reduce_constant(self, self._name)


class InPlaceType(_AddressConstant):
    """Type of ``IN_PLACE``: the receive buffer is also the send buffer
    (Open MPI's MPI_IN_PLACE is address 1)."""

    __slots__ = ()
    __module__ = 'simulator.mpi'
    _value, _name = 1, 'IN_PLACE'


class BottomType(_AddressConstant):
    """Type of ``BOTTOM``: address 0, displacements are addresses."""

    __slots__ = ()
    __module__ = 'simulator.mpi'
    _value, _name = 0, 'BOTTOM'

    def __index__(self):
        return self._value


class BufferAutomaticType(_AddressConstant):
    """Type of ``BUFFER_AUTOMATIC`` (MPI 4.1's automatic buffering)."""

    __slots__ = ()
    __module__ = 'simulator.mpi'
    _name = 'BUFFER_AUTOMATIC'


IN_PLACE = InPlaceType._instance = InPlaceType()
BOTTOM = BottomType._instance = BottomType()
BUFFER_AUTOMATIC = BufferAutomaticType._instance = BufferAutomaticType()

_builtin_exception = Exception


class Exception(RuntimeError):  # noqa: A001 -- mpi4py's own name
    """An MPI error, like ``mpi4py.MPI.Exception`` (a RuntimeError that
    compares and converts like its error code)."""

    __module__ = 'simulator.mpi'
    # The code lives in a slot, as mpi4py's in its C struct: vars(e) is
    # empty there (but for the notes the simulator adds). mpi4py's is a
    # Python class: it takes weak references.
    __slots__ = ('_ierr', '__weakref__')

    def __init__(self, ierr=SUCCESS, detail=None):
        if detail is not None and not is_simulator_file(
                sys._getframe(1).f_code.co_filename):
            # mpi4py's signature has the code alone; the simulator's own
            # errors add what it knows.
            raise TypeError('__init__() takes at most 2 positional '
                            'arguments (3 given)')
        ierr = c_int(ierr)
        # mpi4py's rule: a negative code is no MPI error code at all
        self._ierr = int(ierr) if ierr >= SUCCESS else ERR_UNKNOWN
        super().__init__(ierr)
        if detail:
            # str(e) and e.args are mpi4py's (programs print and compare
            # them); what the simulator knows of the cause (the value that
            # was wrong) is a note, which tracebacks show.
            self.add_note(detail)

    def __str__(self):
        # An unknown code: mpi4py's str() raises MPI_ERR_ARG.
        return error_string(self._ierr)

    def __reduce__(self):
        # As BaseException's, naming the class as naming.class_ref does.
        return (class_ref(type(self)),) + super().__reduce__()[1:]

    def __repr__(self):
        return 'MPI.Exception({})'.format(self._ierr)

    # int(e) but no __index__, as mpi4py's: range(e) and [1, 2][e] are
    # TypeErrors there.
    def __int__(self):
        return self._ierr

    def __bool__(self):
        return self._ierr != SUCCESS

    def __hash__(self):
        return hash(self._ierr)

    def _cmp(self, other, op):
        if isinstance(other, Exception):
            other = other._ierr
        if not isinstance(other, int):
            return NotImplemented
        return op(self._ierr, other)

    def __eq__(self, other):
        return self._cmp(other, _operator.eq)

    def __ne__(self, other):
        return self._cmp(other, _operator.ne)

    def __lt__(self, other):
        return self._cmp(other, _operator.lt)

    def __le__(self, other):
        return self._cmp(other, _operator.le)

    def __gt__(self, other):
        return self._cmp(other, _operator.gt)

    def __ge__(self, other):
        return self._cmp(other, _operator.ge)

    def Get_error_class(self):
        """The MPI error class, e.g. ``ERR_TRUNCATE`` (MPI_ERR_ARG for a
        code MPI does not know, as mpi4py raises)."""
        return error_class(self._ierr)

    def Get_error_code(self):
        """The MPI error code."""
        return self._ierr

    def Get_error_string(self):
        """MPI's text for the error."""
        return str(self)

    error_code = property(Get_error_code)
    error_class = property(Get_error_class)
    error_string = property(Get_error_string)


_OUTSIDE = {}


def _user_errors():
    ctx = current()
    local = _OUTSIDE if ctx is None else ctx.local
    table = local.get('mpi.errors')
    if table is None:
        # code -> class (a class is its own code), code -> string
        table = local['mpi.errors'] = {'class': {}, 'string': {},
                                       'last': ERR_LASTCODE}
    return table


def _valid(code, what):
    if not isinstance(code, int):
        raise TypeError('{}: error code must be an int, got {!r}'.format(
            what, code))
    if 0 <= code <= ERR_LASTCODE or code in _user_errors()['class']:
        return code
    raise Exception(ERR_ARG, '{}: {} is not an error code'.format(
        what, code))


def error_class(errorcode):
    """The error class of ``errorcode``. As in Open MPI, user-added
    classes and codes beyond the predefined ones report ERR_UNKNOWN for
    a class and their class for a code."""
    code = _valid(errorcode, 'Get_error_class')
    if code == ERR_LASTCODE:
        return ERR_UNKNOWN
    cls = _user_errors()['class'].get(code)
    if cls is None:
        return code
    return ERR_UNKNOWN if cls == code else cls


def predefined_free(error_class, name):
    """The error for a program's ``Free`` of the predefined handle
    ``name`` (``MPI.ERRORS_RETURN.Free()``): MPI calls it erroneous, and
    Open MPI 5.0 frees memory it never allocated (the process aborts,
    "free(): invalid pointer"), so the simulator refuses it at the call."""
    return Exception(error_class, 'Free of the predefined {} (under '
                     'mpiexec the process aborts: free(): invalid '
                     'pointer)'.format(name))


def error_string(errorcode):
    """MPI's text for ``errorcode``."""
    code = _valid(errorcode, 'Get_error_string')
    table = _user_errors()
    if code in table['class']:
        return table['string'].get(code, '')
    return ERROR_STRINGS.get(code, 'MPI error {}'.format(code))
