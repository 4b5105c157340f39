"""Grid layout of ranks for partitioned layers, and the halo+data split.

A spatial grid ``(rows, cols)`` places rank ``r`` at ``(r // cols,
r % cols)``; an axis of length ``n`` split over ``parts`` follows
``numpy.array_split`` (the first ``n % parts`` parts are one longer).
"""
__all__ = ['as_mpi_comm', 'axis_bounds', 'check_grid', 'grid_position',
           'tile_bounds', 'split_halo_data_grid']


def as_mpi_comm(comm):
    """The mpi4py-like communicator of ``comm``.

    Accepts a chainermn_lite (or ChainerMN) communicator, whose
    ``mpi_comm`` is used, or a raw mpi4py-like communicator.
    """
    mpi_comm = getattr(comm, 'mpi_comm', None)
    if mpi_comm is not None:
        return mpi_comm
    if not hasattr(comm, 'Get_rank'):
        raise TypeError('expected a communicator (chainermn_lite or '
                        'mpi4py-like), got {!r}'.format(comm))
    return comm


def axis_bounds(length, parts):
    """[(start, stop)] of the ``parts`` pieces of ``numpy.array_split``."""
    if parts < 1:
        raise ValueError('cannot split an axis into {} parts'.format(parts))
    small, extra = divmod(int(length), parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + small + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _positive_pair(value, what):
    try:
        pair = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError('{} must be a pair (rows, cols), got {!r}'.format(
            what, value)) from None
    if len(pair) != 2 or min(pair) < 1:
        raise ValueError('{} must be two positive ints (rows, cols), got '
                         '{!r}'.format(what, value))
    return pair


def check_grid(grid, size):
    """check_grid(grid, size): ``grid`` as (rows, cols), if it has ``size``
    cells; ValueError naming both otherwise."""
    rows, cols = _positive_pair(grid, 'grid')
    if rows * cols != size:
        raise ValueError(
            'grid {}x{} has {} cells but the communicator has {} ranks; '
            'the grid size must equal the communicator size'.format(
                rows, cols, rows * cols, size))
    return rows, cols


def grid_position(rank, grid):
    """(row, col) of ``rank`` in the row-major ``grid``."""
    rows, cols = grid
    if not 0 <= rank < rows * cols:
        raise ValueError('rank {} is outside grid {}x{}'.format(
            rank, rows, cols))
    return rank // cols, rank % cols


def tile_bounds(full_hw, grid, rank):
    """((h0, h1), (w0, w1)): the part of an H x W image ``rank`` owns."""
    height, width = full_hw
    row, col = grid_position(rank, grid)
    return (axis_bounds(height, grid[0])[row],
            axis_bounds(width, grid[1])[col])


def split_halo_data_grid(comm, grid):
    """split_halo_data_grid(comm, grid=(data, rows, cols)):
    (spatial_comm, data_comm) for neon's halodatapar.

    Rank ``r`` is replica ``r // (rows * cols)`` and grid cell ``r % (rows
    * cols)``. ``spatial_comm`` joins the ranks of one replica (halo
    exchange over a ``(rows, cols)`` grid, one micro-batch);
    ``data_comm`` joins the ranks of one grid cell across replicas (their
    gradients are averaged, e.g. by ``create_multi_node_optimizer``).
    Both have the kind of ``comm``: chainermn_lite communicators are split
    with ``comm.split``, raw mpi4py-like ones with ``Split``.
    """
    try:
        data, rows, cols = (int(v) for v in grid)
    except (TypeError, ValueError):
        raise ValueError('grid must be (data, rows, cols), got {!r}'.format(
            grid)) from None
    if min(data, rows, cols) < 1:
        raise ValueError('grid must be three positive ints, got {!r}'.format(
            grid))
    mpi_comm = as_mpi_comm(comm)
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    if data * rows * cols != size:
        raise ValueError(
            'grid {}x{}x{} (data x rows x cols) has {} cells but the '
            'communicator has {} ranks'.format(data, rows, cols,
                                               data * rows * cols, size))
    replica, cell = divmod(rank, rows * cols)
    split = comm.split if mpi_comm is not comm else mpi_comm.Split
    spatial = split(replica, cell)
    data_comm = split(cell, replica)
    return spatial, data_comm
