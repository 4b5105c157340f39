"""Derived datatypes for fuzz programs: constructors, queries, packing,
and their use in point-to-point messages and collectives.

The generator keeps a model of each type it builds (:class:`Model`: the
typemap as (byte offset, basic type) pairs in typemap order, and the lb
/ ub markers), so it knows a type's signature (which receive types match
a send), whether copies overlap (a receive type must not) and how long
a buffer must be. Buffers are byte arrays of random bytes, so every
layout moves exact bytes and gaps the type skips keep their fill
pattern. Every offset is non-negative, so ``[buf, count, type]`` from
the start of an array covers the type.
"""
from simulator.fuzz.icoll import _rank_branches

__all__ = ['OPS', 'Model', 'op_dtype_queries',
           'op_dtype_pack', 'op_dtype_p2p', 'op_dtype_collectives']

# Basic types (MPI name -> size in bytes); external32 has no size for
# them all the same way, so Pack_external draws from EXTERNAL only.
BASIC = {'BYTE': 1, 'SIGNED_CHAR': 1, 'UNSIGNED_CHAR': 1, 'SHORT': 2,
         'INT16_T': 2, 'INT': 4, 'UNSIGNED': 4, 'FLOAT': 4, 'LONG': 8,
         'INT64_T': 8, 'DOUBLE': 8, 'C_DOUBLE_COMPLEX': 16}
EXTERNAL = ('BYTE', 'SIGNED_CHAR', 'SHORT', 'INT', 'UNSIGNED', 'FLOAT',
            'INT64_T', 'DOUBLE')
# What types are built from. Not C_DOUBLE_COMPLEX: Open MPI 5.0 moves
# one element of a vector of vectors of it 4 bytes off where its copies
# lie at strides that are not multiples of 16 (resized to extent 20,
# an hvector of stride 36).
DRAWN = tuple(sorted(set(BASIC) - {'C_DOUBLE_COMPLEX'}))


class Model:
    """What the generator knows of one datatype: the expression (or
    variable) naming it, its typemap and its lb / ub."""

    def __init__(self, name, elems, lb, ub, explicit=False):
        self.name = name
        self.elems = elems      # [(byte offset, basic type name)]
        self.lb, self.ub = lb, ub
        # bounds set by resized / subarray / darray: MPI keeps them
        # (sticky) through later constructors, and Open MPI pads no
        # extent that has them
        self.explicit = explicit

    @property
    def extent(self):
        return self.ub - self.lb

    @property
    def true_ub(self):
        return max((o + BASIC[t] for o, t in self.elems), default=0)

    @property
    def bases(self):
        return {t for _, t in self.elems}

    def copies(self, count):
        """The typemap of ``count`` consecutive copies."""
        return [(o + i * self.extent, t) for i in range(count)
                for o, t in self.elems]

    def overlaps(self, count=1):
        """Whether two elements of ``count`` copies share a byte (such a
        type may send but must not receive)."""
        seen = set()
        for o, t in self.copies(count):
            span = set(range(o, o + BASIC[t]))
            if seen & span:
                return True
            seen |= span
        return False


def _span(t, count):
    """Code for the bytes a buffer needs for ``count`` copies of ``t``
    (asked of the type at run time: Open MPI pads a struct's extent)."""
    return 'fuzz_span({}, {})'.format(t.name, count)


def _shift(elems, by):
    return [(o + by, t) for o, t in elems]


