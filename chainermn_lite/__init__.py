"""chainermn_lite: ChainerMN-compatible distributed training for Chainer.

``import chainermn_lite as chainermn`` runs a ChainerMN v7 script. Every
communicator is written once over the mpi4py API, so the same code runs on
real MPI (mpi4py) and on the in-process simulator (``simulator.mpi``).

Two terms recur in the docstrings. The *seed guide* is ChainerMN's
model-parallel guide (``chainermn_model_parallel_guide.rst`` among the
project's seed documents, ``shared/seeds``), whose examples and spellings
(``psi = pseudo_connect(phi1, phi2)``, the MLP split over two ranks) must
work here as well as ChainerMN 7.8.1's. *neon* is Nervana's neon
framework, whose distributed-layer design (``neon_distributed_mpi.rst``,
same place) the partitioned layers follow: vecpar (features split over
ranks: ``functions.vecpar``, ``links.VecparLinear``), halopar (images
tiled over a grid of ranks, with halo exchange: ``functions.halo``,
``links.HaloConvolution2D``) and their combination with data parallelism
(``parallel.split_halo_data_grid``).

PYTEST_DONT_REWRITE: ``python -m chainermn_lite.compat -m pytest`` imports
this package before pytest starts, so pytest cannot rewrite its asserts;
without this marker pytest warns that it cannot, and a suite whose
configuration turns warnings into errors (Chainer's own ``setup.cfg``)
then fails before collecting a test.
"""
import chainer

from chainermn_lite import communicators  # noqa: F401
from chainermn_lite import datasets  # noqa: F401
from chainermn_lite import extensions  # noqa: F401
from chainermn_lite import functions  # noqa: F401
# ChainerMN's documented way to turn the hook on by hand is
# ``chainermn.global_except_hook.add_hook()`` right after the import.
from chainermn_lite import global_except_hook  # noqa: F401
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
