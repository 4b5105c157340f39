"""halopar (neon's ConvLayerDist, MaxPoolingLayerDist): spatial tiles.

An NCHW image is tiled over a ``grid=(rows, cols)`` of ranks (rank ``r`` at
``(r // cols, r % cols)``): H by ``numpy.array_split`` over the rows, W over
the columns. A windowed op (convolution, pooling) produces its output tiled
the same way, so layers chain. Each rank works out which input rows and
columns its own outputs need, fetches them from their owners (any rank, not
only neighbours; corners included) with non-blocking point-to-point, builds
its padded input window and runs Chainer's own function on it with
``pad=0``. Padding exists only at the border of the whole image.

Backward returns each halo's gradient to its owner, who adds it. The
weights of a halo convolution are replicated: their gradients are summed
over the grid, so every rank ends with the whole image's gradient.
Tensors that every rank holds whole (before ``split_tiles``, after
``gather_tiles``) follow the replicated convention of ``vecpar``.
"""
import chainer
import chainer.functions as F
import numpy

from chainermn_lite import _mpi
from chainermn_lite import _wire
from chainermn_lite.parallel import buffer_collectives
from chainermn_lite.parallel.grid import as_mpi_comm
from chainermn_lite.parallel.grid import axis_bounds
from chainermn_lite.parallel.grid import check_grid
from chainermn_lite.parallel.grid import grid_position
from chainermn_lite.parallel.grid import tile_bounds

__all__ = ['HaloPlan', 'HaloExchange', 'split_tiles', 'gather_tiles',
           'halo_convolution_2d', 'halo_max_pooling_2d',
           'halo_average_pooling_2d']

# Tags of halo messages (forward data, backward gradients): far from the
# small tags user code tends to use on the same communicator.
TAG_HALO = 0x4A10
TAG_HALO_GRAD = 0x4A11


def _pair(value, what):
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError('{} must be an int or a pair, got {!r}'.format(
                what, value))
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _overlap(a, b):
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo < hi else None


def _out_size(length, ksize, stride, pad, cover_all):
    if cover_all:
        return (length + 2 * pad - ksize + stride - 1) // stride + 1
    return (length + 2 * pad - ksize) // stride + 1


class _AxisPlan:
    """One axis: every part's input, output and needed input range."""

    def __init__(self, length, parts, ksize, stride, pad, cover_all, axis):
        if ksize < 1 or stride < 1 or pad < 0:
            raise ValueError('invalid {} window: ksize={} stride={} '
                             'pad={}'.format(axis, ksize, stride, pad))
        self.length = length
        self.out_length = _out_size(length, ksize, stride, pad, cover_all)
        if self.out_length < parts:
            raise ValueError(
                'the output has {} {} but the grid has {} {}: every tile '
                'must own at least one (input {} {}, ksize={}, stride={}, '
                'pad={})'.format(self.out_length, axis, parts, axis,
                                 length, axis, ksize, stride, pad))
        self.inputs = axis_bounds(length, parts)
        self.outputs = axis_bounds(self.out_length, parts)
        # Window of part i in unpadded input coordinates: may start below
        # 0 (padding) and end past the length (padding, cover_all).
        self.windows = [(o0 * stride - pad, (o1 - 1) * stride + ksize - pad)
                        for o0, o1 in self.outputs]
        self.needs = [(max(lo, 0), min(hi, length))
                      for lo, hi in self.windows]


