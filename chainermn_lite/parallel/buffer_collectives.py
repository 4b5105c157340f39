"""Buffer collectives behind the partitioned layers: NumPy arrays, not
Variables (the differentiable collectives are ``functions.
collective_communication``).

Most move arrays split along their first axis ("rows"). Written over the
mpi4py API; constants come from the communicator's own module, so the same
calls run on mpi4py and on ``simulator.mpi``.
"""
import numpy

from chainermn_lite import _mpi
from chainermn_lite import _packing
from chainermn_lite import _wire

__all__ = ['allgatherv_rows', 'reduce_scatter_rows', 'allreduce_sum',
           'bcast_array']


def _row_size(array):
    return int(numpy.prod(array.shape[1:], dtype=numpy.int64))


def allgatherv_rows(mpi_comm, mine, counts):
    """Concatenate every rank's ``mine`` along axis 0.

    ``counts[r]`` is the number of rows rank ``r`` contributes; every rank
    passes the same ``counts`` and rows of the same trailing shape.
    """
    mine = numpy.ascontiguousarray(mine)
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, mine.dtype)
    full = numpy.empty((int(sum(counts)),) + mine.shape[1:],
                       dtype=mine.dtype)
    row_size = _row_size(mine)
    sizes = [int(c) * row_size for c in counts]
    displs, _ = _wire.offsets(sizes)
    mpi_comm.Allgatherv([mine, datatype], [full, sizes, displs, datatype])
    return full


def reduce_scatter_rows(mpi_comm, full, counts):
    """Sum ``full`` over the ranks; keep this rank's ``counts`` rows.

    Rank ``r`` gets rows ``sum(counts[:r])`` to ``sum(counts[:r + 1])`` of
    the sum. Uneven counts use ``Reduce_scatter`` where the communicator
    has it, else ``Reduce_scatter_block`` on blocks padded to the longest.
    """
    full = numpy.ascontiguousarray(full)
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, full.dtype)
    rank = mpi_comm.Get_rank()
    counts = [int(c) for c in counts]
    row_shape = full.shape[1:]
    mine = numpy.empty((counts[rank],) + row_shape, dtype=full.dtype)
    if len(set(counts)) == 1:
        mpi_comm.Reduce_scatter_block([full, datatype], [mine, datatype],
                                      op=module.SUM)
        return mine
    if hasattr(mpi_comm, 'Reduce_scatter'):
        row_size = _row_size(full)
        sizes = [c * row_size for c in counts]
        mpi_comm.Reduce_scatter([full, datatype], [mine, datatype],
                                recvcounts=sizes, op=module.SUM)
        return mine
    longest = max(counts)
    padded = numpy.zeros((len(counts), longest) + row_shape,
                         dtype=full.dtype)
    starts, _ = _wire.offsets(counts)
    for r, (start, count) in enumerate(zip(starts, counts)):
        padded[r, :count] = full[start:start + count]
    block = numpy.empty((longest,) + row_shape, dtype=full.dtype)
    mpi_comm.Reduce_scatter_block([padded, datatype], [block, datatype],
                                  op=module.SUM)
    mine[...] = block[:counts[rank]]
    return mine


def allreduce_sum(mpi_comm, arrays):
    """Sum each array of ``arrays`` over the ranks, in one packed call.

    Returns new arrays (views of one buffer); all arrays must share one
    dtype.
    """
    if not arrays:
        return []
    dtype = arrays[0].dtype
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, dtype)
    packed = _packing.pack(
        arrays, numpy.empty(_packing.packed_size(arrays), dtype=dtype))
    mpi_comm.Allreduce(module.IN_PLACE, [packed, datatype], op=module.SUM)
    return _packing.views(packed, [a.shape for a in arrays])


def bcast_array(mpi_comm, array, root=0):
    """Broadcast ``array`` (same shape and dtype everywhere) from root."""
    array = numpy.ascontiguousarray(array)
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, array.dtype)
    mpi_comm.Bcast([array, datatype], root=root)
    return array
