"""ChainerMN's ``DummyCommunicator``: packs gradients but never
communicates (measures the cost of packing)."""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['DummyCommunicator']


class DummyCommunicator(MpiCommunicatorBase):
    """DummyCommunicator(mpi_comm): the ``dummy`` communicator, as returned
    by ``create_communicator('dummy', mpi_comm)``."""

    strategy_factory = _strategies.Dummy
    communicator_name = 'dummy'
