"""Point-to-point frames: arrays, tuples of arrays and pickled objects.

The frame format is ``_wire``'s: one message carries the header, the array
descriptors and, when everything fits in ``FRAME_BYTES``, the payload
itself, so an 8-byte array costs one MPI message. Bigger payloads follow
in chunks of at most ``chunk_bytes`` (MPI counts are C ints), received
straight into the fresh result arrays. Receives honour ``ANY_SOURCE`` /
``ANY_TAG``: the rest of a message is taken from the source and tag its
first frame came from.

When both sides already know the layout (the gradients of a
differentiable send have the shapes and dtypes of what it sent), there is
no frame at all: ``send_exact`` / ``recv_exact`` move each array's bytes
as a bare message (in chunks of ``chunk_bytes``), straight from the
sender's array into the receiver's fresh one, as a hand-written mpi4py
program would.
"""
import pickle

import numpy

from chainermn_lite import _wire
from chainermn_lite._wire import FRAME_BYTES
from chainermn_lite._wire import HEADER
from chainermn_lite._wire import HEADER_WORDS
from chainermn_lite._wire import INLINE
from chainermn_lite._wire import KIND_ARRAY
from chainermn_lite._wire import KIND_OBJECT
from chainermn_lite._wire import KIND_TUPLE
from chainermn_lite._wire import SEPARATE

__all__ = ['FrameChannel']

# Frame heads / layouts of single small arrays, cached by (dtype, shape):
# the send and receive of an 8-byte array then cost a few microseconds of
# Python instead of rebuilding and re-parsing the same words every time.
_CACHE_LIMIT = 256


