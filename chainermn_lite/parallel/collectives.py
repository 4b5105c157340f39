"""Buffer collectives on NumPy arrays split along their first axis.

Written over the mpi4py API; constants come from the communicator's own
module, so the same calls run on mpi4py and on ``simulator.mpi``.
"""
import numpy

from chainermn_lite import _mpi

__all__ = ['allgather_shapes', 'allgatherv_rows', 'reduce_scatter_rows',
           'allreduce_sum', 'bcast_array']

# Longest shape allgather_shapes can carry (plus one slot for ndim).
_MAX_NDIM = 7


def _row_counts(counts, row_size):
    counts = [int(c) * row_size for c in counts]
    displs = numpy.cumsum([0] + counts[:-1]).tolist()
    return counts, displs


def allgather_shapes(mpi_comm, shape):
    """Every rank's ``shape``, as a list of tuples indexed by rank."""
    shape = tuple(int(d) for d in shape)
    if len(shape) > _MAX_NDIM:
        raise ValueError('shape {} has more than {} dims'.format(
            shape, _MAX_NDIM))
    mine = numpy.full(_MAX_NDIM + 1, -1, dtype=numpy.int64)
    mine[0] = len(shape)
    mine[1:1 + len(shape)] = shape
    everyone = numpy.empty((mpi_comm.Get_size(), _MAX_NDIM + 1),
                           dtype=numpy.int64)
    mpi_comm.Allgather(mine, everyone)
    return [tuple(int(d) for d in row[1:1 + row[0]]) for row in everyone]


def allgatherv_rows(mpi_comm, mine, counts):
    """Concatenate every rank's ``mine`` along axis 0.

    ``counts[r]`` is the number of rows rank ``r`` contributes; every rank
    passes the same ``counts`` and rows of the same trailing shape.
    """
    mine = numpy.ascontiguousarray(mine)
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, mine.dtype)
    row_size = int(numpy.prod(mine.shape[1:], dtype=numpy.int64))
    full = numpy.empty((int(sum(counts)),) + mine.shape[1:],
                       dtype=mine.dtype)
    sizes, displs = _row_counts(counts, row_size)
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
    row_size = int(numpy.prod(row_shape, dtype=numpy.int64))
    mine = numpy.empty((counts[rank],) + row_shape, dtype=full.dtype)
    if len(set(counts)) == 1:
        mpi_comm.Reduce_scatter_block([full, datatype], [mine, datatype],
                                      op=module.SUM)
        return mine
    if hasattr(mpi_comm, 'Reduce_scatter'):
        sizes = [c * row_size for c in counts]
        mpi_comm.Reduce_scatter([full, datatype], [mine, datatype],
                                recvcounts=sizes, op=module.SUM)
        return mine
    longest = max(counts)
    padded = numpy.zeros((len(counts), longest) + row_shape,
                         dtype=full.dtype)
    start = 0
    for r, count in enumerate(counts):
        padded[r, :count] = full[start:start + count]
        start += count
    block = numpy.empty((longest,) + row_shape, dtype=full.dtype)
    mpi_comm.Reduce_scatter_block([padded, datatype], [block, datatype],
                                  op=module.SUM)
    mine[...] = block[:counts[rank]]
    return mine


def allreduce_sum(mpi_comm, arrays):
    """Sum each array of ``arrays`` over the ranks, in one packed call.

    Returns new arrays; all arrays must share one dtype.
    """
    if not arrays:
        return []
    dtype = arrays[0].dtype
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, dtype)
    packed = numpy.concatenate([numpy.asarray(a, dtype=dtype).ravel()
                                for a in arrays])
    mpi_comm.Allreduce(module.IN_PLACE, [packed, datatype], op=module.SUM)
    out, start = [], 0
    for a in arrays:
        out.append(packed[start:start + a.size].reshape(a.shape))
        start += a.size
    return out


def bcast_array(mpi_comm, array, root=0):
    """Broadcast ``array`` (same shape and dtype everywhere) from root."""
    array = numpy.ascontiguousarray(array)
    module = _mpi.mpi_module_of(mpi_comm)
    datatype = _mpi.reduce_datatype(module, array.dtype)
    mpi_comm.Bcast([array, datatype], root=root)
    return array
