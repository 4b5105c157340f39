"""Typemaps of MPI datatypes: bounds, sizes and where the bytes lie.

A :class:`Layout` describes one datatype: its size (data bytes), bounds
(``lb``/``ub``, which set the extent, the stride between consecutive
elements) and true bounds (the bytes really touched), computed from the
constructor's arguments, never by listing the typemap, so a
``Create_contiguous(2**31)`` costs nothing. The typemap itself (byte
offsets of every data byte) is listed only when a message moves data of
that type: :meth:`Layout.byte_index` gives the offsets of ``count``
elements, which :mod:`simulator.mpi.datatypes` uses to gather a send and
scatter a receive.

``base`` is the one predefined datatype a typemap is made of (MPI's "type
signature" then is ``size // base.size`` of it), or None for a struct
mixing several: such data moves as bytes.
"""
import math

import numpy as np

__all__ = ['Layout', 'predefined', 'block_layout', 'struct_layout',
           'resized', 'subarray',
           'darray_blocks', 'INT_MAX']

INT_MAX = (1 << 31) - 1


class Layout:
    """Size, bounds, true bounds and (lazily) the byte offsets of a type."""

    __slots__ = ('size', 'lb', 'ub', 'true_lb', 'true_ub', 'base',
                 '_blocks', '_index', 'align', 'explicit')

    def __init__(self, size, lb, ub, true_lb, true_ub, base, blocks,
                 align=1, explicit=False):
        self.size = size
        # alignment of the most aligned predefined type inside, and whether
        # bounds were set explicitly (resized, subarray, darray): a struct
        # pads its extent to the alignment unless a member's were set.
        self.align, self.explicit = align, explicit
        self.lb, self.ub = lb, ub
        self.true_lb, self.true_ub = true_lb, true_ub
        self.base = base
        # blocks: () -> list of (displacement, count, child Layout), or
        # None for a predefined type (one contiguous run of ``size``).
        self._blocks = blocks
        self._index = None

    @property
    def extent(self):
        return self.ub - self.lb

    def element_index(self):
        """Byte offsets (int64) of one element's data bytes, in typemap
        order."""
        if self._index is None:
            if self._blocks is None:
                self._index = np.arange(self.size, dtype=np.int64)
            else:
                parts = []
                for disp, count, child in self._blocks():
                    if count <= 0 or child.size == 0:
                        continue
                    starts = disp + child.extent * np.arange(
                        count, dtype=np.int64)
                    parts.append((starts[:, None] +
                                  child.element_index()[None, :]).ravel())
                self._index = np.concatenate(parts) if parts else \
                    np.empty(0, np.int64)
        return self._index

    def basic_layouts(self):
        """The predefined layouts of one element's basic elements, in
        typemap order (listed, so for mixed structs only)."""
        if self._blocks is None:
            return [self]
        found = []
        for _disp, count, child in self._blocks():
            if count > 0 and child.size > 0:
                found += child.basic_layouts() * count
        return found

    def element_sizes(self):
        """Sizes of one element's basic elements, in typemap order."""
        return [basic.size for basic in self.basic_layouts()]

    def byte_index(self, count):
        """Byte offsets of the data of ``count`` consecutive elements."""
        one = self.element_index()
        if count == 1:
            return one
        starts = self.extent * np.arange(count, dtype=np.int64)
        return (starts[:, None] + one[None, :]).ravel()

    def dense(self):
        """True when ``count`` elements are ``count * size`` consecutive
        bytes from offset 0 in typemap order (a plain run of memory)."""
        if self._blocks is None:
            return self.lb == 0 and self.extent == self.size
        if self.lb != 0 or self.extent != self.size or \
                self.true_lb != 0 or self.true_ub != self.size:
            return False
        index = self.element_index()
        return bool(np.array_equal(index, np.arange(self.size)))


def predefined(size, extent=None, true_extent=None, base=None, align=1):
    """The layout of a predefined datatype of ``size`` data bytes."""
    extent = size if extent is None else extent
    true_extent = size if true_extent is None else true_extent
    return Layout(size, 0, extent, 0, true_extent, base, None, align)


def _bounds(blocks):
    """(lb, ub, true_lb, true_ub) of blocks [(displ, count, layout)].

    Bounds set explicitly (resized, subarray, darray) are sticky, as
    MPI defines them: where a member has them, the bounds are those of
    such members alone (a struct of three shorts at 1 and a double
    resized to (0, 8) at 7 has lb 7 and extent 8, not lb 1)."""
    lb = ub = tlb = tub = None
    marked = any(child.explicit for _d, count, child in blocks
                 if count > 0)
    for disp, count, child in blocks:
        if count <= 0:
            continue
        span = (count - 1) * child.extent
        lo, hi = min(0, span), max(0, span)
        true = (disp + child.true_lb + lo, disp + child.true_ub + hi)
        tlb = true[0] if tlb is None else min(tlb, true[0])
        tub = true[1] if tub is None else max(tub, true[1])
        if marked and not child.explicit:
            continue
        bounds = (disp + child.lb + lo, disp + child.ub + hi)
        lb = bounds[0] if lb is None else min(lb, bounds[0])
        ub = bounds[1] if ub is None else max(ub, bounds[1])
    if tlb is None:
        return 0, 0, 0, 0
    return lb, ub, tlb, tub


