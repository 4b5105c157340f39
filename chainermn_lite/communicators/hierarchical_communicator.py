"""ChainerMN's ``HierarchicalCommunicator`` (ChainerMN < 7): reduce in
the node, allreduce among node leaders, bcast in the node."""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['HierarchicalCommunicator']


class HierarchicalCommunicator(MpiCommunicatorBase):
    """HierarchicalCommunicator(mpi_comm): the ``hierarchical``
    communicator, as ``create_communicator('hierarchical', mpi_comm)``."""

    strategy_factory = _strategies.Hierarchical
    communicator_name = 'hierarchical'
