"""Whole-weight initialisation shared by the partitioned links."""
import chainer
import numpy

from chainermn_lite.parallel import buffer_collectives

__all__ = ['whole_array']


def whole_array(mpi_comm, initializer, shape, what, dtype=numpy.float32):
    """The whole ``shape`` array every rank starts from.

    An array ``initializer`` is the whole weight itself (the same on every
    rank; its shape is checked). Any other initializer (None: Chainer's
    default) is drawn on rank 0 and broadcast, so the ranks' slices come
    from one matrix.
    """
    if isinstance(initializer, numpy.ndarray) or (
            isinstance(initializer, chainer.Variable)):
        array = numpy.asarray(getattr(initializer, 'array', initializer))
        if array.shape != tuple(shape):
            raise ValueError('{} must have the whole shape {}, got '
                             '{}'.format(what, tuple(shape), array.shape))
        return array.astype(dtype, copy=True)
    if initializer is None:
        initializer = chainer.initializers.LeCunNormal() if (
            len(shape) > 1) else chainer.initializers.Zero()
    elif numpy.isscalar(initializer):
        initializer = chainer.initializers.Constant(initializer)
    array = numpy.empty(shape, dtype=dtype)
    if mpi_comm.Get_rank() == 0:
        initializer(array)
    return buffer_collectives.bcast_array(mpi_comm, array)
