"""Error classes and codes: ``Get_error_class``, ``Get_error_string`` and
the user's own (``Add_error_class``, ``Add_error_code``,
``Add_error_string``), numbered as Open MPI 5 numbers them.

User classes and codes belong to the rank that adds them (a rank is a
process); they start after ``ERR_LASTCODE``.
"""
from simulator.engine.actors import current
from simulator.mpi.constants import (_ERROR_STRINGS, ERR_ARG, ERR_LASTCODE,
                                     ERR_UNKNOWN)
from simulator.mpi.constants import Exception as MPIException

__all__ = ['Get_error_class', 'Get_error_string', 'Add_error_class',
           'Add_error_code', 'Add_error_string', 'last_used_code']

_OUTSIDE = {}


def _user():
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
    if 0 <= code <= ERR_LASTCODE or code in _user()['class']:
        return code
    raise MPIException(ERR_ARG, '{}: {} is not an error code'.format(
        what, code))


def Get_error_class(errorcode):
    """The error class of ``errorcode``. As in Open MPI, user-added
    classes and codes beyond the predefined ones report ERR_UNKNOWN for
    a class and their class for a code."""
    code = _valid(errorcode, 'Get_error_class')
    if code == ERR_LASTCODE:
        return ERR_UNKNOWN
    cls = _user()['class'].get(code)
    if cls is None:
        return code
    return ERR_UNKNOWN if cls == code else cls


def Get_error_string(errorcode):
    """MPI's text for ``errorcode``."""
    code = _valid(errorcode, 'Get_error_string')
    table = _user()
    if code in table['class']:
        return table['string'].get(code, '')
    return _ERROR_STRINGS.get(code, 'MPI error {}'.format(code))


def Add_error_class():
    """A new error class (its own first code)."""
    table = _user()
    table['last'] += 1
    code = table['last']
    table['class'][code] = code
    return code


def Add_error_code(errorclass):
    """A new error code of the user class ``errorclass``."""
    table = _user()
    if not isinstance(errorclass, int):
        raise TypeError('Add_error_code: error class must be an int, got '
                        '{!r}'.format(errorclass))
    if table['class'].get(errorclass) != errorclass:
        raise MPIException(ERR_ARG, 'Add_error_code: {} is not a user error '
                           'class'.format(errorclass))
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

