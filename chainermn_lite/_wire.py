"""What chainermn_lite puts on the wire, written once.

- **Descriptors.** An array's dtype and shape travel as int64 words
  ``[dtype code, ndim, dim0, dim1, ...]``. Collectives use a fixed-width
  row of ``DESCRIPTOR_WORDS`` words per rank, so that every rank's
  descriptor moves in one buffer call (``allgather_descriptors``);
  point-to-point frames list the descriptors of a tuple's arrays one after
  another.
- **Frames.** A point-to-point message starts with a frame of at most
  ``FRAME_BYTES``: ``HEADER_WORDS`` words (kind, payload bytes, descriptor
  words, mode), the descriptor words, and, when everything fits, the
  payload itself (``INLINE``). Otherwise the payload follows in chunks
  (``DETACHED``), and when not even the descriptor fits it follows the
  header as a message of its own (``SEPARATE``). A single array of more
  than ``FRAME_BYTES`` sent again to the same (peer, tag) with the layout
  of the previous one goes as one bare message (``KIND_LAYOUT``).
  ``communicators._p2p`` moves the frames.
- **Offsets.** Where each piece of a v-collective buffer starts
  (``offsets``), and the arrays read back from such a buffer
  (``arrays_at``).
- **Validation.** Peers, roots and tags, for the communicator's
  point-to-point calls and collectives, the differentiable functions and
  the object collectives alike; every error names the value, the
  communicator size and the calling rank.

The differentiable functions' own tag convention (forward and backward
messages of one user tag) builds on this in ``functions._wire``.
"""
import struct

import numpy

from chainermn_lite import _device
from chainermn_lite import _mpi

__all__ = ['DESCRIPTOR_WORDS', 'MAX_NDIM', 'as_sendable', 'is_plain_sendable',
           'dtype_code', 'describe', 'describe_fixed', 'parse', 'parse_fixed',
           'fixed_on_device', 'ROOT_FAILED', 'failure_word', 'raise_if_failed',
           'failure_rows', 'raise_if_any_failed',
           'allgather_descriptors', 'nbytes_of', 'byte_view', 'align',
           'offsets', 'check_count', 'arrays_at', 'FRAME_BYTES',
           'HEADER_WORDS', 'HEADER', 'KIND_ARRAY', 'KIND_TUPLE',
           'KIND_OBJECT', 'KIND_LAYOUT', 'KIND_DEVICE', 'KIND_FAILED',
           'KIND_NAMES',
           'INLINE', 'DETACHED', 'SEPARATE',
           'frame_head', 'frame_mode', 'check_peer', 'check_not_self',
           'check_root', 'check_tag']

# -- descriptors ----------------------------------------------------------
MAX_NDIM = 32
DESCRIPTOR_WORDS = 2 + MAX_NDIM
# A fixed row's ndim word carries this bit when the array was on a GPU:
# a bcast or scatter receiver has no array of its own to take the kind
# from, and ChainerMN answers on the current device then.
_ON_DEVICE = 1 << 32

# The first word a root sends in bcast / scatter (a descriptor's dtype
# word) and bcast_obj / scatter_obj (a size), each rank's size in the
# object gathers, each rank's descriptor rows in the array gathers,
# allreduce and alltoall, and the payload word of a KIND_FAILED frame, is
# a failure_word when that sender's own input failed: every rank that
# expected it then raises (raise_if_failed), instead of waiting for data
# that never comes.
ROOT_FAILED = -1
_FAILURE_KINDS = (RuntimeError, TypeError, ValueError)


def failure_word(error):
    """The word (<= ROOT_FAILED) that tells the other ranks ``error``'s
    kind, which they raise."""
    for code, kind in enumerate(_FAILURE_KINDS):
        if code and isinstance(error, kind):
            return ROOT_FAILED - code
    return ROOT_FAILED


def raise_if_failed(word, what, rank, sender, role='root'):
    """Raise, on ``rank``, the error of ``sender``'s failure_word (its
    ``role`` in the call names it); nothing for any other word."""
    if word > ROOT_FAILED:
        return
    code = ROOT_FAILED - int(word)
    kind = _FAILURE_KINDS[code] if code < len(_FAILURE_KINDS) \
        else RuntimeError
    raise kind('{} (rank {}): {} {} could not send its input (it raised {} '
               'there), so nothing was sent'.format(
                   what, rank, role, sender,
                   kind.__name__ if code else 'an error'))


def failure_rows(error, count):
    """``count`` descriptor rows that tell their receivers ``error``'s
    kind (a failure_word where the dtype word goes)."""
    rows = numpy.zeros((count, DESCRIPTOR_WORDS), dtype=numpy.int64)
    rows[:, 0] = failure_word(error)
    return rows


def raise_if_any_failed(words, what, rank):
    """Raise, on ``rank``, the error of the first sender whose word
    (``words[sender]``: its size, its descriptor row's first word) is a
    failure_word."""
    for sender, word in enumerate(words):
        raise_if_failed(word, what, rank, sender, role='rank')


