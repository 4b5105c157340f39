"""chainermn_lite: ChainerMN-compatible distributed training for Chainer.

``import chainermn_lite as chainermn`` runs a ChainerMN v7 script. Every
communicator is written once over the mpi4py API, so the same code runs on
real MPI (mpi4py) and on the in-process simulator (``simulator.mpi``).
"""
import chainer

from chainermn_lite import communicators  # noqa: F401
from chainermn_lite import datasets  # noqa: F401
from chainermn_lite import extensions  # noqa: F401
from chainermn_lite import functions  # noqa: F401
from chainermn_lite import iterators  # noqa: F401
from chainermn_lite import links  # noqa: F401
from chainermn_lite import optimizers  # noqa: F401
from chainermn_lite.communicators import CommunicatorBase  # noqa: F401
from chainermn_lite.communicators import create_communicator  # noqa: F401
from chainermn_lite.datasets import DataSizeError  # noqa: F401
from chainermn_lite.datasets import scatter_dataset  # noqa: F401
from chainermn_lite.datasets import scatter_index  # noqa: F401
from chainermn_lite.extensions import create_multi_node_checkpointer  # noqa: F401
from chainermn_lite.extensions import create_multi_node_evaluator  # noqa: F401
from chainermn_lite.links import MultiNodeChainList  # noqa: F401
from chainermn_lite.optimizers import create_multi_node_optimizer  # noqa: F401

__version__ = chainer.__version__
