"""Process topologies for fuzz programs: Cartesian grids, graphs and
distributed graphs, their queries and neighbourhood collectives.

Every topology is made with ``reorder=False``, so its ranks are the
parent's and the generator knows who is who. The neighbour lists are
read at run time (``Shift``, ``Get_neighbors``, ``Get_dist_neighbors``)
and the per-edge counts come from one matrix indexed by (source,
destination) comm rank, so both ends of an edge agree however the lists
are ordered. ``Create_dist_graph`` leaves the order of a rank's
neighbours to the implementation: there the program sends data chosen
by destination and records blocks sorted by source. Graphs have no
repeated edges (which of two parallel edges a message travels is not
pinned down for every implementation); Cartesian dimensions of size 1
or 2 with periods, where both neighbours are one rank, are generated on
purpose.
"""
from simulator.fuzz.icoll import _rank_branches
from simulator.fuzz.model import DTYPES

__all__ = ['OPS', 'op_cart', 'op_graph', 'op_dist_graph']

_NEIGHBOR_KINDS = ('Neighbor_allgather', 'Neighbor_allgatherv',
                   'Neighbor_alltoall', 'Neighbor_alltoallv',
                   'Neighbor_alltoallw', 'neighbor_allgather',
                   'neighbor_alltoall')


def _counts(rng, size):
    return [[rng.choice((0, 1, 1, 2, 3, 5)) for _ in range(size)]
            for _ in range(size)]


def _neighbor_lines(rng, k, j, ordered, size):
    """Lines of one neighbourhood collective on ``t`` (the topology
    communicator; ``srcs`` / ``dsts`` its neighbour lists, ``cnt(a, b)``
    the count of edge a->b), and its title."""
    kind = rng.choice(_NEIGHBOR_KINDS)
    blocking = kind[0] == 'n' or rng.random() < 0.6
    call = kind if blocking else 'I' + kind[0].lower() + kind[1:]
    finish = '' if blocking else '.Wait()'
    # Data sent along an edge is named by its slot where MPI fixes the
    # order, by its destination where it does not.
    salt = 'x' if ordered else '100 + d'
    key = 'x' if ordered else 'd'
    sb, rb = 'sb{}'.format(j), 'rb{}'.format(j)
    if kind[0] == 'n':
        lines = ['o = [("from", r, {}) for x, d in enumerate(dsts)]'.format(
                     key),
                 'res = t.neighbor_allgather(("all", r)) if {} else '
                 't.neighbor_alltoall(o)'.format(kind.endswith('gather'))]
        record = 'res' if ordered else \
            'sorted(zip(srcs, res), key=lambda p: p[0])'
        return kind, lines + ['rec({}, "n{}", {})'.format(k, j, record)]
    dt = rng.choice(DTYPES)
    n = rng.randint(0, 4)
    lines = ['T = MPI._typedict[np.dtype({!r}).char]'.format(dt)]
    if kind.endswith('gather'):
        lines += ['{} = data({}, r, {!r}, {})'.format(sb, k, dt, n),
                  'rc = [{}] * len(srcs)'.format(n),
                  'rd = [{} * x for x in range(len(srcs))]'.format(n),
                  '{} = fill({!r}, {} * len(srcs))'.format(rb, dt, n),
                  't.{}([{}, {}, T], [{}, {}, T]){}'.format(
                      call, sb, n, rb, n, finish)]
    elif kind.endswith('gatherv'):
        sizes = [rng.randint(0, 4) for _ in range(size)]
        lines += ['ns = {!r}'.format(sizes),
                  '{} = data({}, r, {!r}, ns[r])'.format(sb, k, dt),
                  'rc = [ns[s] if s != MPI.PROC_NULL else 1 for s in srcs]',
                  'rd = [sum(rc[:x]) + x for x in range(len(srcs))]',
                  '{} = fill({!r}, sum(rc) + len(srcs))'.format(rb, dt),
                  't.{}({}, [{}, rc, rd, T]){}'.format(call, sb, rb, finish)]
    else:
        uniform = kind.endswith('all')
        count = '{}'.format(n) if uniform else 'cnt(r, d)'
        lines += ['sc = [{} for d in dsts]'.format(count),
                  'rc = [{} for s in srcs]'.format(
                      n if uniform else 'cnt(s, r)'),
                  '{} = fuzz_concat({!r}, [data({}, r, {!r}, sc[x], '
                  'salt={}) for x, d in enumerate(dsts)])'.format(
                      sb, dt, k, dt, salt),
                  'sd = [sum(sc[:x]) for x in range(len(dsts))]']
        gap = 0 if uniform else 1
        lines += ['rd = [sum(rc[:x]) + {} * x for x in range(len(srcs))]'
                  .format(gap),
                  '{} = fill({!r}, sum(rc) + {} * len(srcs))'.format(
                      rb, dt, gap)]
        if uniform:
            # Counts spelled out: mpi4py infers a count from the whole
            # buffer on a rank with one neighbour or none, and Open MPI 5
            # fails a neighbour alltoall whose send and receive counts
            # differ on one rank (MPI_ERR_TRUNCATE) even where every edge
            # matches.
            lines.append('t.{}([{}, {}, T], [{}, {}, T]){}'.format(
                call, sb, n, rb, n, finish))
        elif kind.endswith('v'):
            lines.append('t.{}([{}, sc, sd, T], [{}, rc, rd, T]){}'.format(
                call, sb, rb, finish))
        else:
            lines += ['z = T.Get_size()',
                      't.{}([{}, sc, [z * x for x in sd], [T] * len(sc)], '
                      '[{}, rc, [z * x for x in rd], [T] * len(rc)]){}'
                      .format(call, sb, rb, finish)]
    if ordered:
        record = rb
    else:
        record = ('sorted(zip(srcs, [{}[a:a + b] for a, b in zip(rd, rc)]),'
                  ' key=lambda p: p[0])'.format(rb))
    lines.append('rec({}, "n{}", {})'.format(k, j, record))
    return '{} {} x{}'.format(call, dt, n), lines


