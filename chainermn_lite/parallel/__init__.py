"""Layout and buffer collectives behind the partitioned (neon) layers."""
from chainermn_lite.parallel.grid import as_mpi_comm  # NOQA
from chainermn_lite.parallel.grid import axis_bounds  # NOQA
from chainermn_lite.parallel.grid import check_grid  # NOQA
from chainermn_lite.parallel.grid import grid_position  # NOQA
from chainermn_lite.parallel.grid import split_halo_data_grid  # NOQA
from chainermn_lite.parallel.grid import tile_bounds  # NOQA
