"""Many device arrays into one flat device buffer and back, in one kernel.

Packing a model's grads one array at a time costs a kernel launch (and
CuPy's Python around it) per array: ResNet-50's 161 grads made a one-rank
pure_nccl mean take 3.7 ms on an H100, 25 times the 0.15 ms NCCL
allReduce + scale of the packed buffer (2026-11-26; 1.0 ms with this
module). Here one launch copies them all: a table of the arrays'
device pointers and their offsets in the buffer; each thread finds its
element's array by bisection (neighbouring threads share the search, and
no block is idle, whatever the sizes). The copy moves the bits (a word
type of the dtype's item size), so it is exact for every dtype, and it
needs no ``half`` type (which CUDA 13's runtime compiler would not know
without its header).

Only arrays of the buffer's own dtype, C-contiguous and on the buffer's
device take this path (``fits``); ``_packing`` copies the others one by
one, casting on the way.
"""
import functools
import threading

import numpy

__all__ = ['fits', 'gather', 'scatter']

_WORDS = {1: 'unsigned char', 2: 'unsigned short', 4: 'unsigned int',
          8: 'unsigned long long'}
_THREADS = 256
_MAX_BLOCKS = 8192         # then each thread copies several elements
_TABLES_KEPT = 16

_SOURCE = r'''
extern "C" __global__ void {name}(const unsigned long long* pointers,
                                  const long long* offsets, int count,
                                  long long n, {word}* flat) {{
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += step) {{
        // The last array starting at or before i: never an empty one,
        // as the next array starts at the same offset.
        int low = 0, high = count;
        while (high - low > 1) {{
            int middle = (low + high) / 2;
            if (offsets[middle] <= i) low = middle; else high = middle;
        }}
        {word}* part = ({word}*)pointers[low];
        long long k = i - offsets[low];
        {copy};
    }}
}}
'''


def fits(arrays, flat):
    """Whether ``gather``/``scatter`` can move ``arrays`` to or from the
    device buffer ``flat`` (same dtype, same device, C-contiguous)."""
    if len(arrays) < 2:
        return False
    dtype, device = flat.dtype, flat.data.device_id
    return dtype.itemsize in _WORDS and all(
        type(a) is type(flat) and a.dtype == dtype and
        a.flags.c_contiguous and a.data.device_id == device for a in arrays)


def gather(arrays, flat):
    """Copy ``arrays`` end to end into the flat device buffer ``flat``."""
    _launch('gather', arrays, flat)


def scatter(flat, arrays):
    """Copy consecutive pieces of ``flat`` back into ``arrays``."""
    _launch('scatter', arrays, flat)


def _launch(direction, arrays, flat):
    sizes = tuple(a.size for a in arrays)
    n = flat.size
    if not n:
        return
    with flat.device:
        pointers, offsets = _table(flat.device.id,
                                   tuple(a.data.ptr for a in arrays), sizes)
        kernel = _kernel(direction, flat.dtype.itemsize)
        kernel((min(-(-n // _THREADS), _MAX_BLOCKS),), (_THREADS,),
               (pointers, offsets, numpy.int32(len(arrays)),
                numpy.int64(n), flat))


_tables = {}
_tables_lock = threading.Lock()     # rank threads, double buffering


def _table(device_id, pointers, sizes):
    """The device copies of a pointer table and its offsets, kept for the
    next call with the same arrays (a value key: a reused address with the
    same sizes makes the same table)."""
    import cupy
    key = (device_id, pointers, sizes)
    table = _tables.get(key)
    if table is None:
        offsets = numpy.zeros(len(sizes) + 1, dtype=numpy.int64)
        numpy.cumsum(sizes, out=offsets[1:])
        table = (cupy.asarray(numpy.array(pointers, dtype=numpy.uint64)),
                 cupy.asarray(offsets))
        with _tables_lock:
            if len(_tables) >= _TABLES_KEPT:
                _tables.pop(next(iter(_tables)), None)
            _tables[key] = table
    return table


@functools.lru_cache(maxsize=None)
def _kernel(direction, itemsize):
    import cupy
    word = _WORDS[itemsize]
    name = 'chainermn_lite_{}_{}'.format(direction, itemsize)
    copy = 'flat[i] = part[k]' if direction == 'gather' \
        else 'part[k] = flat[i]'
    return cupy.RawKernel(_SOURCE.format(name=name, word=word, copy=copy),
                          name)
