"""ChainerMN's ``NonCudaAwareCommunicator``: the flat allreduce through
host buffers."""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['NonCudaAwareCommunicator']


class NonCudaAwareCommunicator(MpiCommunicatorBase):
    """NonCudaAwareCommunicator(mpi_comm): the ``non_cuda_aware``
    communicator, as ``create_communicator('non_cuda_aware', mpi_comm)``."""

    strategy_factory = _strategies.NonCudaAware
    communicator_name = 'non_cuda_aware'

    # ChainerMN's reduces inside a node with NCCL; this one reduces through
    # host MPI only (device arrays staged, see _host_staging), so it never
    # holds an NCCL communicator.
    intra_nccl_comm = None

    def _init_comms(self):
        """ChainerMN creates its intra-node NCCL communicator here; this
        communicator has none to create."""