class FrameChannel:
    """Frames over one rank's communicator; buffers are per instance."""

    def __init__(self, mpi_comm, module, chunk_bytes):
        self._comm = mpi_comm
        self._module = module
        self.chunk_bytes = chunk_bytes
        self._send_frame = numpy.zeros(FRAME_BYTES, dtype=numpy.uint8)
        self._recv_frame = numpy.zeros(FRAME_BYTES, dtype=numpy.uint8)
        self._recv_words = self._recv_frame.view(numpy.int64)
        self._recv_view = memoryview(self._recv_frame)
        self._heads = {}        # (dtype, shape, strides) -> frame head
        self._layouts = {}      # descriptor bytes -> (dtype, shape)
        self._any_source = module.ANY_SOURCE
        self._any_tag = module.ANY_TAG

    # -- sending ---------------------------------------------------------
    def send_arrays(self, arrays, is_tuple, dest, tag):
        """Send arrays (already contiguous) as one message."""
        if not is_tuple and len(arrays) == 1 and arrays[0].ndim and \
                self._send_small(arrays[0], dest, tag):
            return
        descriptor = []
        for x in arrays:
            descriptor += _wire.describe(x)
        payload = [_wire.byte_view(x) for x in arrays]
        kind = KIND_TUPLE if is_tuple else KIND_ARRAY
        self._send(kind, descriptor, payload, dest, tag)

    def send_cached(self, x, dest, tag):
        """Send the NumPy array ``x`` as one inline frame if a frame head
        for its layout is cached; False (nothing sent) otherwise.

        The key holds the strides and the dtype object, so a hit is also
        proof that ``x`` is C-contiguous and native (only such layouts
        are cached): the hot path needs no other check.
        """
        head = self._heads.get((x.dtype, x.shape, x.strides))
        if head is None:
            return False
        # bytes concatenation beats filling the frame by slices at this size
        self._comm.Send(head + x.tobytes(), dest, tag)
        return True

    def _send_small(self, x, dest, tag):
        """One inline frame from a cached head; False if x does not fit."""
        key = (x.dtype, x.shape, x.strides)
        head = self._heads.get(key)
        if head is None:
            head = _wire.frame_head(KIND_ARRAY, x.nbytes, _wire.describe(x),
                                    INLINE)
            if len(head) + x.nbytes > FRAME_BYTES:
                return False
            if len(self._heads) < _CACHE_LIMIT and \
                    _wire.is_plain_sendable(x):
                self._heads[key] = head
        self._comm.Send(head + x.tobytes(), dest, tag)
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
        """Pickle ``obj`` and send it as one message."""
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        payload = numpy.frombuffer(data, dtype=numpy.uint8)
        self._send(KIND_OBJECT, [], [payload], dest, tag)

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
        self._comm.Recv(self._recv_view, source=source, tag=tag,
                        status=status)
        if wildcard:
            source, tag = status.Get_source(), status.Get_tag()
        return source, tag

    def _recv_head(self, source, tag, status, expected, received=False):
        if not received:
            source, tag = self._recv_first_frame(source, tag, status)
        kind, nbytes, nwords, mode = HEADER.unpack_from(self._recv_view)
        if kind not in expected:
            raise TypeError(
                'rank {} expected {} from rank {} (tag {}) but received {}; '
                'match send with recv and send_obj with recv_obj'.format(
                    self._comm.Get_rank(),
                    ' or '.join(_wire.KIND_NAMES[k] for k in expected), source,
                    tag, _wire.KIND_NAMES.get(kind, 'an unknown message')))
        if mode == SEPARATE:
            words = numpy.empty(nwords, dtype=numpy.int64)
            self._comm.Recv(words, source=source, tag=tag)
            descriptor = words.tolist()
        else:
            descriptor = self._recv_words[
                HEADER_WORDS:HEADER_WORDS + nwords].tolist()
        head = 8 * (HEADER_WORDS + nwords)
        return kind, nbytes, descriptor, mode, head, source, tag

    def _fill(self, target, mode, offset, source, tag):
        """Fill the flat uint8 ``target`` from the inline frame or chunks."""
        if mode == INLINE:
            target[:] = self._recv_frame[offset:offset + target.size]
            return
        for start in range(0, target.size, self.chunk_bytes):
            self._comm.Recv(target[start:start + self.chunk_bytes],
                            source=source, tag=tag)

    def recv_arrays(self, source, tag, status=None):
        """Receive what send_arrays sent: an array or a tuple of arrays."""
        source, tag = self._recv_first_frame(source, tag, status)
        return self._arrays_from_frame(source, tag, status)

    def recv_plain(self, source, tag):
        """``recv_arrays`` for a source and a tag that are valid ints (no
        wildcard, no status): the hot path of a model-parallel step, with
        a cached layout costing one Recv and one copy of the payload."""
        view = self._recv_view
        self._comm.Recv(view, source, tag)
        kind, nbytes, nwords, mode = HEADER.unpack_from(view)
        if kind == KIND_ARRAY and mode == INLINE:
            end = 8 * (HEADER_WORDS + nwords)
            layout = self._layouts.get(bytes(view[8 * HEADER_WORDS:end]))
            if layout is not None:
                return numpy.ndarray(layout[1], layout[0],
                                     bytearray(view[end:end + nbytes]))
        return self._arrays_from_frame(source, tag, None)

    def _arrays_from_frame(self, source, tag, status):
        """The array(s) of the message whose first frame was received."""
        kind, nbytes, nwords, mode = HEADER.unpack_from(self._recv_view)
        if kind == KIND_ARRAY and mode == INLINE:
            small = self._recv_small(nbytes, nwords)
            if small is not None:
                return small
        kind, _, descriptor, mode, offset, source, tag = self._recv_head(
            source, tag, status, (KIND_ARRAY, KIND_TUPLE), received=True)
        arrays = []
        at = 0
        while at < len(descriptor):
            dtype, shape, at = _wire.parse(descriptor, at)
            x = numpy.empty(shape, dtype=dtype)
            view = _wire.byte_view(x)
            self._fill(view, mode, offset, source, tag)
            offset += view.size
            arrays.append(x)
        if kind == KIND_TUPLE:
            return tuple(arrays)
        return arrays[0]

    def _recv_small(self, nbytes, nwords):
        """The array of an inline single-array frame (None: not cached and
        not cacheable, take the general path)."""
        start = 8 * HEADER_WORDS
        end = start + 8 * nwords
        key = bytes(self._recv_view[start:end])
        layout = self._layouts.get(key)
        if layout is None:
            dtype, shape, _ = _wire.parse(
                self._recv_words[HEADER_WORDS:HEADER_WORDS + nwords]
                .tolist(), 0)
            if not shape or len(self._layouts) >= _CACHE_LIMIT:
                return None
            layout = self._layouts[key] = (dtype, shape)
        # A writable array over a fresh copy of the payload bytes: one
        # copy, cheaper than numpy.empty plus a slice assignment.
        return numpy.ndarray(layout[1], layout[0],
                             bytearray(self._recv_view[end:end + nbytes]))

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

