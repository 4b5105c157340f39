"""mpi4py's special values, error classes and ``MPI.Exception``."""
from simulator.engine.p2p import ANY_SOURCE, ANY_TAG, PROC_NULL

__all__ = ['ANY_SOURCE', 'ANY_TAG', 'PROC_NULL', 'ROOT', 'UNDEFINED',
           'COMM_TYPE_SHARED', 'IDENT', 'CONGRUENT', 'SIMILAR', 'UNEQUAL',
           'SUCCESS', 'ERR_BUFFER', 'ERR_COUNT', 'ERR_TYPE', 'ERR_TAG',
           'ERR_COMM', 'ERR_RANK', 'ERR_ROOT', 'ERR_REQUEST', 'ERR_GROUP',
           'ERR_TRUNCATE', 'ERR_OTHER',
           'ERR_ARG', 'ERR_OP', 'ERR_INTERN', 'InPlaceType', 'IN_PLACE',
           'BottomType', 'BOTTOM', 'Exception', 'THREAD_SINGLE',
           'THREAD_FUNNELED', 'THREAD_SERIALIZED', 'THREAD_MULTIPLE']

# Values as Open MPI 5 / mpi4py 4 define them, so printed numbers agree.
# The wildcards and PROC_NULL come from the engine, which matches with them.
ROOT = -4
UNDEFINED = -32766
COMM_TYPE_SHARED = 0
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

_ERROR_STRINGS = {
    ERR_BUFFER: 'MPI_ERR_BUFFER: invalid buffer pointer',
    ERR_COUNT: 'MPI_ERR_COUNT: invalid count argument',
    ERR_TYPE: 'MPI_ERR_TYPE: invalid datatype',
    ERR_TAG: 'MPI_ERR_TAG: invalid tag',
    ERR_COMM: 'MPI_ERR_COMM: invalid communicator',
    ERR_RANK: 'MPI_ERR_RANK: invalid rank',
    ERR_ROOT: 'MPI_ERR_ROOT: invalid root',
    ERR_REQUEST: 'MPI_ERR_REQUEST: invalid request',
    ERR_GROUP: 'MPI_ERR_GROUP: invalid group',
    ERR_OP: 'MPI_ERR_OP: invalid reduce operation',
    ERR_ARG: 'MPI_ERR_ARG: invalid argument of some other kind',
    ERR_TRUNCATE: 'MPI_ERR_TRUNCATE: message truncated',
    ERR_OTHER: 'MPI_ERR_OTHER: known error not in list',
    ERR_INTERN: 'MPI_ERR_INTERN: internal error',
}


class InPlaceType(int):
    """Type of ``IN_PLACE``: the receive buffer is also the send buffer."""

    def __repr__(self):
        return 'IN_PLACE'


class BottomType(int):
    """Type of ``BOTTOM`` (accepted, never dereferenced here)."""

    def __repr__(self):
        return 'BOTTOM'


IN_PLACE = InPlaceType(-1)
BOTTOM = BottomType(0)

_builtin_exception = Exception


class Exception(RuntimeError):  # noqa: A001 -- mpi4py's own name
    """An MPI error, like ``mpi4py.MPI.Exception`` (a RuntimeError)."""

    __module__ = 'simulator.mpi'

    def __init__(self, ierr=ERR_OTHER, detail=None):
        self.error_code = ierr
        text = _ERROR_STRINGS.get(ierr, 'MPI error {}'.format(ierr))
        if detail:
            text = '{} ({})'.format(text, detail)
        super().__init__(text)

    def Get_error_class(self):
        """The MPI error class, e.g. ``ERR_TRUNCATE``."""
        return self.error_code

    def Get_error_code(self):
        """The MPI error code (same as the class here)."""
        return self.error_code

    def Get_error_string(self):
        """MPI's text for the error."""
        return str(self)

    error_class = property(Get_error_class)
    error_string = property(Get_error_string)
