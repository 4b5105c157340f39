"""Device (CuPy) arrays where MPI needs host memory.

The MPI chainermn_lite runs on is not CUDA-aware (see
``communicators._host_staging``): a device array is copied to the host
before MPI sees it, and what arrives for a device array is placed on the
receiver's current device, as ChainerMN's ``recv`` does.
"""
import numpy

__all__ = ['is_device_array', 'to_host', 'to_current_device', 'like']


def is_device_array(x):
    """True for a GPU array (anything exporting CUDA memory)."""
    return type(x) is not numpy.ndarray and \
        hasattr(x, '__cuda_array_interface__')


def to_host(x):
    """A NumPy copy of the device array ``x`` (waits for its producers)."""
    return x.get()


def to_current_device(x):
    """The host array ``x`` copied to the current CUDA device."""
    import cupy
    return cupy.asarray(x)


def like(template, result):
    """``result`` (a NumPy array or a tuple of them) on the current device
    when ``template`` is a device array, else as it is."""
    if not is_device_array(template):
        return result
    if isinstance(result, tuple):
        return tuple(to_current_device(r) for r in result)
    return to_current_device(result)