def _neighbor_block(rng, k, ordered, size):
    """Counts, 1-3 neighbourhood collectives and the titles."""
    lines = ['M = {!r}'.format(_counts(rng, size)),
             'def cnt(a, b):',
             '    return 1 if MPI.PROC_NULL in (a, b) else M[a][b]']
    titles = []
    for j in range(rng.randint(1, 3)):
        title, more = _neighbor_lines(rng, k, j, ordered, size)
        titles.append(title)
        lines += more
    return lines, titles


def op_cart(b):
    """Compute_dims, Create_cart (periods, reorder=False), its queries,
    Shift, Sub and neighbourhood collectives."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    m = e.size if rng.random() < 0.7 else rng.randint(1, e.size)
    ndims = rng.randint(1, 3)
    hint, left = [], m
    for _ in range(ndims):
        divisors = [x for x in range(1, left + 1) if left % x == 0]
        if rng.random() < 0.3:
            pick = rng.choice(divisors)
            hint.append(pick)
            left //= pick
        else:
            hint.append(0)
    if 0 not in hint and left != 1:
        hint[-1] *= left
    periods = [rng.random() < 0.5 for _ in range(ndims)]
    remain = [rng.random() < 0.5 for _ in range(ndims)]
    lines = ['dims = MPI.Compute_dims({}, {!r})'.format(m, hint),
             'rec({}, "dims", dims)'.format(k),
             't = c.Create_cart(dims, periods={!r}, reorder=False)'.format(
                 periods),
             'rec({}, "null", t == MPI.COMM_NULL)'.format(k),
             'if t != MPI.COMM_NULL:',
             '    rec({}, "cart", (t.Get_rank(), t.Get_size(), t.Get_dim(), '
             't.Get_topo(), t.Get_topology() == MPI.CART, c.Compare(t)))'
             .format(k),
             '    me = t.Get_coords(t.Get_rank())',
             '    rec({}, "coords", (me, t.Get_cart_rank(me), [t.Get_coords('
             'x) for x in range(t.Get_size())]))'.format(k),
             '    wrap = [x + dims[d] * {!r}[d] if {!r}[d] else x for d, x '
             'in enumerate(me)]'.format([rng.choice((-1, 1, 2))
                                         for _ in range(ndims)], periods),
             '    rec({}, "wrapped", t.Get_cart_rank(wrap))'.format(k),
             '    rec({}, "shift", [t.Shift(d, s) for d in range({}) for s '
             'in (1, -1, {})])'.format(k, ndims, rng.choice((0, 2, 3, -2))),
             '    u = t.Sub({!r})'.format(remain),
             '    rec({}, "sub", (u.Get_rank(), u.Get_size(), u.Get_topo(), '
             'u.Get_dim()))'.format(k),
             '    u.Free()',
             '    srcs, dsts = [], []',
             '    for d in range(t.Get_dim()):',
             '        lo, hi = t.Shift(d, 1)',
             '        srcs += [lo, hi]',
             '        dsts += [lo, hi]']
    more, titles = _neighbor_block(rng, k, True, e.size)
    lines += ['    ' + line for line in more]
    lines += ['    t.Free()']
    b.on_entity(e, 'cart m={} hint={} periods={} [{}]'.format(
        m, hint, periods, '; '.join(titles)), lines)


def _symmetric_graph(rng, n):
    """Adjacency lists of an undirected graph on n nodes without
    repeated edges (self loops allowed), each list in a random order."""
    adj = [[] for _ in range(n)]
    for a in range(n):
        for c in range(a, n):
            if rng.random() < (0.15 if a == c else 0.5):
                adj[a].append(c)
                if c != a:
                    adj[c].append(a)
    for row in adj:
        rng.shuffle(row)
    return adj


def op_graph(b):
    """Create_graph over the first ranks, its queries and neighbourhood
    collectives (symmetric adjacency, as MPI requires for them)."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    m = e.size if rng.random() < 0.7 else rng.randint(1, e.size)
    adj = _symmetric_graph(rng, m)
    index, edges = [], []
    for row in adj:
        edges += row
        index.append(len(edges))
    if not adj[0] or rng.random() < 0.3:
        # mpi4py reads an index that starts with 0 and ends with the
        # edge count as CSR offsets (n + 1 entries): a first node without
        # edges must be written that way.
        index = [0] + index
    lines = ['t = c.Create_graph({!r}, {!r}, reorder=False)'.format(
                 index, edges),
             'rec({}, "null", t == MPI.COMM_NULL)'.format(k),
             'if t != MPI.COMM_NULL:',
             '    rec({}, "graph", (t.Get_rank(), t.Get_size(), t.Get_dims(),'
             ' t.Get_topo(), t.Get_topology() == MPI.GRAPH, c.Compare(t)))'
             .format(k),
             '    rec({}, "nbrs", [(t.Get_neighbors_count(x), t.Get_neighbors'
             '(x)) for x in range(t.Get_size())])'.format(k),
             '    srcs = dsts = t.Get_neighbors(t.Get_rank())']
    more, titles = _neighbor_block(rng, k, True, e.size)
    lines += ['    ' + line for line in more] + ['    t.Free()']
    b.on_entity(e, 'graph m={} edges={} [{}]'.format(m, adj,
                                                     '; '.join(titles)),
                lines)


