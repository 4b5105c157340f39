"""Average persistent values (e.g. BatchNormalization statistics)."""
import chainer
import numpy

__all__ = ['AllreducePersistent']


class AllreducePersistent(chainer.training.Extension):
    """AllreducePersistent(model, comm): at each trigger every floating
    persistent array of ``model`` becomes its mean over the ranks."""

    trigger = 1, 'epoch'
    priority = chainer.training.PRIORITY_WRITER + 1

    def __init__(self, model, comm):
        self.model = model
        self.comm = comm

    def __call__(self, trainer=None):
        """Average the persistents now."""
        for _, value in sorted(self.model.namedpersistent()):
            if not isinstance(value, numpy.ndarray) or \
                    value.dtype.kind != 'f':
                continue
            total = self.comm.allreduce(value)
            value[...] = total / self.comm.size
