"""Buffer collectives for fuzz programs (Bcast ... Reduce_scatter).

Each function appends one collective on a random communicator to a
:class:`simulator.fuzz.model.Builder`. Receive buffers start filled with a
pattern (``fill``) so that elements a collective must leave alone are
compared as well; IN_PLACE is used only where MPI allows it (at the root
for rooted collectives, on every rank otherwise).
"""
from simulator.fuzz.model import (DTYPES, pick_count, pick_reduction,
                                pick_type, per_rank, spec)


def _layout(rng, counts):
    """Displacements for blocks of ``counts``: shuffled, with gaps.
    Returns (displs, total length)."""
    order = list(range(len(counts)))
    rng.shuffle(order)
    displs = [0] * len(counts)
    at = 0
    for i in order:
        at += rng.choice((0, 0, 1, 3))
        displs[i] = at
        at += counts[i]
    return displs, at + rng.choice((0, 2))


def _vector_spec(rng, var, counts, displs, dtype, packed):
    """A vector buffer spec; ``packed`` blocks may omit displacements."""
    mpi_type = 'MPI._typedict[{}.dtype.char]'.format(var)
    form = rng.randrange(3 if packed else 2)
    if form == 0:
        return '[{}, {!r}, {!r}, {}]'.format(var, counts, displs, mpi_type)
    if form == 1:
        return '[{}, ({!r}, {!r}), {}]'.format(var, counts, displs,
                                                mpi_type)
    return '[{}, {!r}, {}]'.format(var, counts, mpi_type)


def _packed_or_gapped(rng, counts):
    if rng.random() < 0.4:
        displs = [sum(counts[:i]) for i in range(len(counts))]
        return displs, sum(counts), True
    displs, total = _layout(rng, counts)
    return displs, total, False


def op_bcast(b):
    """Bcast / Ibcast, maybe of a prefix of a longer buffer."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, n = rng.choice(DTYPES), pick_count(rng)
    root = rng.randrange(e.size)
    extra = rng.choice((0, 0, 2))
    call = rng.choice(('Bcast', 'Ibcast'))
    arg = spec(rng, 'buf', dt, n if extra else None)
    wait = '.Wait()' if call == 'Ibcast' else ''
    b.on_entity(e, '{} {} x{} root={}'.format(call, dt, n, root), [
        'buf = fill({!r}, {})'.format(dt, n + extra),
        'if r == {}:'.format(root),
        '    buf[:{}] = data({}, r, {!r}, {})'.format(n, k, dt, n),
        'c.{}({}, root={}){}'.format(call, arg, root, wait),
        'rec({}, "buf", buf)'.format(k),
    ])


def op_reduce(b):
    """Reduce, maybe IN_PLACE at the root."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    n, root = pick_count(rng), rng.randrange(e.size)
    in_place = rng.random() < 0.3
    lines = ['s = data({}, r, {!r}, {}, {!r})'.format(k, dt, n, kind),
             'out = fill({!r}, {})'.format(dt, n)]
    if in_place:
        lines += ['if r == {}:'.format(root),
                  '    out[:] = s',
                  '    c.Reduce(MPI.IN_PLACE, {}, op=MPI.{}, root={})'.format(
                      spec(rng, 'out', dt, mpi_type=t), op, root),
                  'else:',
                  '    c.Reduce({}, None, op=MPI.{}, root={})'.format(
                      spec(rng, 's', dt, mpi_type=t), op, root)]
    else:
        lines.append('c.Reduce({}, {}, op=MPI.{}, root={})'.format(
            spec(rng, 's', dt, mpi_type=t),
            spec(rng, 'out', dt, mpi_type=t), op, root))
    lines.append('rec({}, "out", out)'.format(k))
    b.on_entity(e, 'Reduce {} x{} {} root={} in_place={}'.format(
        dt, n, op, root, in_place), lines)


