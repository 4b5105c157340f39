"""The one packer: many arrays into one flat buffer, and back.

One MPI (or NCCL) call over a packed buffer beats one call per array
for the many small arrays of a model. Everything that packs uses this
module: the gradient strategies (mean and ``bcast_data``), the NCCL
strategy, the double-buffering optimizer, the partitioned layers' packed
allreduce and the communicator's v-collectives (as bytes).

Arrays are laid end to end, in order, each taking ``size`` elements of the
buffer's dtype; packing casts to that dtype (float16 grads into a float32
buffer, say) and unpacking casts back. NumPy and CuPy arrays alike; device
arrays of the buffer's dtype move in one kernel (``_device_packing``).
"""
import numpy

from chainermn_lite import _device
from chainermn_lite import _device_packing

__all__ = ['packed_size', 'pack', 'unpack', 'views', 'BufferPool']


def packed_size(arrays):
    """Elements a buffer needs to hold ``arrays`` end to end."""
    return sum(a.size for a in arrays)


def _check_fits(arrays, flat, what):
    n = packed_size(arrays)
    if flat.ndim != 1 or flat.size < n:
        raise ValueError('{}: {} arrays of {} elements in all need a flat '
                         'buffer of at least {} elements, got shape '
                         '{}'.format(what, len(arrays), n, n, flat.shape))
    return n


def pack(arrays, out, scale=None):
    """Copy ``arrays`` end to end into the flat ``out``; returns the part of
    ``out`` they fill.

    With ``scale`` each value is multiplied by it on the way, computed in
    ``out``'s dtype (a float16 array packed into float32 is scaled in
    float32, not rounded to float16 first); ``out`` must then be a float
    buffer.
    """
    n = _check_fits(arrays, out, 'pack')
    factor = None
    if scale is not None:
        if out.dtype.kind not in 'fc':
            raise TypeError('pack: cannot scale by {!r} into a {} buffer; '
                            'scaling needs a float buffer'.format(
                                scale, out.dtype))
        factor = out.dtype.type(scale)
    elif _device.is_device_array(out) and _device_packing.fits(arrays, out):
        _device_packing.gather(arrays, out[:n])
        return out[:n]
    offset = 0
    for a in arrays:
        part = out[offset:offset + a.size].reshape(a.shape)
        if factor is None:
            part[...] = a
        else:
            numpy.multiply(a, factor, out=part, dtype=out.dtype)
        offset += a.size
    return out[:n]


def unpack(flat, arrays):
    """Copy consecutive pieces of ``flat`` back into ``arrays`` (in place,
    cast to each array's dtype): the inverse of ``pack``."""
    n = _check_fits(arrays, flat, 'unpack')
    if _device.is_device_array(flat) and _device_packing.fits(arrays, flat):
        _device_packing.scatter(flat[:n], arrays)
        return
    offset = 0
    for a in arrays:
        a[...] = flat[offset:offset + a.size].reshape(a.shape)
        offset += a.size


def views(flat, shapes):
    """Views of consecutive pieces of ``flat``, one per shape (no copy)."""
    out = []
    offset = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        if offset + n > flat.size:
            raise ValueError('views: shape {} at element {} runs past the '
                             'end of a buffer of {} elements'.format(
                                 tuple(shape), offset, flat.size))
        out.append(flat[offset:offset + n].reshape(shape))
        offset += n
    return out


class BufferPool:
    """Flat buffers kept for reuse, one per key and dtype, grown on demand
    (a buffer in flight must not be handed out twice: use distinct keys)."""

    def __init__(self):
        self._buffers = {}

    def get(self, dtype, n, key=None, xp=numpy):
        """A flat ``xp`` buffer of ``n`` elements of ``dtype`` (a view of
        the pooled one; its contents are whatever was left there)."""
        slot = (key, xp, numpy.dtype(dtype))
        buf = self._buffers.get(slot)
        if buf is None or buf.size < n:
            buf = xp.empty(max(n, 1), dtype=dtype)
            self._buffers[slot] = buf
        return buf[:n]
