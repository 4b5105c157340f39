"""Non-blocking collectives for fuzz programs (Ibcast ... Ialltoallw).

One operation starts a few non-blocking collectives on one communicator
(every rank in the same order, as MPI requires) and completes them in an
order of each rank's own: Waitall, one Wait each in a shuffled order,
Waitany, Testall or Test loops. MPI lets each rank complete its requests
in any order, so a rank may finish collective B before a peer has
finished A; between start and completion a token may also travel from a
rank that completes everything first to one that waits for it before
completing (Open MPI progresses the collectives inside that receive).
Send buffers are left untouched until completion, as MPI requires.
"""
from simulator.fuzz.coll import (_packed_or_gapped, _vector_spec,
                                 in_place_matrix)
from simulator.fuzz.model import (DTYPES, per_rank, pick_count,
                                  pick_reduction, pick_type, spec)

__all__ = ['KINDS', 'OPS', 'op_icollectives', 'op_icollectives_two_comms']

_SIZES = {'int8': 1, 'int16': 2, 'int32': 4, 'int64': 8, 'uint8': 1,
          'uint16': 2, 'uint32': 4, 'uint64': 8, 'float16': 2,
          'float32': 4, 'float64': 8, 'complex64': 8, 'complex128': 16,
          'bool': 1}


def _rank_branches(size, per_rank_lines):
    """``if r == 0: ... elif r == 1: ...`` from one list of lines per
    comm rank."""
    out = []
    for i, body in enumerate(per_rank_lines):
        out.append('{} r == {}:'.format('if' if i == 0 else 'elif', i))
        out += ['    ' + line for line in (body or ['pass'])]
    return out


class _Coll:
    """One non-blocking collective of an operation: its setup and start
    lines (run in order on every rank), and what is recorded once its
    request is complete."""

    def __init__(self, title, lines, records):
        self.title = title
        self.lines = lines
        self.records = records


def _ibcast(rng, k, j, e):
    dt, n = rng.choice(DTYPES), pick_count(rng)
    root = rng.randrange(e.size)
    extra = rng.choice((0, 0, 2))
    b = 'b{}'.format(j)
    return _Coll('Ibcast {} x{} root={}'.format(dt, n, root), [
        '{} = fill({!r}, {})'.format(b, dt, n + extra),
        'if r == {}:'.format(root),
        '    {}[:{}] = data({}, r, {!r}, {}, salt={})'.format(
            b, n, k, dt, n, j),
        'q.append(c.Ibcast({}, root={}))'.format(
            spec(rng, b, dt, n if extra else None), root)], [b])


def _rooted(rng, e, name, dt):
    if rng.random() < 0.5:
        counts = [pick_count(rng, big=False) for _ in e.members]
        displs, total, packed = _packed_or_gapped(rng, counts)
        return True, counts, displs, total, _vector_spec(
            rng, name, counts, displs, dt, packed)
    n = pick_count(rng)
    return (False, [n] * e.size, [i * n for i in range(e.size)],
            n * e.size, spec(rng, name, dt))


def _igather(rng, k, j, e):
    dt, root = rng.choice(DTYPES), rng.randrange(e.size)
    s, rb = 's{}'.format(j), 'rb{}'.format(j)
    vector, counts, displs, total, recv = _rooted(rng, e, rb, dt)
    in_place = rng.random() < 0.3
    call = 'Igatherv' if vector else 'Igather'
    lines = ['{} = data({}, r, {!r}, {}, salt={})'.format(
                 s, k, dt, per_rank(counts), j),
             '{} = fill({!r}, {})'.format(rb, dt, total),
             'if r == {}:'.format(root)]
    if in_place:
        lines += ['    {rb}[{d}:{d} + {s}.size] = {s}'.format(
                      rb=rb, s=s, d=displs[root]),
                  '    q.append(c.{}(MPI.IN_PLACE, {}, root={}))'.format(
                      call, recv, root)]
    else:
        lines.append('    q.append(c.{}({}, {}, root={}))'.format(
            call, spec(rng, s, dt), recv, root))
    lines += ['else:', '    q.append(c.{}({}, None, root={}))'.format(
        call, spec(rng, s, dt), root)]
    return _Coll('{} {} counts={} root={} in_place={}'.format(
        call, dt, counts, root, in_place), lines, [rb])