def block_layout(blocks):
    """The layout of blocks ``[(byte displacement, count, layout)]``, the
    shape every constructor but resized reduces to."""
    blocks = [(int(d), int(c), child) for d, c, child in blocks]
    size = sum(c * child.size for _d, c, child in blocks if c > 0)
    bases = {id(child.base): child.base for _d, c, child in blocks
             if c > 0 and child.size > 0}
    if not bases:
        base = blocks[0][2].base if blocks else None
    elif len(bases) == 1 and None not in bases.values():
        base = next(iter(bases.values()))
    else:
        base = None
    lb, ub, tlb, tub = _bounds(blocks)
    align = max([child.align for _d, _c, child in blocks] or [1])
    explicit = any(child.explicit for _d, _c, child in blocks)
    return Layout(size, lb, ub, tlb, tub, base, lambda: blocks, align,
                  explicit)


def struct_layout(blocks):
    """block_layout with the extent padded to the members' alignment, as
    a C compiler pads a struct (MPI's epsilon). Open MPI pads every
    constructor's extent so, not only a struct's: an hvector of three
    ints 5 bytes apart has extent 16, not 14 (the byte-displacement
    constructors are where it shows)."""
    lay = block_layout(blocks)
    if not lay.explicit and lay.align > 1:
        lay.ub += (-(lay.ub - lay.lb)) % lay.align
    return lay


def resized(child, lb, extent):
    """``child`` with bounds set to ``lb`` and ``lb + extent``."""
    return Layout(child.size, lb, lb + extent, child.true_lb, child.true_ub,
                  child.base, lambda: [(0, 1, child)], child.align, True)


def subarray(child, sizes, subsizes, starts, fortran):
    """The layout of MPI_Type_create_subarray, extent the full array."""
    if fortran:
        sizes, subsizes, starts = sizes[::-1], subsizes[::-1], starts[::-1]
    # strides in elements of the full (C-ordered) array
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    ext = child.extent
    rows = [0]
    for dim in range(len(sizes) - 1):
        rows = [r + (starts[dim] + k) * strides[dim] for r in rows
                for k in range(subsizes[dim])]
    last = starts[-1]
    return _within_array(
        [((r + last) * ext, subsizes[-1], child) for r in rows], sizes, child)


def _within_array(blocks, sizes, child):
    """The layout of ``blocks`` of ``child`` inside a whole array of
    ``sizes`` elements (subarray, darray): lb 0, extent the array's."""
    inner = block_layout(blocks)
    return Layout(inner.size, 0, math.prod(sizes) * child.extent,
                  inner.true_lb, inner.true_ub, inner.base,
                  lambda: [(0, 1, inner)], child.align, True)


def _dist_block(gsize, nprocs, coord, darg):
    """(start, count) of a block distribution's piece at ``coord``."""
    block = darg if darg > 0 else -(-gsize // nprocs)
    start = min(coord * block, gsize)
    return [(start, max(0, min(block, gsize - start)))]


def _dist_cyclic(gsize, nprocs, coord, darg):
    """(start, count) runs of a cyclic(darg) distribution at ``coord``."""
    block = darg if darg > 0 else 1
    out = []
    start = coord * block
    while start < gsize:
        out.append((start, min(block, gsize - start)))
        start += nprocs * block
    return out


def darray_blocks(child, size, rank, gsizes, distribs, dargs, psizes,
                  fortran, block, cyclic, none):
    """The layout of MPI_Type_create_darray: the process ``rank``'s part
    of a ``gsizes`` array distributed on a ``psizes`` grid."""
    ndim = len(gsizes)
    # process coordinates, row-major over the grid
    coords, r = [], rank
    for p in reversed(psizes):
        coords.append(r % p)
        r //= p
    coords.reverse()
    runs = []
    for dim in range(ndim):
        if distribs[dim] == none:
            runs.append([(0, gsizes[dim])])
        elif distribs[dim] == block:
            runs.append(_dist_block(gsizes[dim], psizes[dim], coords[dim],
                                    dargs[dim]))
        elif distribs[dim] == cyclic:
            runs.append(_dist_cyclic(gsizes[dim], psizes[dim], coords[dim],
                                     dargs[dim]))
        else:
            raise ValueError('darray: unknown distribution {!r}'.format(
                distribs[dim]))
    order = list(range(ndim))
    if fortran:
        order.reverse()
    shape = [gsizes[d] for d in order]
    strides = [1] * ndim
    for i in range(ndim - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    per_dim = [runs[d] for d in order]
    # every element index of the outer dimensions, then runs of the last
    rows = [0]
    for i in range(ndim - 1):
        rows = [r + k * strides[i] for r in rows
                for s, c in per_dim[i] for k in range(s, s + c)]
    ext = child.extent
    return _within_array([((r + s) * ext, c, child) for r in rows
                          for s, c in per_dim[-1] if c > 0], gsizes, child)
