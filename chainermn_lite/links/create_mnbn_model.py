"""Turn every BatchNormalization of a model into MultiNodeBatchNormalization.
"""
import copy

import chainer

from chainermn_lite.links.batch_normalization import \
    MultiNodeBatchNormalization

__all__ = ['create_mnbn_model']


def _to_mnbn(bn, comm, communication_backend, where):
    if bn.avg_mean is None:
        raise ValueError(
            'create_mnbn_model: BatchNormalization {} has no size yet (it '
            'was built with size=None and never called); give it a size or '
            'run it once first'.format(where or '(the link itself)'))
    if bn.axis is not None:
        raise ValueError(
            'create_mnbn_model: BatchNormalization {} normalizes over axis={}'
            '; MultiNodeBatchNormalization supports only the default '
            '(channels on axis 1)'.format(where or '(the link itself)',
                                           bn.axis))
    mnbn = MultiNodeBatchNormalization(
        bn.avg_mean.shape, comm, decay=bn.decay, eps=bn.eps,
        dtype=bn.avg_mean.dtype, use_gamma=bn.gamma is not None,
        use_beta=bn.beta is not None,
        communication_backend=communication_backend)
    mnbn.to_device(bn.device)
    mnbn.copyparams(bn)
    for name in bn._persistent:
        setattr(mnbn, name, copy.deepcopy(getattr(bn, name)))
    return mnbn


def _replace_in(link, comm, communication_backend, where):
    """``link`` with its BatchNormalizations replaced (in place, except a
    BatchNormalization itself, whose replacement is returned)."""
    if isinstance(link, chainer.links.BatchNormalization):
        return _to_mnbn(link, comm, communication_backend, where)
    if isinstance(link, chainer.Chain):
        for name in sorted(link._children):
            child = getattr(link, name)
            new = _replace_in(child, comm, communication_backend,
                              where + '/' + name)
            if new is not child:
                delattr(link, name)
                with link.init_scope():
                    setattr(link, name, new)
    elif isinstance(link, chainer.Sequential):
        for i, layer in enumerate(list(link)):
            if isinstance(layer, chainer.Link):
                new = _replace_in(layer, comm, communication_backend,
                                  '{}/{}'.format(where, i))
                if new is not layer:
                    link[i] = new
    elif isinstance(link, chainer.ChainList):
        for i, child in enumerate(list(link._children)):
            new = _replace_in(child, comm, communication_backend,
                              '{}/{}'.format(where, i))
            if new is not child:
                # ChainList has no public way to swap a child in place.
                new.name = child.name
                link._children[i] = new
    return link


def create_mnbn_model(link, comm, communication_backend='auto'):
    """create_mnbn_model(link, comm, communication_backend='auto'): a copy
    of ``link`` (a Link, Chain, ChainList or Sequential) in which every
    ``chainer.links.BatchNormalization`` became a
    ``MultiNodeBatchNormalization`` with the same parameters, running
    statistics and settings. ``link`` itself is left unchanged."""
    return _replace_in(copy.deepcopy(link), comm, communication_backend,
                       '')
