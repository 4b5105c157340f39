"""ChainerMN's ``FlatCommunicator``: gradients packed into one buffer,
chunked Allreduce."""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['FlatCommunicator']


class FlatCommunicator(MpiCommunicatorBase):
    """FlatCommunicator(mpi_comm): the ``flat`` communicator, as returned by
    ``create_communicator('flat', mpi_comm)``."""

    strategy_factory = _strategies.Flat
    communicator_name = 'flat'
