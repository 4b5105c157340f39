"""Intercommunicators for fuzz programs: a communicator split in two
halves joined by ``Create_intercomm`` (over the parent as peer
communicator, with a tag), then point to point across, collectives in
buffer and object forms (rooted ones with ``ROOT`` / ``PROC_NULL``),
``Merge``, ``Create``, ``Split``, ``Dup`` and ``Compare`` on it.

The generator knows both halves (their members in local rank order), so
every send has its receive and every rooted call names the same root.
Reductions use integers or MAX, whose result ignores the order.
"""
from simulator.fuzz.model import UNDEFINED, per_rank

__all__ = ['OPS', 'op_intercomm']

_DTYPES = ('int8', 'int32', 'int64', 'uint16', 'float32', 'float64')


def _reduction(rng, dt):
    """(op, value kind) whose result ignores the order of the ranks
    (see runtime.data)."""
    if dt.startswith('float'):
        return 'MAX', 'cmp'
    return rng.choice((('SUM', 'any'), ('BXOR', 'any'), ('MIN', 'any')))


def _coll(rng, k, j, halves):
    """Lines of one intercommunicator collective, every rank the same
    call; ``side`` / ``lr`` / ``rs`` are set by the caller."""
    dt = rng.choice(_DTYPES)
    n = rng.randint(0, 5)
    name = rng.choice(('Barrier', 'Bcast', 'Allreduce', 'Allgather',
                       'Alltoall', 'Gather', 'Scatter', 'bcast',
                       'allgather', 'gather', 'scatter', 'alltoall',
                       'allreduce', 'p2p'))
    mine = 'data({}, W, "{}", {}, salt={})'.format(k, dt, n, j)
    label = '{}{}'.format(name, j)
    if name == 'p2p':
        return _p2p(rng, k, j, halves, dt)
    if name == 'Barrier':
        return ['ic.Barrier()', 'rec({}, "{}", 1)'.format(k, label)]
    if name == 'allreduce':
        return ['rec({}, "{}", ic.allreduce((W + 1) * {}, op=MPI.{}))'
                .format(k, label, j + 1, rng.choice(('SUM', 'MAX')))]
    if name == 'Allreduce':
        op, kind = _reduction(rng, dt)
        return ['out = fill("{}", {})'.format(dt, n),
                'ic.Allreduce(data({}, W, "{}", {}, "{}", {}), out, '
                'op=MPI.{})'.format(k, dt, n, kind, j, op),
                'rec({}, "{}", out)'.format(k, label)]
    if name == 'Allgather':
        return ['out = fill("{}", rs * {})'.format(dt, n),
                'ic.Allgather({}, out)'.format(mine),
                'rec({}, "{}", out)'.format(k, label)]
    if name == 'Alltoall':
        return ['out = fill("{}", rs * {})'.format(dt, n),
                'ic.Alltoall(data({}, W, "{}", rs * {}, salt={}), out)'
                .format(k, dt, n, j),
                'rec({}, "{}", out)'.format(k, label)]
    if name == 'allgather':
        return ['rec({}, "{}", ic.allgather((W, {})))'.format(k, label, j)]
    if name == 'alltoall':
        return ['rec({}, "{}", ic.alltoall([(W, x) for x in range(rs)]))'
                .format(k, label)]
    # Rooted: the root is local rank ri of half g.
    g = rng.randrange(2)
    ri = rng.randrange(len(halves[g]))
    lines = ['root = (MPI.ROOT if lr == {ri} else MPI.PROC_NULL) '
             'if side == {g} else {ri}'.format(g=g, ri=ri)]
    if name == 'Bcast':
        lines += ['out = {} if root == MPI.ROOT else fill("{}", {})'.format(
                      mine, dt, n),
                  'ic.Bcast(out, root=root)']
    elif name == 'Gather':
        lines += ['out = fill("{}", rs * {}) if root == MPI.ROOT else '
                  'None'.format(dt, n),
                  'ic.Gather(None if side == {} else {}, out, root=root)'
                  .format(g, mine)]
    elif name == 'Scatter':
        lines += ['out = fill("{}", {}) if side != {} else None'.format(
                      dt, n, g),
                  'send = data({}, W, "{}", rs * {}, salt={}) if root == '
                  'MPI.ROOT else None'.format(k, dt, n, j),
                  'ic.Scatter(send, out, root=root)']
    elif name == 'bcast':
        lines.append('out = ic.bcast(("from", W, {}) if root == MPI.ROOT '
                     'else None, root=root)'.format(j))
    elif name == 'gather':
        lines.append('out = ic.gather((W, {}), root=root)'.format(j))
    else:
        lines.append('out = ic.scatter([(W, x) for x in range(rs)] if '
                     'root == MPI.ROOT else None, root=root)')
    lines.append('rec({}, "{}", (root, out))'.format(k, label))
    return lines