class HaloPlan:
    """Which pieces of which tile go to which rank for one windowed op.

    ``recvs`` lists ``(peer, rows, cols)`` this rank needs from ``peer``,
    ``sends`` lists ``(peer, rows, cols)`` of this rank's tile that
    ``peer`` needs; rows and cols are global ``(start, stop)`` ranges.
    """

    def __init__(self, full_hw, grid, rank, ksize, stride, pad,
                 cover_all=False):
        (kh, kw), (sy, sx), (ph, pw) = ksize, stride, pad
        self.grid, self.rank = grid, rank
        self.rows = _AxisPlan(full_hw[0], grid[0], kh, sy, ph, cover_all,
                              'rows')
        self.cols = _AxisPlan(full_hw[1], grid[1], kw, sx, pw, cover_all,
                              'cols')
        self.out_hw = (self.rows.out_length, self.cols.out_length)
        my_row, my_col = grid_position(rank, grid)
        self.tile = (self.rows.inputs[my_row], self.cols.inputs[my_col])
        self.window = (self.rows.windows[my_row], self.cols.windows[my_col])
        self.out_tile = (self.rows.outputs[my_row],
                         self.cols.outputs[my_col])
        self.recvs, self.sends = [], []
        for peer in range(grid[0] * grid[1]):
            row, col = grid_position(peer, grid)
            got = (_overlap(self.rows.needs[my_row], self.rows.inputs[row]),
                   _overlap(self.cols.needs[my_col], self.cols.inputs[col]))
            if None not in got:
                self.recvs.append((peer,) + got)
            given = (_overlap(self.rows.needs[row], self.rows.inputs[my_row]),
                     _overlap(self.cols.needs[col], self.cols.inputs[my_col]))
            if None not in given:
                self.sends.append((peer,) + given)

    def window_shape(self):
        """(height, width) of this rank's padded input window."""
        (r0, r1), (c0, c1) = self.window
        return r1 - r0, c1 - c0

    def in_window(self, rows, cols):
        """Slices of global ``rows``/``cols`` inside this rank's window."""
        (r0, _), (c0, _) = self.window
        return (slice(rows[0] - r0, rows[1] - r0),
                slice(cols[0] - c0, cols[1] - c0))

    def in_tile(self, rows, cols):
        """Slices of global ``rows``/``cols`` inside this rank's tile."""
        (r0, _), (c0, _) = self.tile
        return (slice(rows[0] - r0, rows[1] - r0),
                slice(cols[0] - c0, cols[1] - c0))

    def halo_elements(self):
        """Pixels (per sample and channel) this rank sends to others."""
        return sum((r[1] - r[0]) * (c[1] - c[0])
                   for peer, r, c in self.sends if peer != self.rank)


def _exchange(mpi_comm, tag, outgoing, incoming):
    """Post receives, then sends; wait. ``incoming``: [(peer, buffer)]."""
    module = _mpi.mpi_module_of(mpi_comm)
    requests = [mpi_comm.Irecv(buf, source=peer, tag=tag)
                for peer, buf in incoming]
    requests += [mpi_comm.Isend(buf, dest=peer, tag=tag)
                 for peer, buf in outgoing]
    if requests:
        module.Request.Waitall(requests)


class HaloExchange(chainer.function_node.FunctionNode):
    """This rank's tile -> its padded input window (halos fetched)."""

    def __init__(self, mpi_comm, plan, pad_value):
        self.mpi_comm = mpi_comm
        self.plan = plan
        self.pad_value = pad_value

    def forward(self, inputs):
        x, = inputs
        plan, me = self.plan, self.plan.rank
        lead = x.shape[:2]
        window = numpy.full(lead + plan.window_shape(), self.pad_value,
                            dtype=x.dtype)
        outgoing, incoming = [], []
        for peer, rows, cols in plan.sends:
            piece = x[(Ellipsis,) + plan.in_tile(rows, cols)]
            if peer == me:
                window[(Ellipsis,) + plan.in_window(rows, cols)] = piece
            else:
                outgoing.append((peer, numpy.ascontiguousarray(piece)))
        for peer, rows, cols in plan.recvs:
            if peer != me:
                shape = lead + (rows[1] - rows[0], cols[1] - cols[0])
                incoming.append((peer, numpy.empty(shape, dtype=x.dtype)))
        _exchange(self.mpi_comm, TAG_HALO, outgoing, incoming)
        received = dict(incoming)
        for peer, rows, cols in plan.recvs:
            if peer != me:
                window[(Ellipsis,) + plan.in_window(rows, cols)] = \
                    received[peer]
        self.tile_shape = x.shape
        return window,

    def backward(self, indexes, grad_outputs):
        gwindow, = grad_outputs
        plan, me = self.plan, self.plan.rank
        dtype = gwindow.dtype
        gx = numpy.zeros(self.tile_shape, dtype=dtype)
        lead = self.tile_shape[:2]
        outgoing, incoming = [], []
        for peer, rows, cols in plan.recvs:
            part = gwindow.array[(Ellipsis,) + plan.in_window(rows, cols)]
            if peer == me:
                gx[(Ellipsis,) + plan.in_tile(rows, cols)] += part
            else:
                outgoing.append((peer, numpy.ascontiguousarray(part)))
        for peer, rows, cols in plan.sends:
            if peer != me:
                shape = lead + (rows[1] - rows[0], cols[1] - cols[0])
                incoming.append((peer, numpy.empty(shape, dtype=dtype)))
        _exchange(self.mpi_comm, TAG_HALO_GRAD, outgoing, incoming)
        received = dict(incoming)
        for peer, rows, cols in plan.sends:
            if peer != me:
                gx[(Ellipsis,) + plan.in_tile(rows, cols)] += received[peer]
        return chainer.Variable(gx),


