"""Trainer extensions that work across ranks."""
from chainermn_lite.extensions.allreduce_persistent import \
    AllreducePersistent
from chainermn_lite.extensions.checkpoint import \
    create_multi_node_checkpointer
from chainermn_lite.extensions._multi_node_snapshot import \
    multi_node_snapshot
from chainermn_lite.extensions.generic_multi_node_evaluator import \
    GenericMultiNodeEvaluator
from chainermn_lite.extensions.multi_node_early_stopping_trigger import \
    MultiNodeEarlyStoppingTrigger
from chainermn_lite.extensions.multi_node_evaluator import \
    create_multi_node_evaluator
from chainermn_lite.extensions.observation_aggregator import \
    ObservationAggregator

__all__ = ['AllreducePersistent', 'create_multi_node_checkpointer',
           'multi_node_snapshot', 'create_multi_node_evaluator',
           'GenericMultiNodeEvaluator', 'MultiNodeEarlyStoppingTrigger',
           'ObservationAggregator']
