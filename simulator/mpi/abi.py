"""MPI 5's ABI queries as mpi4py 4.1 offers them over Open MPI 5.0:
``Get_abi_version`` (``(-1, -1)``: Open MPI 5.0 has no standard ABI),
``Get_abi_info`` and ``Get_abi_fortran_info`` (Info objects of type
sizes and of which Fortran types exist), answered from the simulated
datatypes so that the two cannot disagree.
"""
from simulator.mpi import datatypes
from simulator.mpi.commattr import Info

__all__ = ['Get_abi_version', 'Get_abi_info', 'Get_abi_fortran_info']

_FORTRAN_SIZES = ('logical', 'integer', 'real', 'double_precision')
_FORTRAN_KINDS = (('logical', (1, 2, 4, 8, 16)),
                  ('integer', (1, 2, 4, 8, 16)),
                  ('real', (2, 4, 8, 16)),
                  ('complex', (4, 8, 16, 32)),
                  ('double_complex', ('',)))


def _datatype(name):
    return datatypes.DATATYPE_NAMES.get(name.upper())


def _size(name):
    datatype = _datatype(name)
    return datatype.Get_size() if datatype else 0


def Get_abi_version():
    """Return (-1, -1): Open MPI 5.0 implements no standard MPI ABI."""
    return (-1, -1)


def Get_abi_info():
    """Info with ``mpi_aint_size``, ``mpi_count_size``,
    ``mpi_offset_size`` (bytes)."""
    return Info.Create({'mpi_{}_size'.format(name): str(_size(name))
                        for name in ('aint', 'count', 'offset')})


def Get_abi_fortran_info():
    """Info with the Fortran types' sizes and, for each sized kind
    (``integer8``...), whether this MPI has it (``"true"``/``"false"``)."""
    items = {'mpi_{}_size'.format(name): str(_size(name))
             for name in _FORTRAN_SIZES}
    for kind, sizes in _FORTRAN_KINDS:
        for size in sizes:
            name = '{}{}'.format(kind, size)
            items['mpi_{}_supported'.format(name)] = \
                'true' if _size(name) else 'false'
    return Info.Create(items)