class SumGradsOverGrid(chainer.function_node.FunctionNode):
    """Identity forward; backward sums the gradients over the ranks.

    Replicated weights see only this rank's tile; the sum over the grid is
    the whole image's gradient (one packed Allreduce for all inputs).
    """

    def __init__(self, mpi_comm):
        self.mpi_comm = mpi_comm

    def forward(self, inputs):
        return tuple(x.view() for x in inputs)

    def backward(self, indexes, grad_outputs):
        shapes = [self.inputs[i].shape for i in range(len(self.inputs))]
        dtype = self.inputs[0].dtype
        local = [numpy.zeros(s, dtype=dtype) if g is None else g.array
                 for s, g in zip(shapes, grad_outputs)]
        summed = buffer_collectives.allreduce_sum(self.mpi_comm, local)
        return tuple(chainer.Variable(summed[i]) for i in indexes)


def _tile_shapes(mpi_comm, grid, x, what):
    """(batch, channels, H, W) of the whole image the tiles form."""
    def tile():
        if x.ndim != 4:
            raise ValueError('{}: expected an NCHW tile, got shape {}'.format(
                what, x.shape))
        return x
    # A rank's wrong tile raises on every rank.
    _, descs = _wire.allgather_descriptors(mpi_comm, tile, what)
    shapes = [shape for _, shape in descs]
    rows, cols = grid
    heights = [shapes[r * cols][2] if len(shapes[r * cols]) == 4 else -1
               for r in range(rows)]
    widths = [shapes[c][3] if len(shapes[c]) == 4 else -1
              for c in range(cols)]
    full = shapes[0][:2] + (sum(heights), sum(widths))
    expected = [(full[0], full[1], h1 - h0, w1 - w0)
                for h0, h1 in axis_bounds(full[2], rows)
                for w0, w1 in axis_bounds(full[3], cols)]
    if [tuple(s) for s in shapes] != expected:
        wrong = ['rank {} has {} (expected {})'.format(r, s, e)
                 for r, (s, e) in enumerate(zip(shapes, expected)) if s != e]
        raise ValueError(
            '{}: the tiles on grid {}x{} do not fit one full shape {}: {}'
            .format(what, rows, cols, full, '; '.join(wrong)))
    if full[2] < rows or full[3] < cols:
        raise ValueError(
            '{}: image of {}x{} pixels has fewer rows or columns than the '
            'grid {}x{}'.format(what, full[2], full[3], rows, cols))
    return full


def _setup(comm, grid, x, what):
    mpi_comm = as_mpi_comm(comm)
    grid = check_grid(grid, mpi_comm.Get_size())
    data = x.array if isinstance(x, chainer.Variable) else x
    full = _tile_shapes(mpi_comm, grid, data, what)
    return mpi_comm, grid, full


def halo_window(x, comm, grid, ksize, stride, pad, cover_all=False,
                pad_value=0, what='halo_window'):
    """halo_window(x, comm, grid, ksize, stride, pad): (window, plan).

    The padded input window from which this rank computes its output tile
    of a windowed op with ``pad=0``. Differentiable.
    """
    mpi_comm, grid, full = _setup(comm, grid, x, what)
    plan = HaloPlan(full[2:], grid, mpi_comm.Get_rank(), _pair(ksize,
                    'ksize'), _pair(stride, 'stride'), _pair(pad, 'pad'),
                    cover_all)
    window = HaloExchange(mpi_comm, plan, pad_value).apply((x,))[0]
    return window, plan


def halo_convolution_2d(x, W, b, comm, grid, stride=1, pad=0):
    """halo_convolution_2d(x, W, b, comm, grid, stride=1, pad=0).

    ``convolution_2d`` of the tiled image; ``W`` and ``b`` are the whole
    (replicated) weights, their gradients summed over the grid.
    """
    in_channels = x.shape[1] if x.ndim == 4 else None
    if W.ndim != 4 or in_channels != W.shape[1]:
        raise ValueError(
            'halo_convolution_2d: W of shape {} needs {} input channels; '
            'x has shape {}'.format(W.shape, W.shape[1] if W.ndim == 4
                                    else '?', x.shape))
    window, plan = halo_window(x, comm, grid, W.shape[2:], stride, pad,
                               what='halo_convolution_2d')
    params = (W,) if b is None else (W, b)
    params = SumGradsOverGrid(as_mpi_comm(comm)).apply(params)
    return F.convolution_2d(window, *params, stride=stride, pad=0)


def halo_max_pooling_2d(x, comm, grid, ksize, stride=None, pad=0,
                        cover_all=True):
    """halo_max_pooling_2d(x, comm, grid, ksize, stride=None, pad=0,
    cover_all=True): ``max_pooling_2d`` of the tiled image."""
    stride = ksize if stride is None else stride
    window, _ = halo_window(x, comm, grid, ksize, stride, pad, cover_all,
                            pad_value=-numpy.inf,
                            what='halo_max_pooling_2d')
    return F.max_pooling_2d(window, ksize, stride, pad=0, cover_all=False)