def op_allreduce(b):
    """Allreduce / Iallreduce, maybe IN_PLACE on every rank."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    n = pick_count(rng)
    in_place = rng.random() < 0.3
    call = rng.choice(('Allreduce', 'Allreduce', 'Iallreduce'))
    wait = '.Wait()' if call == 'Iallreduce' else ''
    lines = ['s = data({}, r, {!r}, {}, {!r})'.format(k, dt, n, kind),
             'out = fill({!r}, {})'.format(dt, n)]
    if in_place:
        lines += ['out[:] = s',
                  'c.{}(MPI.IN_PLACE, {}, op=MPI.{}){}'.format(
                      call, spec(rng, 'out', dt, mpi_type=t), op, wait)]
    else:
        lines.append('c.{}({}, {}, op=MPI.{}){}'.format(
            call, spec(rng, 's', dt, mpi_type=t),
            spec(rng, 'out', dt, mpi_type=t), op, wait))
    lines.append('rec({}, "out", out)'.format(k))
    b.on_entity(e, '{} {} x{} {} in_place={}'.format(
        call, dt, n, op, in_place), lines)


def _rooted_layout(rng, e, name, dt):
    """(vector?, counts, displs, total, buffer spec) of the root's buffer
    in a Gather(v)/Scatter(v): gapped or packed blocks of random counts
    half of the time, else equal blocks."""
    if rng.random() < 0.5:
        counts = [pick_count(rng, big=False) for _ in e.members]
        displs, total, packed = _packed_or_gapped(rng, counts)
        return True, counts, displs, total, _vector_spec(
            rng, name, counts, displs, dt, packed)
    n = pick_count(rng)
    return (False, [n] * e.size, [i * n for i in range(e.size)],
            n * e.size, spec(rng, name, dt))


def op_gather(b):
    """Gather or Gatherv (gapped, shuffled blocks), maybe IN_PLACE."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, root = rng.choice(DTYPES), rng.randrange(e.size)
    vector, counts, displs, total, recv = _rooted_layout(rng, e, 'rb', dt)
    in_place = rng.random() < 0.3
    call = 'Gatherv' if vector else 'Gather'
    lines = ['s = data({}, r, {!r}, {})'.format(k, dt, per_rank(counts)),
             'rb = fill({!r}, {})'.format(dt, total),
             'if r == {}:'.format(root)]
    if in_place:
        lines += ['    rb[{d}:{d} + s.size] = s'.format(d=displs[root]),
                  '    c.{}(MPI.IN_PLACE, {}, root={})'.format(
                      call, recv, root)]
    else:
        lines.append('    c.{}({}, {}, root={})'.format(
            call, spec(rng, 's', dt), recv, root))
    lines += ['else:',
              '    c.{}({}, None, root={})'.format(
                  call, spec(rng, 's', dt), root),
              'rec({}, "rb", rb)'.format(k)]
    b.on_entity(e, '{} {} counts={} displs={} root={} in_place={}'.format(
        call, dt, counts, displs, root, in_place), lines)