class _Types:
    """The types one operation builds: construction lines, variables to
    free."""

    def __init__(self, rng, prefix, procs=1):
        self.rng, self.prefix = rng, prefix
        self.lines, self.made = [], []
        # a darray spreads over ``procs`` ranks, each building its own
        # piece (``r``): such a type differs between ranks, so only
        # operations that keep it local (queries, packing) set procs
        self.procs = procs

    def _new(self, expr, elems, lb, ub, explicit=False):
        var = '{}{}'.format(self.prefix, len(self.made))
        self.lines.append('{} = {}'.format(var, expr))
        self.made.append(var)
        if not explicit and elems:
            # Open MPI rounds an extent up to the widest alignment
            # inside (a C struct's padding), whatever the constructor.
            align = max(BASIC[t] // (2 if 'COMPLEX' in t else 1)
                        for _, t in elems)
            ub = lb + -(-(ub - lb) // align) * align
        return Model(var, elems, lb, ub, explicit)

    def basic(self, name=None):
        name = name or self.rng.choice(DRAWN)
        return Model('MPI.' + name, [(0, name)], 0, BASIC[name])

    def _blocks(self, old, starts, lengths):
        """A typemap of blocks of ``old`` copies at byte ``starts``."""
        elems, lbs, ubs = [], [], []
        for at, n in zip(starts, lengths):
            for i in range(n):
                elems += _shift(old.elems, at + i * old.extent)
            if n:
                lbs.append(at + old.lb)
                ubs.append(at + (n - 1) * old.extent + old.ub)
        return elems, min(lbs, default=0), max(ubs, default=0)

    def derive(self, old):
        """One random constructor applied to ``old``."""
        rng = self.rng
        ext = old.extent
        kind = rng.choice(('contiguous', 'vector', 'hvector', 'indexed',
                           'indexed_block', 'hindexed', 'hindexed_block',
                           'resized', 'dup'))
        if kind == 'contiguous':
            n = rng.randint(1, 4)
            elems, lb, ub = self._blocks(old, [0], [n])
            return self._new('{}.Create_contiguous({})'.format(old.name, n),
                             elems, lb, ub, old.explicit)
        if kind in ('vector', 'hvector'):
            count, bl = rng.randint(1, 4), rng.randint(1, 3)
            stride = bl + rng.randint(0, 2)
            step = stride * ext
            if kind == 'hvector':
                step = bl * ext + rng.choice((0, 1, 3, ext))
                stride = step
            elems, lb, ub = self._blocks(old, [j * step for j in
                                               range(count)], [bl] * count)
            return self._new('{}.Create_{}({}, {}, {})'.format(
                old.name, kind, count, bl, stride), elems, lb, ub,
                old.explicit)
        if kind in ('indexed', 'hindexed', 'indexed_block',
                    'hindexed_block'):
            nblocks = rng.randint(1, 4)
            same = kind.endswith('block')
            bl = rng.randint(1, 3)
            lengths = [bl if same else rng.randint(1, 3)
                       for _ in range(nblocks)]
            # Disjoint blocks, listed in a random order (the typemap
            # follows the list, not the addresses).
            starts, at = [], 0
            for n in lengths:
                at += rng.randint(0, 2)
                starts.append(at)
                at += n
            order = list(range(nblocks))
            rng.shuffle(order)
            lengths = [lengths[i] for i in order]
            starts = [starts[i] for i in order]
            disps = [x * ext for x in starts] if kind[0] == 'h' else starts
            elems, lb, ub = self._blocks(old, [x * ext for x in starts],
                                         lengths)
            first = bl if same else lengths
            return self._new('{}.Create_{}({!r}, {!r})'.format(
                old.name, kind, first, disps), elems, lb, ub, old.explicit)
        if kind == 'resized':
            lb = rng.choice((0, old.lb, min(o for o, _ in old.elems) if
                             old.elems else 0, -rng.randint(1, 4)))
            extent = max(old.true_ub - lb, 1) + rng.choice((0, 0, 1, 4))
            return self._new('{}.Create_resized({}, {})'.format(
                old.name, lb, extent), old.elems, lb, lb + extent, True)
        return self._new('{}.Dup()'.format(old.name), old.elems, old.lb,
                         old.ub, old.explicit)

    def struct(self):
        """A struct of 1-3 fields of basic or derived types."""
        rng = self.rng
        fields = [self.basic() if rng.random() < 0.6 else
                  self.derive(self.basic()) for _ in range(rng.randint(1, 3))]
        lengths = [rng.randint(1, 3) for _ in fields]
        disps, at = [], 0
        for f, n in zip(fields, lengths):
            at += rng.choice((0, 0, 1, 4))
            disps.append(at)
            at += max(f.ub, f.true_ub) + (n - 1) * f.extent
        elems, lbs, ubs = [], [], []
        sticky = any(f.explicit for f in fields)
        for f, n, d in zip(fields, lengths, disps):
            e, lb, ub = self._blocks(f, [d], [n])
            elems += e
            if f.explicit or not sticky:
                lbs.append(lb)
                ubs.append(ub)
        return self._new('MPI.Datatype.Create_struct({!r}, {!r}, [{}])'
                         .format(lengths, disps,
                                 ', '.join(f.name for f in fields)),
                         elems, min(lbs), max(ubs), sticky)

    def subarray(self, old):
        rng = self.rng
        nd = rng.randint(1, 3)
        sizes = [rng.randint(1, 4) for _ in range(nd)]
        subs = [rng.randint(1, s) for s in sizes]
        starts = [rng.randint(0, s - u) for s, u in zip(sizes, subs)]
        fortran = rng.random() < 0.4
        elems, total = _placed(old, [list(range(a, a + u)) for a, u in
                                     zip(starts, subs)], sizes, fortran)
        return self._new('{}.Create_subarray({!r}, {!r}, {!r}, order=MPI.'
                         'ORDER_{})'.format(old.name, sizes, subs, starts,
                                            'FORTRAN' if fortran else 'C'),
                         elems, 0, total * old.extent, True)

    def darray(self, old):
        """A darray over ``self.procs`` processes (the model is rank 0's
        piece; the program builds its own rank's)."""
        rng, size, rank = self.rng, self.procs, 0
        nd = rng.randint(1, 2)
        psizes = [size, 1] if nd == 2 and rng.random() < 0.5 else \
            [1, size] if nd == 2 else [size]
        gsizes = [rng.randint(1, 6) for _ in range(nd)]
        distribs, dargs, owned = [], [], []
        coords = _unlinear(rank, psizes)
        for g, p, c in zip(gsizes, psizes, coords):
            how = rng.choice(('BLOCK', 'CYCLIC', 'NONE') if p == 1 else
                             ('BLOCK', 'CYCLIC'))
            if how == 'NONE':
                distribs.append('MPI.DISTRIBUTE_NONE')
                dargs.append('MPI.DISTRIBUTE_DFLT_DARG')
                owned.append(list(range(g)))
                continue
            dflt = rng.random() < 0.5
            extra = 0 if dflt else rng.randint(0, 1)
            while True:
                # Every rank's piece non-empty: Open MPI 5.0 gives an
                # empty darray piece a true extent of (2**63 - 1, 1), and
                # a contiguous run of them extent 0.
                if how == 'BLOCK':
                    b = -(-g // p) + extra
                else:
                    b = 1 + extra
                if (p - 1) * b < g:
                    break
                g += 1
            gsizes[len(owned)] = g
            if how == 'BLOCK':
                owned.append([i for i in range(g) if i // b == c])
            else:
                owned.append([i for i in range(g) if (i // b) % p == c])
            distribs.append('MPI.DISTRIBUTE_' + how)
            dargs.append('MPI.DISTRIBUTE_DFLT_DARG' if dflt else str(b))
        fortran = rng.random() < 0.4
        elems, total = _placed(old, owned, gsizes, fortran)
        return self._new('{}.Create_darray({}, {}, {!r}, [{}], [{}], {!r}, '
                         'order=MPI.ORDER_{})'.format(
                             old.name, size, 'r' if size > 1 else 0, gsizes,
                             ', '.join(distribs), ', '.join(dargs), psizes,
                             'FORTRAN' if fortran else 'C'),
                         elems, 0, total * old.extent, True)

    def random_type(self, homogeneous=False):
        """A committed random derived type (over one basic type when
        ``homogeneous``) whose first four copies share no byte (every
        type may then receive: a receive into overlapping bytes is
        erroneous, its result the implementation's)."""
        for _ in range(20):
            t = self._random_type(homogeneous)
            if not t.overlaps(4):
                break
        else:
            t = self.derive(self.basic())
        self.lines.append('{}.Commit()'.format(t.name))
        return t

    def _random_type(self, homogeneous):
        rng = self.rng
        roll = rng.random()
        if roll < 0.15 and not homogeneous:
            t = self.struct()
        elif roll < 0.3:
            t = self.subarray(self.basic())
        elif roll < 0.4:
            # (no constructor on top: the model is rank 0's piece, and
            # another rank's may not fit what was fitted to it)
            return self.darray(self.basic())
        else:
            t = self.derive(self.basic())
        for _ in range(rng.choice((0, 0, 1, 2))):
            t = self.derive(t)
        return t

    def free_lines(self):
        return ['for x in [{}]:'.format(', '.join(self.made)),
                '    x.Free()'] if self.made else []



def _placed(old, picked, sizes, fortran):
    """The elements of ``old`` copies at the ``picked`` indices (one list
    per dimension) of an array of ``sizes``, and that array's element
    count: a subarray's or a darray piece's typemap."""
    elems = []
    for point in _grid(picked, fortran):
        elems += _shift(old.elems, _linear(point, sizes, fortran) *
                        old.extent)
    total = 1
    for size in sizes:
        total *= size
    return elems, total

def _grid(axes, fortran):
    """Index tuples over ``axes`` (lists), last axis fastest (C) or
    first fastest (Fortran)."""
    points = [()]
    order = range(len(axes) - 1, -1, -1) if fortran else range(len(axes))
    for d in order:
        points = [p + (i,) for p in points for i in axes[d]]
    if fortran:
        points = [tuple(reversed(p)) for p in points]
    return points


def _linear(point, sizes, fortran):
    at = 0
    dims = range(len(sizes) - 1, -1, -1) if fortran else range(len(sizes))
    for d in dims:
        at = at * sizes[d] + point[d]
    return at


def _unlinear(rank, psizes):
    coords = []
    for p in reversed(psizes):
        coords.append(rank % p)
        rank //= p
    return list(reversed(coords))


def _fits(t):
    """A type whose copies lie within [0, extent) (what mpi4py's Pack
    assumes when it counts copies by buffer length)."""
    return t.lb == 0 and t.extent > 0 and \
        min((o for o, _ in t.elems), default=0) >= 0 and \
        t.true_ub <= t.extent


_QUERIES = ('(x.Get_size(), x.Get_extent(), x.Get_true_extent(), '
            'x.Get_envelope(), x.is_named, x.is_predefined)')


def op_dtype_queries(b):
    """Sizes, extents, envelopes and contents of random types (and of a
    Dup); Pack_size / Pack_external_size."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    types = _Types(rng, 't', e.size)
    made = [types.random_type() for _ in range(rng.randint(1, 3))]
    count = rng.randint(0, 3)
    lines = list(types.lines)
    for j, t in enumerate(made):
        lines += ['x = {}'.format(t.name),
                  'rec({}, "q{}", {})'.format(k, j, _QUERIES),
                  'ints, addrs, counts, kids = x.Get_contents()',
                  'rec({}, "contents{}", (ints, addrs, counts, [(y.Get_'
                  'envelope(), y.Get_size(), y.Get_name() if y.is_named '
                  'else None) for y in kids]))'.format(k, j),
                  'for y in kids:',
                  '    if not y.is_named:',
                  '        y.Free()',
                  'rec({}, "decode{}", x.decode()[1])'.format(k, j),
                  'rec({}, "pack-size{}", x.Pack_size({}, c))'.format(
                      k, j, count),
                  'y = x.Dup()',
                  'x = y',
                  'rec({}, "dup{}", ({}, y.Get_name()))'.format(k, j,
                                                                _QUERIES),
                  'y.Free()']
        if t.bases <= set(EXTERNAL):
            lines.append('rec({}, "external-size{}", {}.Pack_external_size'
                         '("external32", {}))'.format(k, j, t.name, count))
    lines += types.free_lines()
    b.on_entity(e, 'dtype queries', lines)


def op_dtype_pack(b):
    """Pack / Unpack (and Pack_external / Unpack_external) of random
    types, one after another into one buffer."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    types = _Types(rng, 't', e.size)
    external = rng.random() < 0.4
    parts = []
    for _ in range(rng.randint(1, 3)):
        t = types.random_type()
        if external and not t.bases <= set(EXTERNAL):
            t = types.derive(types.basic(rng.choice(EXTERNAL)))
            types.lines.append('{}.Commit()'.format(t.name))
        if not _fits(t):
            t = types._new('{}.Create_resized(0, {})'.format(
                t.name, max(t.true_ub, 1)), t.elems, 0, max(t.true_ub, 1),
                True)
            types.lines.append('{}.Commit()'.format(t.name))
        parts.append((t, rng.randint(0, 3)))
    lines = list(types.lines)
    if external:
        # Open MPI packs external32 under any name; the name is taken
        # from the op's number, so the seeds' programs stay the same.
        rep = repr(('external32', 'native', '')[k % 3])
        size = '{}.Pack_external_size(' + rep + ', {})'
        pack = '{}.Pack_external(' + rep + ', {}, out, pos)'
        unpack = '{}.Unpack_external(' + rep + ', out, pos, {})'
    else:
        size = '{}.Pack_size({}, c)'
        pack = '{}.Pack({}, out, pos, c)'
        unpack = '{}.Unpack(out, pos, {}, c)'
    lines += ['room = {}'.format(' + '.join(size.format(t.name, n)
                                            for t, n in parts)),
              'out = fill("uint8", room + 3)',
              'pos = first = {}'.format(rng.choice((0, 0, 1, 3))),
              'out = fill("uint8", room + 3 + first)',
              'ins = []']
    for j, (t, n) in enumerate(parts):
        lines += ['ib = data({}, r, "uint8", {}, salt={})'.format(
                      k, '{} * {}.Get_extent()[1]'.format(n, t.name), j),
                  'ins.append(ib)',
                  'pos = ' + pack.format(t.name, 'ib'),
                  'rec({}, "pos{}", pos)'.format(k, j)]
    lines += ['rec({}, "packed", out)'.format(k), 'pos = first']
    for j, (t, n) in enumerate(parts):
        lines += ['ob = fill("uint8", {} * {}.Get_extent()[1])'.format(
                      n, t.name),
                  'pos = ' + unpack.format(t.name, 'ob'),
                  'rec({}, "unpacked{}", (pos, ob))'.format(k, j)]
    lines += types.free_lines()
    b.on_entity(e, 'dtype {} [{}]'.format(
        'Pack_external' if external else 'Pack',
        ', '.join('{} x{}'.format(len(t.elems), n) for t, n in parts)),
        lines)


def _receiver(types, send, count):
    """A receive type and count for ``count`` copies of ``send``: the
    same type, a contiguous run of its one basic type, or another
    layout of that type (with room for more than arrives, so counts may
    come out partial)."""
    rng = types.rng
    total = len(send.elems) * count
    roll = rng.random()
    if len(send.bases) == 1 and roll < 0.6:
        base = types.basic(next(iter(send.bases)))
        if roll < 0.3:
            return base, total + rng.choice((0, 0, 2))
        t = types.derive(base)
        types.lines.append('{}.Commit()'.format(t.name))
        rn = -(-total // len(t.elems)) + rng.choice((0, 0, 1))
        if not t.overlaps(rn):
            return t, rn
        return base, total
    return send, count + rng.choice((0, 0, 1))


def op_dtype_p2p(b):
    """Messages with derived types: Send/Recv (or Ssend, Isend/Irecv)
    between pairs, or a Sendrecv ring; Get_count / Get_elements of the
    receive statuses, partial receives included."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    size = e.size
    types = _Types(rng, 't')
    ring = rng.random() < 0.4
    pairs = [((i, (i + 1) % size) if ring else
              (rng.randrange(size), rng.randrange(size)))
             for i in range(size if ring else rng.randint(1, 3))]
    msgs = []
    for j, (src, dst) in enumerate(pairs):
        send = types.random_type(homogeneous=rng.random() < 0.6)
        n = rng.randint(0, 3)
        recv, rn = _receiver(types, send, n)
        msgs.append((j, src, dst, b.tag(j), send, n, recv, rn))
    lines = list(types.lines)
    branches = []
    for i in range(size):
        body = []
        if ring:
            (j, src, dst, tag, send, n, _, _), = [m for m in msgs
                                                   if m[1] == i]
            (jr, rsrc, _, rtag, _, _, recv, rn), = [m for m in msgs
                                                    if m[2] == i]
            body += ['sb = data({}, r, "uint8", {})'.format(
                         k, _span(send, n)),
                     'rb = fill("uint8", {})'.format(_span(recv, rn)),
                     'st = MPI.Status()',
                     'c.Sendrecv([sb, {}, {}], {}, {}, [rb, {}, {}], {}, {}, '
                     'status=st)'.format(n, send.name, dst, tag, rn,
                                         recv.name, rsrc, rtag),
                     'rec({}, "ring", (rb, st.Get_source(), st.Get_count('
                     '{r}), st.Get_elements({r}), st.Get_count()))'.format(
                         k, r=recv.name)]
        else:
            reqs = []
            for j, src, dst, tag, send, n, _, _ in msgs:
                if src == i:
                    body += ['sb{} = data({}, r, "uint8", {}, salt={})'.format(
                        j, k, _span(send, n), j),
                        'q{} = c.{}([sb{}, {}, {}], {}, tag={})'.format(
                            j, rng.choice(('Isend', 'Issend')), j, n,
                            send.name, dst, tag)]
                    reqs.append('q{}'.format(j))
            for j, src, dst, tag, _, _, recv, rn in msgs:
                if dst == i:
                    body += ['rb = fill("uint8", {})'.format(
                        _span(recv, rn)),
                             'st = MPI.Status()',
                             'c.Recv([rb, {}, {}], {}, tag={}, status=st)'
                             .format(rn, recv.name, src, tag),
                             'rec({}, "m{}", (rb, st.Get_count({r}), st.'
                             'Get_elements({r}), st.Get_count()))'.format(
                                 k, j, r=recv.name)]
            if reqs:
                body.append('MPI.Request.Waitall([{}])'.format(
                    ', '.join(reqs)))
        branches.append(body)
    # Every send is non-blocking and waited for after the rank's
    # receives: no pair of ranks relies on buffering.
    lines += _rank_branches(size, branches)
    lines += types.free_lines()
    b.on_entity(e, 'dtype {} [{}]'.format(
        'Sendrecv ring' if ring else 'p2p', '; '.join(
            '{}->{} {}x{} as {}x{}'.format(src, dst, len(send.elems), n,
                                           len(recv.elems), rn)
            for _, src, dst, _, send, n, recv, rn in msgs)), lines)


def _coll_type(types, rng):
    """A committed homogeneous type, its basic type's model, and the
    number of basic elements in one copy."""
    t = types.random_type(homogeneous=True)
    return t, types.basic(next(iter(t.bases))), len(t.elems)


def op_dtype_collectives(b):
    """Bcast, Gather(v) and Alltoallw with derived types on one side
    and the matching run of basic elements (or the same type) on the
    other."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    size = e.size
    types = _Types(rng, 't')
    kind = rng.choice(('Bcast', 'Gather', 'Gatherv', 'Alltoallw')
                      if size > 1 else ('Bcast', 'Gather', 'Gatherv'))
    t, base, per = _coll_type(types, rng)
    root = rng.randrange(size)
    lines = list(types.lines)
    if kind == 'Bcast':
        n = rng.randint(0, 3)
        plain = [rng.random() < 0.5 for _ in range(size)]
        lines += ['plain = {!r}[r] and r != {}'.format(plain, root),
                  'buf = fill("uint8", {})'.format(_span(t, n)),
                  'if r == {}:'.format(root),
                  '    buf[:] = data({}, r, "uint8", {})'.format(
                      k, _span(t, n)),
                  'c.Bcast([buf, {} if plain else {}, {} if plain else {}], '
                  'root={})'.format(per * n, n, base.name, t.name, root),
                  'rec({}, "bcast", buf)'.format(k)]
        title = 'Bcast {}x{} root={}'.format(per, n, root)
    elif kind.startswith('Gather'):
        ns = [rng.randint(0, 3) for _ in range(size)]
        if kind == 'Gather':
            ns = [ns[0]] * size
        counts = [per * n for n in ns]
        displs, at = [], 0
        for cnt in counts:
            at += rng.choice((0, 1))
            displs.append(at)
            at += cnt
        rb = 'rb = fill("uint8", {})'.format(at * BASIC[base.name[4:]])
        lines += ['sb = data({}, r, "uint8", fuzz_span({}, {}[r]))'.format(
                      k, t.name, ns),
                  rb if kind == 'Gatherv' else
                  'rb = fill("uint8", {})'.format(
                      sum(counts) * BASIC[base.name[4:]])]
        if kind == 'Gather':
            recv = '[rb, {}, {}]'.format(counts[0], base.name)
        else:
            recv = '[rb, ({!r}, {!r}), {}]'.format(counts, displs,
                                                   base.name)
        lines += ['c.{}([sb, {}[r], {}], {} if r == {} else None, root={})'
                  .format(kind, ns, t.name, recv, root, root),
                  'rec({}, "gather", rb)'.format(k)]
        title = '{} {}x{} root={}'.format(kind, per, ns, root)
    else:
        # Rank i sends n[i][j] copies of its type for j (each rank its
        # own layout of one basic type); j receives them as plain runs.
        others = [types.derive(base) for _ in range(size - 1)]
        for o in others:
            types.lines.append('{}.Commit()'.format(o.name))
        lines = list(types.lines)
        mine = [t] + others
        n = [[rng.randint(0, 2) for _ in range(size)] for _ in range(size)]
        item = BASIC[base.name[4:]]
        branches = []
        for i in range(size):
            st = mine[i]
            sc = n[i]
            gaps = [rng.choice((0, 2)) for _ in sc]
            rc = [n[j][i] * len(mine[j].elems) for j in range(size)]
            rd, at2 = [], 0
            for cnt in rc:
                at2 += rng.choice((0, 1)) * item
                rd.append(at2)
                at2 += cnt * item
            branches.append([
                'e = {}.Get_extent()[1]'.format(st.name),
                'sd = [e * sum({!r}[:x]) + sum({!r}[:x]) for x in range({})]'
                .format(sc, gaps, size),
                'sb = data({}, r, "uint8", max([d + fuzz_span({}, n) for d, n '
                'in zip(sd, {!r})]))'.format(k, st.name, sc),
                'rb = fill("uint8", {})'.format(at2 + item),
                'c.Alltoallw([sb, {!r}, sd, [{}] * {}], [rb, {!r}, {!r}, '
                '[{}] * {}])'.format(sc, st.name, size, rc, rd,
                                     base.name, size),
                'rec({}, "alltoallw", rb)'.format(k)])
        lines += _rank_branches(size, branches)
        title = 'Alltoallw counts={}'.format(n)
    lines += types.free_lines()
    b.on_entity(e, 'dtype ' + title, lines)


OPS = (op_dtype_queries, op_dtype_pack, op_dtype_p2p, op_dtype_collectives)
