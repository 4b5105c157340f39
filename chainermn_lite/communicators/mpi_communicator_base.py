"""ChainerMN's ``MpiCommunicatorBase`` path: MpiCommunicator bound to a
gradient strategy by a class attribute.

ChainerMN users construct communicator classes directly
(``NaiveCommunicator(mpi_comm)``) and subclass ``MpiCommunicatorBase``;
every such class here is a few lines naming its strategy, the logic stays
in ``MpiCommunicator``.
"""
from chainermn_lite.communicators.mpi_communicator import MpiCommunicator

__all__ = ['MpiCommunicatorBase']


class _NoGradientStrategy:
    """Strategy of the bare base class: ChainerMN leaves the gradient
    mean to subclasses, so calling it is an error naming the class."""

    def mean(self, comm, grads):
        raise NotImplementedError(
            '{} has no gradient strategy: set strategy_factory or override '
            'multi_node_mean_grad'.format(type(comm).__name__))


class MpiCommunicatorBase(MpiCommunicator):
    """MpiCommunicatorBase(mpi_comm): a communicator over an mpi4py-like
    ``mpi_comm`` whose gradient strategy comes from ``strategy_factory``
    (a callable ``mpi_comm -> strategy``; none in the base class)."""

    strategy_factory = None
    communicator_name = 'mpi_base'

    def __init__(self, mpi_comm, **configs):
        factory = type(self).strategy_factory
        strategy = (_NoGradientStrategy() if factory is None
                    else factory(mpi_comm))
        super().__init__(mpi_comm, strategy, self.communicator_name,
                         configs)
