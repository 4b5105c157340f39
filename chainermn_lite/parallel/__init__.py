"""Layout and buffer collectives behind the partitioned (neon) layers."""
from chainermn_lite.parallel.grid import as_mpi_comm  # noqa: F401
from chainermn_lite.parallel.grid import axis_bounds  # noqa: F401
from chainermn_lite.parallel.grid import check_grid  # noqa: F401
from chainermn_lite.parallel.grid import grid_position  # noqa: F401
from chainermn_lite.parallel.grid import split_halo_data_grid  # noqa: F401
from chainermn_lite.parallel.grid import tile_bounds  # noqa: F401
