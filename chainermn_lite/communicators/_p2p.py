"""Point-to-point frames: arrays, tuples of arrays and pickled objects.

The frame format is ``_wire``'s: one message carries the header, the array
descriptors and, when everything fits in ``FRAME_BYTES``, the payload
itself, so an 8-byte array costs one MPI message. Bigger payloads follow
in chunks of at most ``chunk_bytes`` (MPI counts are C ints), received
straight into the fresh result arrays. Receives honour ``ANY_SOURCE`` /
``ANY_TAG``: the rest of a message is taken from the source and tag its
first frame came from.

A single array of more than ``FRAME_BYTES`` sent to a (peer, tag) whose
previous such array had the same dtype and shape is one bare message, as
a hand-written mpi4py program would send it: the first one goes in a
``KIND_LAYOUT`` frame, and from then on both ends remember that layout for
the (peer, tag). The receiver tells a bare message from a frame by its
size alone (more than ``FRAME_BYTES``), so any mix of layouts, objects,
tuples and wildcard receives on one tag stays unambiguous. The layouts
belong to the MPI communicator object (every FrameChannel over it sees
its one message stream), so any number of chainermn_lite communicators
over one ``mpi_comm`` may take turns; a bare message that a receiver has
no layout for (sent before through another Python object of the same MPI
communicator) is an error naming it, never misread.

When both sides already know the layout (the gradients of a
differentiable send have the shapes and dtypes of what it sent), there is
no frame at all: ``send_exact`` / ``recv_exact`` move each array's bytes
as a bare message (in chunks of ``chunk_bytes``), straight from the
sender's array into the receiver's fresh one, as a hand-written mpi4py
program would.
"""
import pickle
import struct
import threading
import weakref

import numpy

from chainermn_lite import _device
from chainermn_lite import _wire
from chainermn_lite._wire import FRAME_BYTES
from chainermn_lite._wire import HEADER
from chainermn_lite._wire import HEADER_WORDS
from chainermn_lite._wire import INLINE
from chainermn_lite._wire import KIND_ARRAY
from chainermn_lite._wire import KIND_DEVICE
from chainermn_lite._wire import KIND_FAILED
from chainermn_lite._wire import KIND_LAYOUT
from chainermn_lite._wire import KIND_OBJECT
from chainermn_lite._wire import KIND_TUPLE
from chainermn_lite._wire import SEPARATE

__all__ = ['FrameChannel']

# Frame heads / layouts of single small arrays, cached by (dtype, shape):
# the send and receive of an 8-byte array then cost a few microseconds of
# Python instead of rebuilding and re-parsing the same words every time.
# Also the number of (peer, tag) whose big-array layout a sender remembers.
_CACHE_LIMIT = 256
_ARRAY_KINDS = (KIND_ARRAY, KIND_TUPLE, KIND_LAYOUT, KIND_ARRAY | KIND_DEVICE,
                KIND_TUPLE | KIND_DEVICE)
# A frame's header and descriptor words as one tuple, by descriptor length:
# the key of a small array's cached layout costs one unpack.
_HEADS = [struct.Struct('={}q'.format(HEADER_WORDS + n))
          for n in range(_wire.DESCRIPTOR_WORDS + 1)]

# A head no frame starts with (kind -1).
_NO_HEAD = HEADER.pack(-1, 0, 0, 0)

_shared = []        # [(weakref to an MPI communicator, its layouts)]
_shared_lock = threading.Lock()


def _layouts_of(mpi_comm):
    """({(dest, tag): (dtype, shape)} sent, {(source, tag): (dtype, shape,
    nbytes)} expected) of ``mpi_comm``: one pair per communicator object,
    shared by every FrameChannel over it."""
    try:
        ref = weakref.ref(mpi_comm)
    except TypeError:           # an mpi4py-like object without weakrefs
        return {}, {}
    with _shared_lock:
        _shared[:] = [(r, s) for r, s in _shared if r() is not None]
        for other, layouts in _shared:
            if other() is mpi_comm:
                return layouts
        layouts = ({}, {})
        _shared.append((ref, layouts))
        return layouts


