"""Links for model-parallel and multi-node training."""
from chainermn_lite.links.multi_node_chain_list import (  # NOQA
    MultiNodeChainList)
from chainermn_lite.links.n_step_rnn import (  # NOQA
    create_multi_node_n_step_rnn)
from chainermn_lite.links.halo_convolution import HaloConvolution2D  # NOQA
from chainermn_lite.links.vecpar_linear import VecparLinear  # NOQA
from chainermn_lite.links.batch_normalization import (  # NOQA
    MultiNodeBatchNormalization)
from chainermn_lite.links.create_mnbn_model import create_mnbn_model  # NOQA