def _iscatter(rng, k, j, e):
    dt, root = rng.choice(DTYPES), rng.randrange(e.size)
    sb, rb = 'sb{}'.format(j), 'rb{}'.format(j)
    vector, counts, displs, total, send = _rooted(rng, e, sb, dt)
    in_place = rng.random() < 0.3
    call = 'Iscatterv' if vector else 'Iscatter'
    lines = ['{} = data({}, r, {!r}, {}, salt={})'.format(
                 sb, k, dt, total, j),
             '{} = fill({!r}, {})'.format(rb, dt, per_rank(counts)),
             'if r == {}:'.format(root),
             '    q.append(c.{}({}, {}, root={}))'.format(
                 call, send, 'MPI.IN_PLACE' if in_place else
                 spec(rng, rb, dt), root),
             'else:',
             '    q.append(c.{}(None, {}, root={}))'.format(
                 call, spec(rng, rb, dt), root)]
    return _Coll('{} {} counts={} root={} in_place={}'.format(
        call, dt, counts, root, in_place), lines, [rb])


def _iallgather(rng, k, j, e):
    dt = rng.choice(DTYPES)
    s, rb = 's{}'.format(j), 'rb{}'.format(j)
    vector = rng.random() < 0.5
    counts = [pick_count(rng, big=False) for _ in e.members] if vector \
        else [pick_count(rng)] * e.size
    if vector:
        layouts = [_packed_or_gapped(rng, counts) for _ in e.members]
        recvs = [_vector_spec(rng, rb, counts, d, dt, p)
                 for d, _, p in layouts]
    else:
        layouts = [([i * counts[0] for i in range(e.size)],
                    counts[0] * e.size, True)] * e.size
        recvs = [spec(rng, rb, dt) for _ in e.members]
    in_place = rng.random() < 0.3
    call = 'Iallgatherv' if vector else 'Iallgather'
    lines = ['{} = data({}, r, {!r}, {}, salt={})'.format(
                 s, k, dt, per_rank(counts), j),
             '{} = fill({!r}, {})'.format(
                 rb, dt, per_rank([t for _, t, _ in layouts]))]
    branches = []
    for i, recv in enumerate(recvs):
        if in_place:
            branches.append(['{rb}[{d}:{d} + {s}.size] = {s}'.format(
                rb=rb, s=s, d=layouts[i][0][i]),
                'q.append(c.{}(MPI.IN_PLACE, {}))'.format(call, recv)])
        else:
            branches.append(['q.append(c.{}({}, {}))'.format(
                call, spec(rng, s, dt), recv)])
    return _Coll('{} {} counts={} in_place={}'.format(
        call, dt, counts, in_place), lines + _rank_branches(e.size, branches),
        [rb])


def _ialltoall(rng, k, j, e):
    dt, size = rng.choice(DTYPES), e.size
    s, rb = 's{}'.format(j), 'rb{}'.format(j)
    if rng.random() < 0.4:
        n = pick_count(rng, big=False)
        in_place = rng.random() < 0.3
        lines = ['{} = data({}, r, {!r}, {}, salt={})'.format(
                     s, k, dt, n * size, j),
                 '{} = fill({!r}, {})'.format(rb, dt, n * size)]
        if in_place:
            lines += ['{}[:] = {}'.format(rb, s),
                      'q.append(c.Ialltoall(MPI.IN_PLACE, {}))'.format(
                          spec(rng, rb, dt))]
        else:
            lines.append('q.append(c.Ialltoall({}, {}))'.format(
                spec(rng, s, dt), spec(rng, rb, dt)))
        return _Coll('Ialltoall {} x{} in_place={}'.format(
            dt, n, in_place), lines, [rb])
    matrix = [[pick_count(rng, big=False) for _ in range(size)]
              for _ in range(size)]
    # Not on one rank: Open MPI 5 scales Alltoallw's byte displacements
    # by the type size there (a bug in its self component).
    w = size > 1 and rng.random() < 0.4
    in_place = rng.random() < 0.25
    if in_place:
        in_place_matrix(matrix)
    branches = []
    for i in range(size):
        sendcounts = matrix[i]
        recvcounts = [matrix[x][i] for x in range(size)]
        sd, stotal, spacked = _packed_or_gapped(rng, sendcounts)
        rd, rtotal, rpacked = _packed_or_gapped(rng, recvcounts)
        body = ['{} = data({}, r, {!r}, {}, salt={})'.format(
                    s, k, dt, stotal, j),
                '{} = {}'.format(rb, 'data({}, r, {!r}, {}, salt={})'.format(
                    k, dt, rtotal, j + 50) if in_place else
                    'fill({!r}, {})'.format(dt, rtotal))]
        if w:
            # Alltoallw: byte displacements, one datatype per block.
            size_of = _SIZES[dt]
            t = 'MPI._typedict[{}.dtype.char]'.format(s)
            send = 'MPI.IN_PLACE' if in_place else \
                '[{}, {!r}, {!r}, [{}] * {}]'.format(
                    s, sendcounts, [d * size_of for d in sd], t, size)
            body.append('q.append(c.Ialltoallw({}, [{}, {!r}, {!r}, '
                        '[{}] * {}]))'.format(
                            send, rb, recvcounts,
                            [d * size_of for d in rd], t, size))
        else:
            body.append('q.append(c.Ialltoallv({}, {}))'.format(
                'MPI.IN_PLACE' if in_place else _vector_spec(
                    rng, s, sendcounts, sd, dt, spacked),
                _vector_spec(rng, rb, recvcounts, rd, dt, rpacked)))
        branches.append(body)
    return _Coll('{} {} matrix={} in_place={}'.format(
        'Ialltoallw' if w else 'Ialltoallv', dt, matrix, in_place),
        _rank_branches(size, branches), [rb])


