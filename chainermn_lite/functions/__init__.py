"""Differentiable communication (Chainer FunctionNodes)."""
from chainermn_lite.functions.collective_communication import (  # noqa: F401
    allgather, allreduce, alltoall, bcast, gather, scatter)
from chainermn_lite.functions.point_to_point import recv, send  # noqa: F401
from chainermn_lite.functions.pseudo_connect import pseudo_connect  # noqa: F401
from chainermn_lite.functions.halo import gather_tiles  # noqa: F401
from chainermn_lite.functions.halo import halo_average_pooling_2d  # noqa: F401
from chainermn_lite.functions.halo import halo_convolution_2d  # noqa: F401
from chainermn_lite.functions.halo import halo_max_pooling_2d  # noqa: F401
from chainermn_lite.functions.halo import split_tiles  # noqa: F401
from chainermn_lite.functions.vecpar import gather_features  # noqa: F401
from chainermn_lite.functions.vecpar import split_features  # noqa: F401
from chainermn_lite.functions.vecpar import vecpar_linear  # noqa: F401
