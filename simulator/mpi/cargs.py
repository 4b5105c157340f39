"""Arguments read as mpi4py's compiled signatures read them.

mpi4py declares ranks, tags, roots, colors and keys as C ``int`` (sizes
and displacement units as ``MPI_Aint``/``MPI_Count``): Cython converts
any object with ``__int__`` (NumPy integers, a float, which it truncates,
a Decimal) and refuses the rest, with words of its own. Names and info
strings are C strings: a str, or bytes. A program that passes
``dest=np.int64(1)`` must run here as it runs there, and one that passes
``dest='1'`` must fail the same way.
"""
from simulator.mpi.values import VALUES

__all__ = ['INT_MAX', 'c_aint', 'c_int', 'c_str', 'object_name']

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
_LONG_MIN, _LONG_MAX = -2 ** 63, 2 ** 63 - 1


def c_int(value):
    """``value`` as a C int argument of mpi4py: TypeError('an integer is
    required') without ``__int__``, OverflowError outside the C types."""
    value = c_aint(value)
    if not INT_MIN <= value <= INT_MAX:
        raise OverflowError('value too large to convert to int')
    return value


def c_aint(value):
    """``value`` as an address-sized argument of mpi4py (a size, a
    displacement unit: ``MPI_Aint``, ``MPI_Count``)."""
    if type(value) is not int:
        convert = getattr(type(value), '__int__', None)
        if convert is None:
            raise TypeError('an integer is required')
        value = convert(value)
        if not isinstance(value, int):
            raise TypeError('__int__ returned non-int (type {})'.format(
                type(value).__name__))
        value = int(value)      # a bool or an int subclass: the number
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise OverflowError('Python int too large to convert to C long')
    return value


def c_str(value):
    """``value`` as a C string argument of mpi4py (a name, an info key or
    value): a str, or bytes, which it decodes."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode()
    raise TypeError('expected bytes, {} found'.format(type(value).__name__))


def object_name(value):
    """A communicator's, datatype's or window's new name: Open MPI keeps
    what fits MPI_MAX_OBJECT_NAME (its NUL included)."""
    return c_str(value)[:VALUES['MAX_OBJECT_NAME'] - 1]