def _ireduce(rng, k, j, e):
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    n, root = pick_count(rng), rng.randrange(e.size)
    s, out = 's{}'.format(j), 'o{}'.format(j)
    call = rng.choice(('Ireduce', 'Iallreduce', 'Iscan', 'Iexscan'))
    in_place = rng.random() < 0.3
    lines = ['{} = data({}, r, {!r}, {}, {!r}, salt={})'.format(
                 s, k, dt, n, kind, j),
             '{} = fill({!r}, {})'.format(out, dt, n)]
    rooted = call == 'Ireduce'
    where = ', root={}'.format(root) if rooted else ''
    if in_place:
        start = 'q.append(c.{}(MPI.IN_PLACE, {}, op=MPI.{}{}))'.format(
            call, spec(rng, out, dt, mpi_type=t), op, where)
        if rooted:
            lines += ['if r == {}:'.format(root),
                      '    {}[:] = {}'.format(out, s),
                      '    ' + start,
                      'else:',
                      '    q.append(c.Ireduce({}, None, op=MPI.{}, '
                      'root={}))'.format(spec(rng, s, dt, mpi_type=t), op,
                                         root)]
        else:
            lines += ['{}[:] = {}'.format(out, s), start]
    else:
        lines.append('q.append(c.{}({}, {}, op=MPI.{}{}))'.format(
            call, spec(rng, s, dt, mpi_type=t),
            spec(rng, out, dt, mpi_type=t), op, where))
    records = [out]
    if call == 'Iexscan':
        # Rank 0's Exscan output is undefined.
        records = ['{} if r else None'.format(out)]
    return _Coll('{} {} x{} {}{} in_place={}'.format(
        call, dt, n, op, ' root={}'.format(root) if rooted else '',
        in_place), lines, records)


def _ireduce_scatter(rng, k, j, e):
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    size = e.size
    block = rng.random() < 0.5
    counts = [pick_count(rng, big=False)] * size if block else \
        [pick_count(rng, big=False) for _ in range(size)]
    s, rb = 's{}'.format(j), 'rb{}'.format(j)
    in_place = rng.random() < 0.3
    lines = ['{} = data({}, r, {!r}, {}, {!r}, salt={})'.format(
        s, k, dt, sum(counts), kind, j)]
    if in_place:
        lines.append('{} = {}.copy()'.format(rb, s))
        args = 'MPI.IN_PLACE, {}'.format(spec(rng, rb, dt, mpi_type=t))
    else:
        lines.append('{} = fill({!r}, {})'.format(rb, dt, per_rank(counts)))
        args = '{}, {}'.format(spec(rng, s, dt, mpi_type=t),
                               spec(rng, rb, dt, mpi_type=t))
    if block:
        lines.append('q.append(c.Ireduce_scatter_block({}, op=MPI.{}))'
                     .format(args, op))
    else:
        lines.append('q.append(c.Ireduce_scatter({}, {!r}, op=MPI.{}))'
                     .format(args, counts, op))
    # Beyond this rank's block an IN_PLACE buffer is MPI's scratch space.
    return _Coll('{} {} counts={} {} in_place={}'.format(
        'Ireduce_scatter_block' if block else 'Ireduce_scatter', dt, counts,
        op, in_place), lines,
        ['{}[:{}]'.format(rb, per_rank(counts))])


def _ibarrier(rng, k, j, e):
    return _Coll('Ibarrier', ['q.append(c.Ibarrier())'], [])


KINDS = ((_ibcast, 2), (_igather, 2), (_iscatter, 2), (_iallgather, 2),
          (_ialltoall, 2), (_ireduce, 3), (_ireduce_scatter, 2),
          (_ibarrier, 1))