# dtype.char is stable across processes and platforms of one build.
_DTYPE_CHARS = '?bBhHiIlLqQefdgFDG'


def as_sendable(x, what):
    """``x`` as a C-contiguous native-order NumPy array (a host copy of a
    device array), or TypeError."""
    if not hasattr(x, 'dtype') or not hasattr(x, 'shape'):
        raise TypeError('{}: expected an array, got {}'.format(
            what, type(x).__name__))
    _mpi.check_movable_dtype(x.dtype, what)
    if _device.is_device_array(x):
        x = _device.to_host(x)
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder('='))
    if not x.flags.c_contiguous:
        # Strided views "just work": one copy, like MPI's derived types.
        x = x.copy(order='C')
    return x


def is_plain_sendable(x):
    """True when ``x`` is a NumPy array as_sendable would return as is."""
    return (type(x) is numpy.ndarray and x.flags.c_contiguous
            and x.dtype.isnative and x.dtype.char in _DTYPE_CHARS)


def dtype_code(dtype):
    """The integer that names ``dtype`` inside a descriptor."""
    char = dtype.char
    if char not in _DTYPE_CHARS:
        raise TypeError('dtype {} cannot be sent as an array'.format(dtype))
    return ord(char)


def describe(x):
    """Descriptor words of one array (a list of ints)."""
    return [dtype_code(x.dtype), x.ndim] + list(x.shape)


def describe_fixed(x, out, on_device=False):
    """Fill the int64 row ``out`` (DESCRIPTOR_WORDS) with x's descriptor;
    ``on_device``: x is the host copy of a GPU array."""
    if x.ndim > MAX_NDIM:
        raise ValueError('arrays of ndim {} > {} are not supported (shape '
                         '{})'.format(x.ndim, MAX_NDIM, x.shape))
    words = describe(x)
    if on_device:
        words[1] |= _ON_DEVICE
    out[:len(words)] = words
    out[len(words):] = 0
    return out


def parse(words, start):
    """(dtype, shape, next index) of the descriptor at ``words[start]``."""
    dtype = numpy.dtype(chr(words[start]))
    ndim = words[start + 1]
    shape = tuple(words[start + 2:start + 2 + ndim])
    return dtype, shape, start + 2 + ndim


def parse_fixed(row):
    """(dtype, shape) of a fixed-width descriptor row."""
    words = row.tolist()
    words[1] &= _ON_DEVICE - 1
    dtype, shape, _ = parse(words, 0)
    return dtype, shape


def fixed_on_device(row):
    """True when the fixed row describes a GPU array's host copy."""
    return bool(row[1] & _ON_DEVICE)


def allgather_descriptors(mpi_comm, make, what, row=None):
    """``(x, [(dtype, shape)] of every rank's x by rank)``, where ``x =
    make()`` is this rank's array (made sendable, its shape checked...).

    One ``Allgather`` of fixed-width rows; ``row`` is an optional reusable
    int64 buffer of ``DESCRIPTOR_WORDS`` for this rank's own row. A rank
    whose ``make()`` raises still joins the Allgather, its row's first
    word its failure_word, and re-raises; every other rank raises too,
    naming it (``what`` names the call), instead of waiting for data that
    never comes.
    """
    if row is None:
        row = numpy.empty(DESCRIPTOR_WORDS, dtype=numpy.int64)
    rows = numpy.empty((mpi_comm.Get_size(), DESCRIPTOR_WORDS),
                       dtype=numpy.int64)
    try:
        x = make()
        describe_fixed(x, row)
    except Exception as error:
        row[:] = failure_rows(error, 1)[0]
        mpi_comm.Allgather(row, rows)
        raise
    mpi_comm.Allgather(row, rows)
    raise_if_any_failed(rows[:, 0].tolist(), what, mpi_comm.Get_rank())
    return x, [parse_fixed(r) for r in rows]


def nbytes_of(dtype, shape):
    """Byte size of an array of ``dtype`` and ``shape``."""
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n


def byte_view(x):
    """A flat uint8 view of the C-contiguous array ``x`` (no copy)."""
    return x.reshape(-1).view(numpy.uint8)


# -- offsets --------------------------------------------------------------
def align(n, to=16):
    """``n`` rounded up to a multiple of ``to`` (keeps views aligned)."""
    return (n + to - 1) // to * to


def offsets(counts, alignment=1):
    """(displacements, total) of pieces of ``counts`` laid end to end, each
    starting at a multiple of ``alignment``; ``total`` covers the padding
    after the last piece too."""
    displs = []
    at = 0
    for count in counts:
        if count < 0:
            raise ValueError('offsets: piece {} has a negative count '
                             '{}'.format(len(displs), count))
        displs.append(at)
        at += count
        if alignment > 1:
            at = align(at, alignment)
    return displs, at


def check_count(total, what, rank):
    """Refuse a v-collective of more than INT_MAX elements (MPI counts and
    displacements are C ints)."""
    if total > _mpi.INT_MAX:
        raise ValueError('{}: {} elements in one call exceed MPI\'s int '
                         'count limit {} (rank {})'.format(
                             what, total, _mpi.INT_MAX, rank))
    return total


