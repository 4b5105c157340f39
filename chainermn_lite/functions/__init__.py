"""Differentiable communication (Chainer FunctionNodes)."""
from chainermn_lite.functions.collective_communication import (  # NOQA
    allgather, allreduce, alltoall, bcast, gather, scatter)
from chainermn_lite.functions.point_to_point import recv, send  # NOQA
from chainermn_lite.functions.pseudo_connect import pseudo_connect  # NOQA
from chainermn_lite.functions.halo import gather_tiles  # NOQA
from chainermn_lite.functions.halo import halo_average_pooling_2d  # NOQA
from chainermn_lite.functions.halo import halo_convolution_2d  # NOQA
from chainermn_lite.functions.halo import halo_max_pooling_2d  # NOQA
from chainermn_lite.functions.halo import split_tiles  # NOQA
from chainermn_lite.functions.vecpar import gather_features  # NOQA
from chainermn_lite.functions.vecpar import split_features  # NOQA
from chainermn_lite.functions.vecpar import vecpar_linear  # NOQA
