"""ChainerMN's ``PureNcclCommunicator``: gradients averaged with one NCCL
allReduce in ``allreduce_grad_dtype`` (see ``_nccl_strategy``)."""
from chainermn_lite.communicators import _nccl_strategy
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase

__all__ = ['PureNcclCommunicator']


class PureNcclCommunicator(MpiCommunicatorBase):
    """PureNcclCommunicator(mpi_comm, allreduce_grad_dtype=None,
    batched_copy=True): the ``pure_nccl`` communicator.

    ChainerMN 7 sets the two options with ``set_config``; the keyword
    spelling of ChainerMN 5/6 is accepted too.
    """

    strategy_factory = _nccl_strategy.PureNccl
    communicator_name = 'pure_nccl'

    def __init__(self, mpi_comm, allreduce_grad_dtype=None,
                 batched_copy=True):
        super().__init__(mpi_comm, allreduce_grad_dtype=allreduce_grad_dtype,
                         batched_copy=batched_copy)

    @property
    def allreduce_grad_dtype(self):
        """The dtype gradients travel in (None: the model's, see
        ``create_communicator``)."""
        return self.get_config('allreduce_grad_dtype')

    @property
    def nccl_comm(self):
        """The NCCL communicator, None before the first use and after
        ``finalize``."""
        if self._nccl_comm_deleted:
            raise AttributeError("'{}' object has no attribute 'nccl_comm' "
                                 '(deleted)'.format(type(self).__name__))
        return self._strategy.nccl_comm

    @nccl_comm.setter
    def nccl_comm(self, value):
        # ChainerMN's tests wrap it (mock.patch.object) to see the dtype
        # that reaches allReduce.
        self._nccl_comm_deleted = False
        self._strategy.nccl_comm = value

    @nccl_comm.deleter
    def nccl_comm(self):
        # ChainerMN's is a plain attribute: mock.patch.object deletes it on
        # exit and sets the original back once reading it fails.
        self._nccl_comm_deleted = True

    _nccl_comm_deleted = False

    def _init_comms(self):
        self._strategy.init_comm(self._context)
