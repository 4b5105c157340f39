"""``MPI._typecode`` / ``MPI._typealign``: the private datatype queries
that ``mpi4py.util.dtlib`` imports from ``mpi4py.MPI``."""

__all__ = ['_typecode', '_typealign']


def _typecode(datatype):
    """The character code or type string of a datatype, or None."""
    try:
        return datatype.tocode()
    except ValueError:
        return None


def _typealign(datatype):
    """The alignment in bytes of a predefined datatype, or None."""
    if not datatype.is_predefined:
        return None
    dtype = datatype.dtype
    return None if dtype is None else dtype.alignment