def halo_average_pooling_2d(x, comm, grid, ksize, stride=None, pad=0):
    """halo_average_pooling_2d(x, comm, grid, ksize, stride=None, pad=0):
    ``average_pooling_2d`` of the tiled image (padded zeros count)."""
    stride = ksize if stride is None else stride
    window, _ = halo_window(x, comm, grid, ksize, stride, pad,
                            what='halo_average_pooling_2d')
    return F.average_pooling_2d(window, ksize, stride, pad=0)


class SplitTiles(chainer.function_node.FunctionNode):
    """Whole (replicated) image -> this rank's tile."""

    def __init__(self, mpi_comm, grid):
        self.mpi_comm = mpi_comm
        self.grid = grid

    def forward(self, inputs):
        x, = inputs
        if x.ndim != 4:
            raise ValueError('split_tiles: expected an NCHW image, got '
                             'shape {}'.format(x.shape))
        rows, cols = self.grid
        if x.shape[2] < rows or x.shape[3] < cols:
            raise ValueError(
                'split_tiles: image of {}x{} pixels has fewer rows or '
                'columns than the grid {}x{}'.format(
                    x.shape[2], x.shape[3], rows, cols))
        self.full_shape = x.shape
        (h0, h1), (w0, w1) = _bounds(x.shape, self.grid,
                                     self.mpi_comm.Get_rank())
        return numpy.ascontiguousarray(x[:, :, h0:h1, w0:w1]),

    def backward(self, indexes, grad_outputs):
        gy, = grad_outputs
        return chainer.Variable(_allgather_tiles(
            self.mpi_comm, self.grid, gy.array, self.full_shape)),


class GatherTiles(chainer.function_node.FunctionNode):
    """This rank's tile -> the whole image on every rank."""

    def __init__(self, mpi_comm, grid, full_shape):
        self.mpi_comm = mpi_comm
        self.grid = grid
        self.full_shape = full_shape

    def forward(self, inputs):
        x, = inputs
        return _allgather_tiles(self.mpi_comm, self.grid, x,
                                self.full_shape),

    def backward(self, indexes, grad_outputs):
        gy, = grad_outputs
        (h0, h1), (w0, w1) = _bounds(self.full_shape, self.grid,
                                     self.mpi_comm.Get_rank())
        return chainer.Variable(numpy.ascontiguousarray(
            gy.array[:, :, h0:h1, w0:w1])),


def _bounds(full_shape, grid, rank):
    return tile_bounds(full_shape[2:], grid, rank)


def _allgather_tiles(mpi_comm, grid, tile, full_shape):
    """Every rank's tile, assembled into the whole image."""
    size = mpi_comm.Get_size()
    spans = [_bounds(full_shape, grid, r) for r in range(size)]
    counts = [(h1 - h0) * (w1 - w0) for (h0, h1), (w0, w1) in spans]
    # Pixels first, so one rank's tile is one contiguous run of rows.
    mine = numpy.ascontiguousarray(tile.transpose(2, 3, 0, 1)).reshape(
        (-1,) + tile.shape[:2])
    flat = buffer_collectives.allgatherv_rows(mpi_comm, mine, counts)
    full = numpy.empty(full_shape, dtype=tile.dtype)
    start = 0
    for ((h0, h1), (w0, w1)), count in zip(spans, counts):
        block = flat[start:start + count].reshape(
            (h1 - h0, w1 - w0) + tuple(full_shape[:2]))
        full[:, :, h0:h1, w0:w1] = block.transpose(2, 3, 0, 1)
        start += count
    return full


def split_tiles(x, comm, grid):
    """split_tiles(x, comm, grid): this rank's tile of a whole NCHW batch.

    ``x`` is the same on every rank. Differentiable (backward gathers the
    tiles' gradients into the whole image's).
    """
    mpi_comm = as_mpi_comm(comm)
    grid = check_grid(grid, mpi_comm.Get_size())
    return SplitTiles(mpi_comm, grid).apply((x,))[0]


def gather_tiles(x, comm, grid):
    """gather_tiles(x, comm, grid): the whole NCHW image from the tiles.

    Every rank gets the whole image; tiles must fit one full shape (the
    error names the ranks and shapes that do not). Differentiable
    (backward keeps this rank's tile of the gradient).
    """
    mpi_comm, grid, full = _setup(comm, grid, x, 'gather_tiles')
    return GatherTiles(mpi_comm, grid, full).apply((x,))[0]