def op_scatter(b):
    """Scatter or Scatterv, maybe IN_PLACE at the root."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, root = rng.choice(DTYPES), rng.randrange(e.size)
    vector, counts, displs, total, send = _rooted_layout(rng, e, 'sb', dt)
    in_place = rng.random() < 0.3
    call = 'Scatterv' if vector else 'Scatter'
    lines = ['sb = data({}, r, {!r}, {})'.format(k, dt, total),
             'rb = fill({!r}, {})'.format(dt, per_rank(counts)),
             'if r == {}:'.format(root)]
    lines.append('    c.{}({}, {}, root={})'.format(
        call, send, 'MPI.IN_PLACE' if in_place else spec(rng, 'rb', dt),
        root))
    lines += ['else:',
              '    c.{}(None, {}, root={})'.format(call, spec(rng, 'rb', dt),
                                                   root),
              'rec({}, "rb", rb)'.format(k)]
    b.on_entity(e, '{} {} counts={} root={} in_place={}'.format(
        call, dt, counts, root, in_place), lines)


def op_allgather(b):
    """Allgather or Allgatherv (each rank its own layout), IN_PLACE."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt = rng.choice(DTYPES)
    vector = rng.random() < 0.5
    if vector:
        counts = [pick_count(rng, big=False) for _ in e.members]
    else:
        counts = [pick_count(rng)] * e.size
    layouts = [_packed_or_gapped(rng, counts) for _ in e.members]
    in_place = rng.random() < 0.3
    call = 'Allgatherv' if vector else 'Allgather'
    recvs = [_vector_spec(rng, 'rb', counts, d, dt, p) if vector
             else spec(rng, 'rb', dt) for d, _, p in layouts]
    if not vector:
        layouts = [([i * counts[0] for i in range(e.size)],
                    counts[0] * e.size, True)] * e.size
    lines = ['s = data({}, r, {!r}, {})'.format(k, dt, per_rank(counts)),
             'rb = fill({!r}, {})'.format(
                 dt, per_rank([t for _, t, _ in layouts]))]
    for i, recv in enumerate(recvs):
        lines.append('{} r == {}:'.format('if' if i == 0 else 'elif', i))
        if in_place:
            lines += ['    rb[{d}:{d} + s.size] = s'.format(
                d=layouts[i][0][i]),
                '    c.{}(MPI.IN_PLACE, {})'.format(call, recv)]
        else:
            lines.append('    c.{}({}, {})'.format(
                call, spec(rng, 's', dt), recv))
    lines.append('rec({}, "rb", rb)'.format(k))
    b.on_entity(e, '{} {} counts={} in_place={}'.format(
        call, dt, counts, in_place), lines)