def arrays_at(buf, descs, displs):
    """The arrays ``descs`` ([(dtype, shape)]) describe, as views of the
    byte buffer ``buf`` starting at ``displs``; a tuple."""
    out = []
    for (dtype, shape), d in zip(descs, displs):
        n = nbytes_of(dtype, shape)
        out.append(buf[d:d + n].view(dtype).reshape(shape))
    return tuple(out)


# -- point-to-point frames --------------------------------------------------
FRAME_BYTES = 16384
HEADER_WORDS = 4           # kind, payload bytes, descriptor words, mode
HEADER = struct.Struct('={}q'.format(HEADER_WORDS))
KIND_ARRAY, KIND_TUPLE, KIND_OBJECT = 1, 2, 3
# An array of more than FRAME_BYTES whose layout both ends remember for
# its (peer, tag): the same layout next time is a bare message, told from a
# frame by its size alone (frames never exceed FRAME_BYTES).
KIND_LAYOUT = 4
# Or-ed into KIND_ARRAY / KIND_TUPLE: the sender's arrays were on a GPU
# (sent from a host copy); the receiver puts them on its current device.
KIND_DEVICE = 8
# A frame in place of the message a sender's input could not make: the
# header's payload word is the failure_word of the error it raised; the
# receiver raises too, instead of waiting for a message that never comes.
KIND_FAILED = 16
KIND_NAMES = {KIND_ARRAY: 'an array', KIND_TUPLE: 'a tuple of arrays',
              KIND_OBJECT: 'a Python object', KIND_LAYOUT: 'an array',
              KIND_ARRAY | KIND_DEVICE: 'an array',
              KIND_TUPLE | KIND_DEVICE: 'a tuple of arrays',
              KIND_FAILED: 'a failure notice'}
DETACHED, INLINE, SEPARATE = 0, 1, 2


def frame_mode(nwords, nbytes):
    """How a message of ``nwords`` descriptor words and ``nbytes`` of
    payload is framed: INLINE, DETACHED or SEPARATE."""
    head = 8 * (HEADER_WORDS + nwords)
    if head + nbytes <= FRAME_BYTES:
        return INLINE
    if head <= FRAME_BYTES:
        return DETACHED
    return SEPARATE


def frame_head(kind, nbytes, descriptor, mode):
    """The bytes a frame starts with: header, then (unless SEPARATE) the
    descriptor words."""
    head = HEADER.pack(kind, nbytes, len(descriptor), mode)
    if mode == SEPARATE or not descriptor:
        return head
    return head + numpy.asarray(descriptor, dtype=numpy.int64).tobytes()


# -- validation -----------------------------------------------------------
def _is_int(value):
    # bool is an int to Python, but a bool rank or tag is a bug.
    return isinstance(value, (int, numpy.integer)) and \
        not isinstance(value, (bool, numpy.bool_))


def check_peer(peer, size, rank, what, wildcard=None, allow_self=False):
    """``peer`` as an int rank of a communicator of ``size`` (or the
    ``wildcard`` value, e.g. ``ANY_SOURCE``); ValueError naming it, the size
    and the calling ``rank`` otherwise.

    Unless ``allow_self``, the caller's own rank is refused: a blocking
    send to oneself only returns if MPI happens to buffer the message, so
    it works for small arrays and deadlocks for big ones (and in a
    differentiable send both directions would wait on each other).
    """
    if type(peer) is int and 0 <= peer < size and (
            allow_self or peer != rank):
        return peer                 # the common case, checked in one go
    if wildcard is not None and peer == wildcard:
        return peer
    if not _is_int(peer) or not 0 <= peer < size:
        raise ValueError('{}: rank {!r} is out of range for a communicator '
                         'of size {} (called on rank {})'.format(
                             what, peer, size, rank))
    if not allow_self:
        check_not_self(peer, rank, what)
    return int(peer)


def check_not_self(peer, rank, what):
    """Refuse ``peer == rank``: see ``check_peer``."""
    if peer == rank:
        raise ValueError('{}: rank {} names itself as its peer ({}); a '
                         'rank that sends to itself deadlocks once the '
                         'message is too big for MPI to buffer, so it is '
                         'refused'.format(what, rank, peer))


def check_root(root, size, rank, what):
    """``root`` as an int rank of a communicator of ``size``; ValueError
    naming it, the size and the calling ``rank`` otherwise."""
    return check_peer(root, size, rank, what + ' root', allow_self=True)


def check_tag(tag, what, rank=None, wildcard=None):
    """``tag`` as an int >= 0 (or the ``wildcard`` value, e.g.
    ``ANY_TAG``); ValueError naming it and the calling ``rank`` (when
    given)."""
    if type(tag) is int and tag >= 0:
        return tag
    if wildcard is not None and tag == wildcard:
        return tag
    if not _is_int(tag) or tag < 0:
        raise ValueError('{}: tag must be an int >= 0, got {!r}{}'.format(
            what, tag, '' if rank is None else ' (rank {})'.format(rank)))
    return int(tag)
