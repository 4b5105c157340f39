"""chainermn_lite._checks: a wrong object where a communicator or an
optimizer belongs fails at the entry point, naming the call and the value.
In-process only: argument checks, before any communication."""
import chainer
import chainer.links as L
import pytest

import chainermn_lite as chainermn

_ENTRY_POINTS = {
    'create_multi_node_optimizer': lambda c: (
        chainermn.create_multi_node_optimizer(chainer.optimizers.SGD(), c)),
    'create_multi_node_evaluator': lambda c: (
        chainermn.create_multi_node_evaluator(
            chainer.training.extensions.Evaluator(
                chainer.iterators.SerialIterator([1], 1), L.Linear(1, 1)),
            c)),
    'scatter_dataset': lambda c: chainermn.scatter_dataset([1, 2], c),
    'create_multi_node_iterator': lambda c: (
        chainermn.iterators.create_multi_node_iterator(
            chainer.iterators.SerialIterator([1], 1), c)),
    'create_synchronized_iterator': lambda c: (
        chainermn.iterators.create_synchronized_iterator(
            chainer.iterators.SerialIterator([1], 1), c)),
    'MultiNodeChainList': chainermn.MultiNodeChainList,
    'MultiNodeBatchNormalization': lambda c: (
        chainermn.links.MultiNodeBatchNormalization(3, c)),
    'create_multi_node_checkpointer': lambda c: (
        chainermn.create_multi_node_checkpointer('run', c)),
}


@pytest.mark.parametrize('caller', sorted(_ENTRY_POINTS))
@pytest.mark.parametrize('bad', [None, 'comm'])
def test_a_value_that_is_no_communicator_is_named(caller, bad):
    with pytest.raises(TypeError, match=r'^{}: expected a communicator '
                       r'.* got {}'.format(caller, repr(bad))):
        _ENTRY_POINTS[caller](bad)


def test_a_value_that_is_no_optimizer_is_named():
    with pytest.raises(TypeError, match='create_multi_node_optimizer: '
                       'expected a Chainer optimizer .* got None'):
        chainermn.create_multi_node_optimizer(None, object())