def op_alltoall(b):
    """Alltoall (maybe IN_PLACE) or Alltoallv with a random matrix."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, size = rng.choice(DTYPES), e.size
    if rng.random() < 0.5:
        n = pick_count(rng, big=False)
        in_place = rng.random() < 0.3
        lines = ['s = data({}, r, {!r}, {})'.format(k, dt, n * size),
                 'rb = fill({!r}, {})'.format(dt, n * size)]
        if in_place:
            lines += ['rb[:] = s', 'c.Alltoall(MPI.IN_PLACE, {})'.format(
                spec(rng, 'rb', dt))]
        else:
            lines.append('c.Alltoall({}, {})'.format(spec(rng, 's', dt),
                                                     spec(rng, 'rb', dt)))
        lines.append('rec({}, "rb", rb)'.format(k))
        b.on_entity(e, 'Alltoall {} x{} in_place={}'.format(
            dt, n, in_place), lines)
        return
    matrix = [[pick_count(rng, big=False) for _ in range(size)]
              for _ in range(size)]
    # Alltoallw (byte displacements, a datatype per block) not on one
    # rank: Open MPI 5 scales its displacements by the type size there.
    w = size > 1 and rng.random() < 0.4
    in_place = rng.random() < 0.25
    if in_place:
        in_place_matrix(matrix)
    lines = []
    for i in range(size):
        sendcounts = matrix[i]
        recvcounts = [matrix[j][i] for j in range(size)]
        sd, stotal, spacked = _packed_or_gapped(rng, sendcounts)
        rd, rtotal, rpacked = _packed_or_gapped(rng, recvcounts)
        lines += ['{} r == {}:'.format('if' if i == 0 else 'elif', i),
                  '    s = data({}, r, {!r}, {})'.format(k, dt, stotal),
                  '    rb = {}'.format(
                      'data({}, r, {!r}, {}, salt=1)'.format(k, dt, rtotal)
                      if in_place else 'fill({!r}, {})'.format(dt, rtotal))]
        if w:
            send = 'MPI.IN_PLACE' if in_place else \
                '[s, {!r}, [d * s.itemsize for d in {!r}], [t] * {}]'.format(
                    sendcounts, sd, size)
            lines += ['    t = MPI._typedict[s.dtype.char]',
                      '    c.Alltoallw({}, [rb, {!r}, [d * rb.itemsize for d '
                      'in {!r}], [t] * {}])'.format(
                          send, recvcounts, rd, size)]
        else:
            lines.append('    c.Alltoallv({}, {})'.format(
                'MPI.IN_PLACE' if in_place else _vector_spec(
                    rng, 's', sendcounts, sd, dt, spacked),
                _vector_spec(rng, 'rb', recvcounts, rd, dt, rpacked)))
    lines.append('rec({}, "rb", rb)'.format(k))
    b.on_entity(e, '{} {} matrix={} in_place={}'.format(
        'Alltoallw' if w else 'Alltoallv', dt, matrix, in_place), lines)


def in_place_matrix(matrix):
    """Make an Alltoallv/w count matrix fit IN_PLACE: symmetric (a
    rank's receive layout is its send layout), and every rank with a
    non-empty block of its own (Open MPI 5's in-place Alltoallw hangs
    when all of a rank's blocks are empty)."""
    for i, row in enumerate(matrix):
        for j in range(i):
            row[j] = matrix[j][i]
        row[i] = max(row[i], 1)


def op_reduce_scatter(b):
    """Reduce_scatter_block or Reduce_scatter, maybe IN_PLACE."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    size = e.size
    block = rng.random() < 0.5
    counts = [pick_count(rng, big=False)] * size if block else \
        [pick_count(rng, big=False) for _ in range(size)]
    total = sum(counts)
    in_place = rng.random() < 0.3
    lines = ['s = data({}, r, {!r}, {}, {!r})'.format(k, dt, total, kind)]
    if in_place:
        # Beyond this rank's block the buffer is MPI's scratch space.
        lines += ['rb = s.copy()', 'mine = {}'.format(per_rank(counts))]
        args = 'MPI.IN_PLACE, {}'.format(spec(rng, 'rb', dt, mpi_type=t))
    else:
        # mpi4py wants a receive buffer of exactly this rank's count.
        lines.append('rb = fill({!r}, {})'.format(dt, per_rank(counts)))
        lines.append('mine = rb.size')
        args = '{}, {}'.format(spec(rng, 's', dt, mpi_type=t),
                               spec(rng, 'rb', dt, mpi_type=t))
    if block:
        lines.append('c.Reduce_scatter_block({}, op=MPI.{})'.format(
            args, op))
    else:
        lines.append('c.Reduce_scatter({}, {!r}, op=MPI.{})'.format(
            args, counts, op))
    lines.append('rec({}, "rb", rb[:mine])'.format(k))
    b.on_entity(e, '{} {} counts={} {} in_place={}'.format(
        'Reduce_scatter_block' if block else 'Reduce_scatter', dt, counts,
        op, in_place), lines)


def op_scan(b):
    """Scan or Exscan of buffers, maybe IN_PLACE on every rank."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt, op, kind = pick_reduction(rng)
    t = pick_type(rng, dt)
    n = pick_count(rng)
    call = rng.choice(('Scan', 'Exscan'))
    in_place = rng.random() < 0.3
    lines = ['s = data({}, r, {!r}, {}, {!r})'.format(k, dt, n, kind),
             'out = fill({!r}, {})'.format(dt, n)]
    if in_place:
        lines += ['out[:] = s', 'c.{}(MPI.IN_PLACE, {}, op=MPI.{})'.format(
            call, spec(rng, 'out', dt, mpi_type=t), op)]
    else:
        lines.append('c.{}({}, {}, op=MPI.{})'.format(
            call, spec(rng, 's', dt, mpi_type=t),
            spec(rng, 'out', dt, mpi_type=t), op))
    lines.append('rec({}, "out", out)'.format(k))
    b.on_entity(e, '{} {} x{} {} in_place={}'.format(
        call, dt, n, op, in_place), lines)


def op_barrier(b):
    """Barrier or Ibarrier."""
    e = b.pick_entity()
    call = b.rng.choice(('Barrier()', 'Ibarrier().Wait()', 'barrier()'))
    b.on_entity(e, call, ['c.{}'.format(call),
                          'rec({}, "passed", True)'.format(b.op_id)])


OPS = (op_bcast, op_reduce, op_allreduce, op_gather, op_scatter,
       op_allgather, op_alltoall, op_reduce_scatter, op_scan, op_barrier)
