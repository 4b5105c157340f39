"""Differentiable communication (Chainer FunctionNodes)."""
from chainermn_lite.functions.collective_communication import (  # NOQA
    allgather, allreduce, alltoall, bcast, gather, scatter)
from chainermn_lite.functions.point_to_point import recv, send  # NOQA
from chainermn_lite.functions.pseudo_connect import pseudo_connect  # NOQA
