"""chainermn_lite: ChainerMN-compatible distributed training for Chainer.

``import chainermn_lite as chainermn`` runs a ChainerMN v7 script. Every
communicator is written once over the mpi4py API, so the same code runs on
real MPI (mpi4py) and on the in-process simulator (``simulator.mpi``).
"""
import chainer

from chainermn_lite import communicators  # NOQA
from chainermn_lite import datasets  # NOQA
from chainermn_lite import extensions  # NOQA
from chainermn_lite import functions  # NOQA
from chainermn_lite import iterators  # NOQA
from chainermn_lite import links  # NOQA
from chainermn_lite import optimizers  # NOQA
from chainermn_lite.communicators import CommunicatorBase  # NOQA
from chainermn_lite.communicators import create_communicator  # NOQA
from chainermn_lite.datasets import DataSizeError  # NOQA
from chainermn_lite.datasets import scatter_dataset  # NOQA
from chainermn_lite.datasets import scatter_index  # NOQA
from chainermn_lite.extensions import create_multi_node_checkpointer  # NOQA
from chainermn_lite.extensions import create_multi_node_evaluator  # NOQA
from chainermn_lite.links import MultiNodeChainList  # NOQA
from chainermn_lite.optimizers import create_multi_node_optimizer  # NOQA

__version__ = chainer.__version__