def op_dist_graph(b):
    """Create_dist_graph_adjacent or Create_dist_graph, weighted or not,
    its queries and neighbourhood collectives."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    n = e.size
    density = rng.choice((0.2, 0.5, 0.8))
    edges = [(a, c) for a in range(n) for c in range(n)
             if rng.random() < density]
    weights = {edge: rng.randint(0, 9) for edge in edges}
    weighted = rng.random() < 0.5
    adjacent = rng.random() < 0.5
    if adjacent:
        branches = []
        for i in range(n):
            ins = [a for a, c in edges if c == i]
            outs = [c for a, c in edges if a == i]
            rng.shuffle(ins)
            rng.shuffle(outs)
            if weighted:
                sw = [weights[(a, i)] for a in ins] or 'MPI.WEIGHTS_EMPTY'
                dw = [weights[(i, c)] for c in outs] or 'MPI.WEIGHTS_EMPTY'
                extra = ', {}, {}'.format(sw, dw)
            else:
                extra = ''
            branches.append(['t = c.Create_dist_graph_adjacent({!r}, {!r}'
                             '{}, reorder=False)'.format(ins, outs, extra)])
        how = 'adjacent'
    else:
        owner = {edge: rng.randrange(n) for edge in edges}
        branches = []
        for i in range(n):
            mine = [edge for edge in edges if owner[edge] == i]
            rng.shuffle(mine)
            sources = sorted({a for a, _ in mine}, key=lambda _: rng.random())
            degrees = [sum(1 for a, _ in mine if a == s) for s in sources]
            dests = [c for s in sources for a, c in mine if a == s]
            w = ''
            if weighted:
                w = ', {}'.format([weights[(s, c)] for s in sources
                                   for a, c in mine if a == s]
                                  or 'MPI.WEIGHTS_EMPTY')
            branches.append(['t = c.Create_dist_graph({!r}, {!r}, {!r}{}, '
                             'reorder=False)'.format(sources, degrees, dests,
                                                     w)])
        how = 'edges given anywhere'
    lines = _rank_branches(n, branches)
    lines += ['srcs, dsts, w = t.Get_dist_neighbors()',
              'rec({}, "dist", (t.Get_rank(), t.Get_size(), t.Get_topology()'
              ' == MPI.DIST_GRAPH, t.Get_dist_neighbors_count(), c.Compare(t'
              ')))'.format(k)]
    if adjacent:
        lines.append('rec({}, "nbrs", (srcs, dsts, w))'.format(k))
    else:
        # The order is the implementation's: compare (neighbour, weight)
        # pairs as sets.
        lines += ['ws, wd = w if w is not None else (None, None)',
                  'rec({}, "nbrs", (sorted(zip(srcs, ws or [None] * len(srcs'
                  '))), sorted(zip(dsts, wd or [None] * len(dsts))), w is '
                  'None))'.format(k)]
    more, titles = _neighbor_block(rng, k, adjacent, n)
    lines += more + ['t.Free()']
    b.on_entity(e, 'dist graph {} {}weighted edges={} [{}]'.format(
        how, '' if weighted else 'un', edges, '; '.join(titles)), lines)


OPS = (op_cart, op_graph, op_dist_graph)
