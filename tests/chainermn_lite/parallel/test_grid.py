"""Grid layout helpers and the halo+data communicator split."""
import numpy as np
import pytest

from chainermn_lite.parallel import grid as layout

DATA_GRIDS = {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 1, 2), 8: (2, 2, 2)}


def test_axis_bounds_follow_array_split():
    for length in range(0, 12):
        for parts in range(1, 6):
            expected = [(int(a[0]), int(a[-1]) + 1) if len(a) else None
                        for a in np.array_split(np.arange(length), parts)]
            got = layout.axis_bounds(length, parts)
            assert [b if b[0] < b[1] else None for b in got] == expected
            assert sum(b - a for a, b in got) == length


def test_grid_positions_row_major_and_checks():
    assert [layout.grid_position(r, (2, 3)) for r in range(6)] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert layout.tile_bounds((7, 5), (2, 3), 5) == ((4, 7), (4, 5))
    with pytest.raises(ValueError, match='grid 2x3 has 6 cells but the '
                       'communicator has 4 ranks'):
        layout.check_grid((2, 3), 4)
    with pytest.raises(ValueError, match=r'two positive ints .* \(0, 4\)'):
        layout.check_grid((0, 4), 4)


@pytest.mark.mpi(sizes=tuple(DATA_GRIDS))
@pytest.mark.parametrize('kind', ['raw', 'chainermn_lite'])
def test_split_halo_data_grid(mpi_comm, kind, make_communicator):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    data, rows, cols = DATA_GRIDS[size]
    comm = mpi_comm if kind == 'raw' else \
        make_communicator(mpi_comm)
    spatial, data_comm = layout.split_halo_data_grid(comm,
                                                     (data, rows, cols))
    spatial_mpi = layout.as_mpi_comm(spatial)
    data_mpi = layout.as_mpi_comm(data_comm)
    assert spatial_mpi.Get_size() == rows * cols
    assert data_mpi.Get_size() == data
    assert spatial_mpi.Get_rank() == rank % (rows * cols)
    assert data_mpi.Get_rank() == rank // (rows * cols)
    # One replica's ranks are consecutive; a cell's are rows*cols apart.
    assert spatial_mpi.allgather(rank) == [
        rank - rank % (rows * cols) + i for i in range(rows * cols)]
    assert data_mpi.allgather(rank) == [
        rank % (rows * cols) + i * rows * cols for i in range(data)]
    with pytest.raises(ValueError, match=r'has {} cells but the '
                       r'communicator has {} ranks'.format(
                           2 * size, size)):
        layout.split_halo_data_grid(comm, (2, size, 1))
