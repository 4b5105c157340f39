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
        # Chainer 7 has no namedpersistent(): walk the links' persistents.
        for _, link in sorted(self.model.namedlinks(),
                              key=lambda item: item[0]):
            for name in sorted(link._persistent):
                self._average(getattr(link, name))

    def _average(self, value):
        if isinstance(value, numpy.ndarray) and value.dtype.kind == 'f':
            value[...] = self.comm.allreduce(value) / self.comm.size
