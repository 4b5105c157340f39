"""Iterators shared or synchronized across ranks."""
from chainermn_lite.iterators.batch_check import BatchMismatchError
from chainermn_lite.iterators.batch_check import verify_same_batch
from chainermn_lite.iterators.multi_node_iterator import \
    create_multi_node_iterator
from chainermn_lite.iterators.synchronized_iterator import \
    create_synchronized_iterator

__all__ = ['BatchMismatchError', 'verify_same_batch',
           'create_multi_node_iterator', 'create_synchronized_iterator']