def _completion(rng, n):
    """Lines completing requests ``q`` (``n`` of them) one way."""
    how = rng.choice(('Waitall', 'each', 'waitany', 'testall', 'test-each',
                      'waitsome'))
    if how == 'Waitall':
        return how, ['MPI.Request.Waitall(q)']
    if how == 'each':
        order = list(range(n))
        rng.shuffle(order)
        return '{} {}'.format(how, order), [
            'for i in {!r}:'.format(order), '    q[i].Wait()']
    if how == 'waitany':
        return how, ['for _ in range({}):'.format(n),
                     '    i = MPI.Request.Waitany(q)',
                     '    assert i != MPI.UNDEFINED']
    if how == 'testall':
        return how, ['while not MPI.Request.Testall(q):', '    pass']
    if how == 'waitsome':
        return how, ['left = {}'.format(n),
                     'while left:',
                     '    done = MPI.Request.Waitsome(q)',
                     '    left -= len(done)']
    order = list(range(n))
    rng.shuffle(order)
    return '{} {}'.format(how, order), [
        'todo = {!r}'.format(order),
        'while todo:',
        '    todo = [i for i in todo if not q[i].Test()]']


def op_icollectives(b):
    """A few non-blocking collectives started in one order and completed
    in each rank's own order, maybe with a token passed meanwhile."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    kinds, weights = zip(*KINDS)
    colls = [rng.choices(kinds, weights)[0](rng, k, j, e)
             for j in range(rng.randint(1, 4))]
    lines = ['q = []']
    for one in colls:
        lines += one.lines
    per_rank_done = []
    titles = []
    for _ in range(e.size):
        how, done = _completion(rng, len(colls))
        titles.append(how)
        per_rank_done.append(done)
    token = None
    if e.size > 1 and rng.random() < 0.4:
        first = rng.randrange(e.size)
        second = rng.choice([x for x in range(e.size) if x != first])
        token = (first, second)
        tag = b.tag(0)
        # ``first`` completes everything, then sends; ``second`` waits
        # for the token before completing its own requests.
        per_rank_done[first] = per_rank_done[first] + [
            'c.Ssend([np.arange(3, dtype="i4"), MPI.INT], {}, tag={})'.format(
                second, tag)]
        per_rank_done[second] = [
            'tok = np.zeros(3, dtype="i4")',
            'c.Recv([tok, MPI.INT], {}, tag={})'.format(first, tag),
            'rec({}, "token", tok)'.format(k)] + per_rank_done[second]
    lines += _rank_branches(e.size, per_rank_done)
    for j, one in enumerate(colls):
        for n, what in enumerate(one.records):
            lines.append('rec({}, "c{}.{}", {})'.format(k, j, n, what))
    b.on_entity(e, 'icollectives [{}] completion={}{}'.format(
        '; '.join(c.title for c in colls), titles,
        ' token {}->{}'.format(*token) if token else ''), lines)


def op_icollectives_two_comms(b):
    """Non-blocking collectives on two communicators, started in an
    order of each rank's own (MPI orders collectives per communicator
    only) and completed in another."""
    rng, k = b.rng, b.op_id
    first = b.pick_entity()
    second = b.pick_entity()
    if first.var == second.var:
        return op_icollectives(b)
    kinds, weights = zip(*KINDS)
    plans = []
    for n, e in enumerate((first, second)):
        colls = [rng.choices(kinds, weights)[0](rng, k, 10 * n + j, e)
                 for j in range(rng.randint(1, 2))]
        plans.append((e, colls))
    world = sorted(set(first.members) | set(second.members))
    lines = []
    for i, w in enumerate(world):
        mine = [(n, e, colls) for n, (e, colls) in enumerate(plans)
                if w in e.members]
        rng.shuffle(mine)
        body = ['q0, q1 = [], []']
        for n, e, colls in mine:
            body += ['c = {}'.format(e.var), 'r = c.Get_rank()',
                     'q = q{}'.format(n)]
            for one in colls:
                body += one.lines
        order = [(n, j) for n, e, colls in mine for j in range(len(colls))]
        rng.shuffle(order)
        body += ['for n, j in {!r}:'.format(order),
                 '    (q0, q1)[n][j].Wait()']
        for n, e, colls in sorted(mine, key=lambda m: m[0]):
            body += ['r = {}.Get_rank()'.format(e.var)]
            for j, one in enumerate(colls):
                for x, what in enumerate(one.records):
                    body.append('rec({}, "comm{}.c{}.{}", {})'.format(
                        k, n, j, x, what))
        lines.append('{} W == {}:'.format('if' if i == 0 else 'elif', w))
        lines += ['    ' + line for line in body]
    b.emit('icollectives on two communicators: {} on {} {}; {} on {} '
           '{}'.format('; '.join(c.title for c in plans[0][1]), first.var,
                       list(first.members),
                       '; '.join(c.title for c in plans[1][1]), second.var,
                       list(second.members)), world, lines)


OPS = (op_icollectives, op_icollectives_two_comms)
