"""ChainerMN's ``NaiveCommunicator``: one Allreduce per gradient array."""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['NaiveCommunicator']


class NaiveCommunicator(MpiCommunicatorBase):
    """NaiveCommunicator(mpi_comm): the ``naive`` communicator, as returned by
    ``create_communicator('naive', mpi_comm)``."""

    strategy_factory = _strategies.Naive
    communicator_name = 'naive'
