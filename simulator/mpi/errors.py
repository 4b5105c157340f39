"""Error classes and codes: ``Get_error_class``, ``Get_error_string`` and
the user's own (``Add_error_class``, ``Add_error_code``,
``Add_error_string``), numbered as Open MPI 5 numbers them.

User classes and codes belong to the rank that adds them (a rank is a
process); they start after ``ERR_LASTCODE``.
"""
from simulator.mpi.constants import ERR_ARG, ERR_LASTCODE, SUCCESS
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import _user_errors as _user
from simulator.mpi.constants import error_class as Get_error_class
from simulator.mpi.constants import error_string as Get_error_string

__all__ = ['Get_error_class', 'Get_error_string', 'Add_error_class',
           'Add_error_code', 'Add_error_string', 'last_used_code']


def Add_error_class():
    """A new error class (its own first code)."""
    table = _user()
    table['last'] += 1
    code = table['last']
    table['class'][code] = code
    return code


def Add_error_code(errorclass):
    """A new error code of ``errorclass`` (a predefined class or one
    made by ``Add_error_class``)."""
    table = _user()
    if not isinstance(errorclass, int):
        raise TypeError('Add_error_code: error class must be an int, got '
                        '{!r}'.format(errorclass))
    # Open MPI takes any predefined class too (ERR_OTHER...), not a code
    predefined = SUCCESS <= errorclass <= ERR_LASTCODE
    if not predefined and table['class'].get(errorclass) != errorclass:
        raise MPIException(ERR_ARG, 'Add_error_code: {} is neither a '
                           'predefined error class nor one added by '
                           'Add_error_class'.format(errorclass))
    table['last'] += 1
    code = table['last']
    table['class'][code] = errorclass
    return code


def Add_error_string(errorcode, string):
    """Set the text of a user error class or code."""
    table = _user()
    if not isinstance(string, str):
        raise TypeError('Add_error_string: string must be a str, got '
                        '{!r}'.format(string))
    if errorcode not in table['class']:
        raise MPIException(ERR_ARG, 'Add_error_string: {!r} is not a user '
                           'error class or code'.format(errorcode))
    table['string'][errorcode] = string


def last_used_code():
    """The LASTUSEDCODE attribute: the highest error code in use."""
    return _user()['last']

