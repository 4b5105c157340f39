"""Links for model-parallel and multi-node training."""
from chainermn_lite.links.multi_node_chain_list import (  # noqa: F401
    MultiNodeChainList)
from chainermn_lite.links.n_step_rnn import (  # noqa: F401
    create_multi_node_n_step_rnn)
from chainermn_lite.links.halo_convolution import HaloConvolution2D  # noqa: F401
from chainermn_lite.links.vecpar_linear import VecparLinear  # noqa: F401
from chainermn_lite.links.batch_normalization import (  # noqa: F401
    MultiNodeBatchNormalization)
from chainermn_lite.links.create_mnbn_model import create_mnbn_model  # noqa: F401