def _p2p(rng, k, j, halves, dt):
    """Every rank sends to one rank of the other half (or no one);
    receivers name each source, in a random order."""
    sends = {}          # (side, local rank) -> remote local rank
    for side in (0, 1):
        for lr in range(len(halves[side])):
            if rng.random() < 0.8:
                sends[side, lr] = rng.randrange(len(halves[1 - side]))
    dest = [[sends.get((s, x), -1) for x in range(len(halves[s]))]
            for s in (0, 1)]
    sources = [[[x for x in range(len(halves[1 - s]))
                 if sends.get((1 - s, x)) == y]
                for y in range(len(halves[s]))] for s in (0, 1)]
    for per_side in sources:
        for srcs in per_side:
            rng.shuffle(srcs)
    n = rng.randint(0, 6)
    tag = rng.randint(0, 30)
    return [
        'd = {!r}[side][lr]'.format(dest),
        'reqs = [ic.Isend(data({}, W, "{}", {}, salt={}), d, {})] '
        'if d >= 0 else []'.format(k, dt, n, j, tag),
        'for s in {!r}[side][lr]:'.format(sources),
        '    out = fill("{}", {})'.format(dt, n),
        '    st = MPI.Status()',
        '    ic.Recv(out, s, {}, st)'.format(tag),
        '    rec({}, "p2p{}", (out, st.Get_source(), st.Get_tag()))'.format(
            k, j),
        'MPI.Request.Waitall(reqs)',
    ]


def op_intercomm(b):
    """Split a communicator in two, join the halves, use the result."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity(2)
    if e.size < 2:
        return
    size = e.size
    sides = [rng.randrange(2) for _ in range(size)]
    sides[rng.randrange(size)] = 0
    while len(set(sides)) < 2:
        sides[rng.randrange(size)] = 1
    keys = [rng.randint(0, 3) for _ in range(size)]
    # Each half's members (parent ranks) in local rank order.
    halves = [[x for _, x in sorted((keys[x], x) for x in range(size)
                                    if sides[x] == s)] for s in (0, 1)]
    leaders = [rng.randrange(len(h)) for h in halves]
    remote = [halves[1][leaders[1]], halves[0][leaders[0]]]
    tag = rng.randint(0, 99)
    lines = [
        'side = {}'.format(per_rank(sides)),
        'lc = c.Split(side, {})'.format(per_rank(keys)),
        'lr = lc.Get_rank()',
        'ic = lc.Create_intercomm({!r}[side], c, {!r}[side], {})'.format(
            leaders, remote, tag),
        'rs = ic.Get_remote_size()',
        'rg, pg = ic.Get_remote_group(), c.Get_group()',
        'rec({}, "inter", (ic.Is_inter(), ic.Get_rank(), ic.Get_size(), '
        'rs, MPI.Group.Translate_ranks(rg, list(range(rs)), pg), '
        'ic.Compare(ic)))'.format(k),
        'rg.Free()', 'pg.Free()',
    ]
    for j in range(rng.randint(1, 4)):
        lines += _coll(rng, k, j, halves)
    extra = rng.choice(('Merge', 'Dup', 'Split', 'Create', 'none'))
    if extra == 'Merge':
        high = [rng.random() < 0.5 for _ in range(2)]
        if high[0] == high[1]:
            # MPI leaves the order to the implementation when both halves
            # pass the same high: record the members, not their order.
            show = 'sorted(mc.allgather(W))'
        else:
            show = 'mc.allgather(W)'
        lines += ['mc = ic.Merge({!r}[side])'.format(high),
                  'rec({}, "merge", (mc.Get_rank() if {} else -1, '
                  'mc.Get_size(), {}))'.format(
                      k, high[0] != high[1], show),
                  'mc.Free()']
    elif extra == 'Dup':
        lines += ['dc = ic.Dup()',
                  'rec({}, "dup", (dc.Compare(ic), dc.Is_inter(), '
                  'dc.Get_remote_size(), dc.allgather(W)))'.format(k),
                  'dc.Free()']
    elif extra == 'Split':
        colors = [rng.choice((0, 1, UNDEFINED)) for _ in range(size)]
        skeys = [rng.randint(0, 2) for _ in range(size)]
        lines += _new_inter(k, 'ic.Split({}, {})'.format(
            per_rank(colors), per_rank(skeys)))
    elif extra == 'Create':
        picks = [sorted(rng.sample(range(len(h)), rng.randint(1, len(h))))
                 for h in halves]
        lines += ['lg = ic.Get_group()',
                  'sub = lg.Incl({!r}[side])'.format(picks)]
        lines += _new_inter(k, 'ic.Create(sub)')
        lines += ['sub.Free()', 'lg.Free()']
    lines += ['ic.Free()', 'lc.Free()']
    b.on_entity(e, 'intercomm sides={} keys={} leaders={} {}'.format(
        sides, keys, leaders, extra), lines)


def _new_inter(k, call):
    """Lines that make intercommunicator ``nc`` by ``call`` and use it."""
    return ['nc = {}'.format(call),
            'rec({}, "new-null", nc == MPI.COMM_NULL)'.format(k),
            'if nc != MPI.COMM_NULL:',
            '    rec({}, "new", (nc.Is_inter(), nc.Get_rank(), nc.Get_size(),'
            ' nc.Get_remote_size(), nc.allgather(W)))'.format(k),
            '    nc.Free()']


OPS = (op_intercomm,)
