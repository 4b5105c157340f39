"""ChainerMN's ``MpiCommunicatorBase`` path: MpiCommunicator bound to a
gradient strategy by a class attribute.

ChainerMN users construct communicator classes directly
(``NaiveCommunicator(mpi_comm)``) and subclass ``MpiCommunicatorBase``;
every such class here is a few lines naming its strategy, the logic stays
in ``MpiCommunicator``.
"""
from chainermn_lite.communicators import _strategies
from chainermn_lite.communicators.mpi_communicator import MpiCommunicator

__all__ = ['MpiCommunicatorBase']


class MpiCommunicatorBase(MpiCommunicator):
    """MpiCommunicatorBase(mpi_comm): a communicator over an mpi4py-like
    ``mpi_comm`` whose gradient strategy comes from ``strategy_factory``
    (a callable ``mpi_comm -> strategy`` returning a
    ``_strategies.GradientStrategy``). The base class has none: like
    ChainerMN it leaves the gradient mean to subclasses, so
    ``multi_node_mean_grad`` raises NotImplementedError naming the class,
    while ``bcast_data`` and everything else work."""

    strategy_factory = None
    communicator_name = 'mpi_base'

    def __init__(self, mpi_comm, **configs):
        factory = type(self).strategy_factory
        if factory is None:
            factory = _strategies.GradientStrategy
        super().__init__(mpi_comm, factory(mpi_comm), self.communicator_name,
                         configs)

    def _new_like(self, sub, configs):
        # ChainerMN's split makes self.__class__(mpi_comm=...): a subclass
        # keeps its own methods and runs its own __init__.
        new = type(self)(mpi_comm=sub)
        for name, value in configs.items():
            if new._configs.get(name, object()) != value:
                new.set_config(name, value)
        return new
