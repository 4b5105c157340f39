"""Keep freed array memory in the process instead of returning it to the OS.

Every message received as a new array, and every gradient Chainer makes in
backward, is a fresh allocation of the array's size. glibc serves
allocations above 128 KiB with ``mmap`` and hands freed memory above its
trim threshold back to the kernel, so each such array starts with page
faults: for a (128, 1000) float32 model-parallel activation this costs more
than the message itself (functions.send/recv round trip under mpiexec -n 2:
0.85 ms by default, 0.35-0.44 ms with the settings below; a 64 MiB array
received one-way: 1.5x the time of a receive into a reused buffer by
default, 0.9-1.1x tuned; see benchmarks/README.md). Serving every
allocation from the heap (``M_MMAP_MAX`` 0; the mmap threshold alone stops
at 32 MiB) and raising the trim threshold to 256 MiB keeps that memory
for reuse; the price is that up to 256 MiB of freed memory may stay
mapped, and that freed blocks below the top of the heap are reused but not
returned to the OS.

Applied once per process when a communicator is created;
``CHAINERMN_LITE_MALLOC_TUNING=0`` leaves malloc alone. A no-op where the C
library is not glibc.
"""
import ctypes
import ctypes.util
import threading

from chainermn_lite import _mpi

__all__ = ['tune_malloc', 'MALLOC_TUNING_ENV']

MALLOC_TUNING_ENV = 'CHAINERMN_LITE_MALLOC_TUNING'

# mallopt parameter numbers from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_MMAP_THRESHOLD = 32 * 1024 * 1024     # glibc's ceiling on 64-bit
_TRIM_THRESHOLD = 256 * 1024 * 1024

_lock = threading.Lock()
_state = {'tuned': None}


def _mallopt():
    name = ctypes.util.find_library('c')
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):      # not glibc (musl, macOS)
        return None


def tune_malloc():
    """Apply the settings above once; True if they are in effect."""
    with _lock:
        if _state['tuned'] is None:
            _state['tuned'] = False
            if _mpi.env_flag(MALLOC_TUNING_ENV, default=True):
                mallopt = _mallopt()
                if mallopt is not None:
                    _state['tuned'] = bool(
                        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
                        and mallopt(_M_MMAP_MAX, 0)
                        and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
        return _state['tuned']
