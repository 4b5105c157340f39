"""ChainerMN's private ``_communication_utility`` names that scripts and
ChainerMN's own tests import, over chainermn_lite's helpers."""
import numpy

from chainermn_lite import _mpi
from chainermn_lite.communicators import _object_collectives as objects
from chainermn_lite.communicators import _topology

__all__ = ['INT_MAX', 'init_ranks', 'chunked_bcast_obj', '_get_nccl_type_id']

INT_MAX = _mpi.INT_MAX


def init_ranks(mpi_comm):
    """init_ranks(mpi_comm): [rank, intra_rank, intra_size, inter_rank,
    inter_size] of the calling rank (collective over ``mpi_comm``)."""
    layout = _topology.NodeLayout(mpi_comm, _mpi.mpi_module_of(mpi_comm))
    try:
        return [mpi_comm.Get_rank(), layout.intra_rank, layout.intra_size,
                layout.inter_rank, layout.inter_size]
    finally:
        layout.free()


def chunked_bcast_obj(obj, mpi_comm, max_buf_len=256 * 1024 * 1024,
                      root=0):
    """chunked_bcast_obj(obj, mpi_comm, max_buf_len=256 MiB, root=0):
    root's object on every rank, pickled and sent in ``max_buf_len``-byte
    pieces. Like ChainerMN, a length outside 1 .. INT_MAX - 1 raises
    AssertionError."""
    if not 0 < max_buf_len < INT_MAX:
        raise AssertionError('chunked_bcast_obj: max_buf_len must be in '
                             '1..{}, got {}'.format(INT_MAX - 1,
                                                    max_buf_len))
    return objects.bcast_obj(mpi_comm, obj, max_buf_len, root)


def _get_nccl_type_id(dtype):
    """The NCCL type id of a float16/32/64 dtype (ValueError otherwise)."""
    from chainermn_lite import nccl
    ids = {numpy.dtype(numpy.float16): nccl.NCCL_FLOAT16,
           numpy.dtype(numpy.float32): nccl.NCCL_FLOAT32,
           numpy.dtype(numpy.float64): nccl.NCCL_FLOAT64}
    try:
        return ids[numpy.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError('dtype must be float16, float32 or float64, got '
                         '{!r}'.format(dtype)) from None