class FrameChannel:
    """Frames over one rank's communicator; buffers are per instance."""

    def __init__(self, mpi_comm, module, chunk_bytes):
        self._comm = mpi_comm
        self._module = module
        self.chunk_bytes = chunk_bytes
        self._send_frame = numpy.zeros(FRAME_BYTES, dtype=numpy.uint8)
        # A bytearray: ``startswith`` compares a received head in one call.
        self._recv_bytes = bytearray(FRAME_BYTES)
        self._recv_frame = numpy.frombuffer(self._recv_bytes, numpy.uint8)
        self._recv_words = self._recv_frame.view(numpy.int64)
        self._recv_view = memoryview(self._recv_bytes)
        self._heads = {}        # (dtype, shape) -> frame head
        self._heads_get = self._heads.get
        # header + descriptor words of an inline array frame -> (its head
        # as bytes, the array as a view of the frame buffer, copied out on
        # each receive)
        self._small = {}
        self._small_get = self._small.get
        # The last small layout received: (its frame head, its array).
        self._last_small = (_NO_HEAD, None)
        self._Send = mpi_comm.Send
        self._Recv = mpi_comm.Recv
        self._sent, self._expect = _layouts_of(mpi_comm)
        self._status = module.Status()
        self._byte = module.BYTE
        self._any_source = module.ANY_SOURCE
        self._any_tag = module.ANY_TAG

    # -- sending ---------------------------------------------------------
    def send_arrays(self, arrays, is_tuple, dest, tag, from_device=False):
        """Send arrays (contiguous, on the host) as one message;
        ``from_device``: they are host copies of device arrays, which the
        receiver gets on its current device."""
        if not is_tuple and len(arrays) == 1 and not from_device:
            x = arrays[0]
            if x.nbytes > FRAME_BYTES:
                if self._send_big(x, dest, tag):
                    return
            elif x.ndim and self._send_small(x, dest, tag):
                return
        descriptor = []
        for x in arrays:
            descriptor += _wire.describe(x)
        payload = [_wire.byte_view(x) for x in arrays]
        kind = KIND_TUPLE if is_tuple else KIND_ARRAY
        if from_device:
            kind |= KIND_DEVICE
        self._send(kind, descriptor, payload, dest, tag)

    def plain_send(self, size, rank, other):
        """``send(data, dest, tag)`` for a communicator of ``size`` whose
        rank is ``rank``: a NumPy array to a valid peer with a valid tag
        goes straight to ``send_arrays`` (a cached frame head: one lookup
        and one Send, no other call); anything else to ``other(data, dest,
        tag)``, which checks it.

        Only native dtypes are cached and dtypes compare with their byte
        order, so a hit needs no other check: ``tobytes`` writes any
        strides in C order.
        """
        heads_get, Send, ndarray = self._heads_get, self._Send, numpy.ndarray
        send_arrays, plain = self.send_arrays, _wire.is_plain_sendable
        peers = frozenset(range(size)) - {rank}

        def send(data, dest, tag):
            if type(data) is ndarray and type(dest) is int and \
                    type(tag) is int and dest in peers and tag >= 0:
                head = heads_get((data.dtype, data.shape))
                if head is not None:
                    # bytes concatenation beats filling a frame by slices
                    Send(head + data.tobytes(), dest, tag)
                    return
                if plain(data):
                    send_arrays((data,), False, dest, tag)
                    return
            other(data, dest, tag)
        return send

    def _send_small(self, x, dest, tag):
        """One inline frame (its head cached when x's layout allows);
        False if x does not fit."""
        head = self._heads_get((x.dtype, x.shape))
        if head is not None:
            self._Send(head + x.tobytes(), dest, tag)
            return True
        head = _wire.frame_head(KIND_ARRAY, x.nbytes, _wire.describe(x),
                                INLINE)
        if len(head) + x.nbytes > FRAME_BYTES:
            return False
        if len(self._heads) < _CACHE_LIMIT and _wire.is_plain_sendable(x):
            self._heads[(x.dtype, x.shape)] = head
        self._Send(head + x.tobytes(), dest, tag)
        return True

    def _send_big(self, x, dest, tag):
        """One bare message if (dest, tag)'s remembered layout is x's,
        else a KIND_LAYOUT frame that makes it so; False (nothing sent)
        when x goes in chunks or no more (peer, tag) can be remembered."""
        if x.nbytes > self.chunk_bytes:
            return False
        channel = (dest, tag)
        layout = (x.dtype, x.shape)
        known = self._sent.get(channel)
        if known == layout:
            self._comm.Send([x, self._byte], dest, tag)
            return True
        if known is None and len(self._sent) >= _CACHE_LIMIT:
            return False
        self._sent[channel] = layout
        self._send(KIND_LAYOUT, _wire.describe(x), [_wire.byte_view(x)],
                   dest, tag)
        return True

    def send_exact(self, arrays, dest, tag):
        """Send the bytes of each (contiguous) array, no frame: the
        receiver names the layout (``recv_exact``)."""
        comm, chunk = self._comm, self.chunk_bytes
        for x in arrays:
            if isinstance(x, numpy.generic):    # a NumPy scalar
                x = numpy.asarray(x)
            if x.nbytes <= chunk:
                comm.Send(x, dest=dest, tag=tag)
                continue
            view = _wire.byte_view(x)
            for start in range(0, view.size, chunk):
                comm.Send(view[start:start + chunk], dest=dest, tag=tag)

    def send_object(self, obj, dest, tag):
        """Pickle ``obj`` and send it as one message (a failure notice
        when it does not pickle, and raise)."""
        try:
            data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            self.send_failure(error, dest, tag)
            raise
        payload = numpy.frombuffer(data, dtype=numpy.uint8)
        self._send(KIND_OBJECT, [], [payload], dest, tag)

    def send_failure(self, error, dest, tag):
        """Send, in place of the message ``error`` stopped, the frame that
        makes the receiver raise the same kind of error."""
        self._Send(HEADER.pack(KIND_FAILED, _wire.failure_word(error), 0,
                               INLINE), dest, tag)

    def _send(self, kind, descriptor, payload, dest, tag):
        nbytes = sum(p.size for p in payload)
        mode = _wire.frame_mode(len(descriptor), nbytes)
        head = _wire.frame_head(kind, nbytes, descriptor, mode)
        comm = self._comm
        if mode == INLINE:
            frame = self._send_frame
            offset = len(head)
            frame[:offset] = numpy.frombuffer(head, dtype=numpy.uint8)
            for p in payload:
                frame[offset:offset + p.size] = p
                offset += p.size
            comm.Send(frame[:offset], dest=dest, tag=tag)
            return
        comm.Send(head, dest=dest, tag=tag)
        if mode == SEPARATE:
            comm.Send(numpy.asarray(descriptor, dtype=numpy.int64),
                      dest=dest, tag=tag)
        for p in payload:
            for start in range(0, p.size, self.chunk_bytes):
                comm.Send(p[start:start + self.chunk_bytes],
                          dest=dest, tag=tag)

    # -- receiving -------------------------------------------------------
    def _recv_first_frame(self, source, tag, status):
        """Receive a message's first frame; its (source, tag)."""
        wildcard = source == self._any_source or tag == self._any_tag
        if status is None and wildcard:
            status = self._module.Status()
        self._recv_frame_from(source, tag, status)
        if wildcard:
            source, tag = status.Get_source(), status.Get_tag()
        return source, tag

    def _recv_frame_from(self, source, tag, status=None):
        """Recv a frame into the frame buffer; a bigger (bare) message is
        an error naming it."""
        try:
            self._Recv(self._recv_view, source, tag, status)
        except self._module.Exception as e:
            self._raise_if_truncated(e, source, tag)
            raise

    def _raise_if_truncated(self, error, source, tag):
        """A frame's Recv failing with MPI_ERR_TRUNCATE got a bare
        message: raise the error that names it."""
        if error.Get_error_class() == self._module.ERR_TRUNCATE:
            raise self._stray_bare(source, tag, 'more than {}'.format(
                FRAME_BYTES)) from error

    def _stray_bare(self, source, tag, size):
        return RuntimeError(
            'rank {} received a bare array message of {} bytes from rank {} '
            '(tag {}) but knows no layout of that size for them: the '
            'sender\'s communicator object sent the layout before to another '
            'chainermn_lite communicator object of this rank over the same '
            'MPI communicator (send and receive with one communicator object '
            'per MPI communicator), or the message was not sent by '
            'chainermn_lite'.format(self._comm.Get_rank(), size, source, tag))

    def _recv_probed(self, source, tag):
        """Receive the next message of (source, tag), wildcards allowed,
        when bare messages may come: (the bare message's array, or None
        when a frame is in the frame buffer), source, tag."""
        status = self._status
        message = self._comm.Mprobe(source, tag, status)
        source, tag = status.Get_source(), status.Get_tag()
        size = status.Get_count(self._byte)
        if size <= FRAME_BYTES:
            message.Recv(self._recv_view)
            return None, source, tag
        layout = self._expect.get((source, tag))
        if layout is None or layout[2] != size:
            message.Recv([numpy.empty(size, numpy.uint8), self._byte])
            raise self._stray_bare(source, tag, size)
        x = numpy.empty(layout[1], dtype=layout[0])
        message.Recv([x, self._byte])
        return x, source, tag

    def _recv_head(self, source, tag, status, expected, received=False):
        if not received:
            source, tag = self._recv_first_frame(source, tag, status)
        kind, nbytes, nwords, mode = HEADER.unpack_from(self._recv_view)
        if kind == KIND_FAILED:
            _wire.raise_if_failed(nbytes, 'recv', self._comm.Get_rank(),
                                  source, role='rank')
        if kind not in expected:
            raise self._mismatch(expected, source, tag, kind)
        if mode == SEPARATE:
            words = numpy.empty(nwords, dtype=numpy.int64)
            self._comm.Recv(words, source=source, tag=tag)
            descriptor = words.tolist()
        else:
            descriptor = self._recv_words[
                HEADER_WORDS:HEADER_WORDS + nwords].tolist()
        head = 8 * (HEADER_WORDS + nwords)
        return kind, nbytes, descriptor, mode, head, source, tag

    def _mismatch(self, expected, source, tag, kind):
        names = []
        for k in expected:
            if _wire.KIND_NAMES[k] not in names:
                names.append(_wire.KIND_NAMES[k])
        return TypeError(
            'rank {} expected {} from rank {} (tag {}) but received {}; '
            'match send with recv and send_obj with recv_obj'.format(
                self._comm.Get_rank(), ' or '.join(names), source, tag,
                _wire.KIND_NAMES.get(kind, 'an unknown message')))

    def _fill(self, target, mode, offset, source, tag):
        """Fill the flat uint8 ``target`` from the inline frame or chunks."""
        if mode == INLINE:
            target[:] = self._recv_frame[offset:offset + target.size]
            return
        for start in range(0, target.size, self.chunk_bytes):
            self._comm.Recv(target[start:start + self.chunk_bytes],
                            source=source, tag=tag)

    def recv_arrays(self, source, tag):
        """Receive what send_arrays sent: an array or a tuple of arrays."""
        if self._expect:
            x, source, tag = self._recv_probed(source, tag)
            if x is not None:
                return x
        else:
            source, tag = self._recv_first_frame(source, tag, None)
        return self._arrays_from_frame(source, tag, None)

    def plain_recv(self, size, rank, other):
        """``recv(source, tag)`` for a communicator of ``size`` whose rank
        is ``rank``: a valid peer and tag (no wildcard) take the hot path
        of a model-parallel step, the last small layout received again
        costing one Recv, one comparison of its head and one copy of the
        payload; anything else goes to ``other(source, tag)``, which
        checks it."""
        Recv, frame = self._Recv, self._recv_bytes
        expect, error = self._expect, self._module.Exception
        peers = frozenset(range(size)) - {rank}

        def recv(source, tag):
            if not (type(source) is int and type(tag) is int and
                    source in peers and tag >= 0):
                return other(source, tag)
            if expect and (source, tag) in expect:
                x, _, _ = self._recv_probed(source, tag)
                if x is not None:
                    return x
                return self._arrays_from_frame(source, tag, None)
            try:
                Recv(frame, source, tag)
            except error as e:
                self._raise_if_truncated(e, source, tag)
                raise
            # Every frame is longer than its head (header and descriptor
            # words, then the payload), so a matching head was received
            # whole, never left over from an earlier message.
            head, small = self._last_small
            if frame.startswith(head):
                return small.copy()
            return self._arrays_from_frame(source, tag, None)
        return recv

    def _arrays_from_frame(self, source, tag, status):
        """The array(s) of the message whose first frame was received."""
        kind, nbytes, nwords, mode = HEADER.unpack_from(self._recv_view)
        if kind == KIND_ARRAY and mode == INLINE:
            small = self._recv_small(nbytes, nwords)
            if small is not None:
                return small
        kind, nbytes, descriptor, mode, offset, source, tag = \
            self._recv_head(source, tag, status, _ARRAY_KINDS, received=True)
        arrays = []
        at = 0
        while at < len(descriptor):
            dtype, shape, at = _wire.parse(descriptor, at)
            x = numpy.empty(shape, dtype=dtype)
            view = _wire.byte_view(x)
            self._fill(view, mode, offset, source, tag)
            offset += view.size
            arrays.append(x)
        if kind & KIND_DEVICE:
            arrays = [_device.to_current_device(x) for x in arrays]
            kind ^= KIND_DEVICE
        if kind == KIND_TUPLE:
            return tuple(arrays)
        if kind == KIND_LAYOUT:
            self._expect[(source, tag)] = (x.dtype, x.shape, nbytes)
        return arrays[0]

    def _recv_small(self, nbytes, nwords):
        """The array of an inline single-array frame (None: not cached and
        not cacheable, take the general path)."""
        if nwords >= len(_HEADS):
            return None
        key = _HEADS[nwords].unpack_from(self._recv_view)
        small = self._small_get(key)
        if small is None:
            if len(self._small) >= _CACHE_LIMIT:
                return None
            dtype, shape, end = _wire.parse(key, HEADER_WORDS)
            end *= 8
            # A view of the frame buffer: copying it out is the cheapest
            # fresh array (cheaper than an ndarray over a bytearray).
            small = self._small[key] = (
                bytes(self._recv_view[:end]),
                self._recv_frame[end:end + nbytes].view(dtype).reshape(shape))
        self._last_small = small
        return small[1].copy()

    def recv_exact(self, specs, source, tag):
        """Receive what ``send_exact`` sent, one fresh array per
        ``(shape, dtype)`` of ``specs``; a list."""
        comm, chunk = self._comm, self.chunk_bytes
        out = []
        for shape, dtype in specs:
            x = numpy.empty(shape, dtype=dtype)
            if x.nbytes <= chunk:
                comm.Recv(x, source=source, tag=tag)
            else:
                view = _wire.byte_view(x)
                for start in range(0, view.size, chunk):
                    comm.Recv(view[start:start + chunk], source=source,
                              tag=tag)
            out.append(x)
        return out

    def recv_object(self, source, tag, status=None):
        """Receive and unpickle what send_object sent."""
        _, nbytes, _, mode, offset, source, tag = self._recv_head(
            source, tag, status, (KIND_OBJECT,))
        data = numpy.empty(nbytes, dtype=numpy.uint8)
        self._fill(data, mode, offset, source, tag)
        return pickle.loads(data)

