"""Persistent requests for fuzz programs: point to point and
collectives.

Each rank sets up ``Send_init`` / ``Ssend_init`` / ``Recv_init``
requests for its messages once, then runs a few rounds: fill the send
buffers (legal while the requests are inactive), ``Start`` or
``Startall``, complete them, record what arrived; finally ``Free``.
Every message has its own tag and a named source, so matching is
deterministic; a receive may still give a buffer longer than the
message. Persistent collectives (``Allreduce_init`` ...) are started in
one order on every rank, as MPI requires, and completed in each rank's
own order.
"""
import re

from simulator.fuzz import icoll
from simulator.fuzz.model import (DTYPES, pick_count, pick_reduction,
                                  pick_type, spec)

__all__ = ['OPS', 'op_persistent', 'op_persistent_collectives',
           'op_persistent_like_nonblocking']


def op_persistent(b):
    """Persistent sends and receives, restarted over a few rounds."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    msgs = []
    for j in range(rng.randint(1, 5)):
        src, dst = rng.randrange(e.size), rng.randrange(e.size)
        dt = rng.choice(DTYPES)
        n = pick_count(rng)
        msgs.append((j, src, dst, b.tag(j), dt, n, n + rng.choice((0, 0, 3))))
    rounds = rng.randint(1, 3)
    branches = []
    for i in range(e.size):
        mine = [m for m in msgs if i in (m[1], m[2])]
        if not mine:
            continue
        rng.shuffle(mine)
        body = ['reqs, bufs = [], []']
        for j, src, dst, tag, dt, n, cap in mine:
            if src == i:
                body += ['sb{} = np.zeros({}, {!r})'.format(j, n, dt),
                         'reqs.append(c.{}({}, {}, tag={}))'.format(
                             rng.choice(('Send_init', 'Send_init',
                                         'Ssend_init')),
                             spec(rng, 'sb{}'.format(j), dt), dst, tag),
                         'bufs.append(None)']
            if dst == i:
                body += ['rb{} = fill({!r}, {})'.format(j, dt, cap),
                         'reqs.append(c.Recv_init({}, source={}, '
                         'tag={}))'.format(spec(rng, 'rb{}'.format(j), dt),
                                           src, tag),
                         'bufs.append(rb{})'.format(j)]
        body += ['for rnd in range({}):'.format(rounds)]
        for j, src, _, _, dt, n, _ in mine:
            if src == i:
                body.append('    sb{}[:] = data({}, r, {!r}, {}, salt={} + '
                            '10 * rnd)'.format(j, k, dt, n, j))
        how = rng.choice(('Startall', 'Start', 'Start-reversed'))
        if how == 'Startall':
            body.append('    MPI.Prequest.Startall(reqs)')
        else:
            order = '' if how == 'Start' else '[::-1]'
            body += ['    for q in reqs{}:'.format(order), '        q.Start()']
        body += ['    sts = [MPI.Status() for _ in reqs]',
                 '    MPI.Request.Waitall(reqs, sts)',
                 '    for b_, st in zip(bufs, sts):',
                 '        if b_ is not None:',
                 '            rec({}, "recv", b_)'.format(k),
                 '            rec_status({}, "status", st, '
                 'MPI._typedict[b_.dtype.char])'.format(k),
                 'rec({}, "active", [bool(q) for q in reqs])'.format(k),
                 'for q in reqs:',
                 '    q.Free()',
                 'rec({}, "freed", [q == MPI.REQUEST_NULL for q in '
                 'reqs])'.format(k)]
        branches.append((i, body))
    lines = []
    for n, (i, body) in enumerate(branches):
        lines.append('{} r == {}:'.format('if' if n == 0 else 'elif', i))
        lines += ['    ' + line for line in body]
    b.on_entity(e, 'persistent {} rounds={}'.format('; '.join(
        '{}->{} tag={} {} x{}'.format(src, dst, tag, dt, n)
        for _, src, dst, tag, dt, n, _ in msgs), rounds), lines)


def _pcoll(rng, k, j, e):
    """(init lines, refill lines, record expressions, title) of one
    persistent collective."""
    s, o = 's{}'.format(j), 'o{}'.format(j)
    q = 'p{}'.format(j)
    size = e.size
    kind = rng.choice(('reduce', 'reduce', 'Bcast', 'Allgather', 'Gather',
                       'Scatter', 'Alltoall', 'Barrier'))
    if kind == 'reduce':
        dt, op, values = pick_reduction(rng)
        t = pick_type(rng, dt)
        call = rng.choice(('Allreduce', 'Reduce', 'Scan', 'Exscan',
                           'Reduce_scatter_block'))
        n = pick_count(rng, big=False)
        root = rng.randrange(size)
        total = n * size if call == 'Reduce_scatter_block' else n
        args = '{}, {}, op=MPI.{}'.format(spec(rng, s, dt, mpi_type=t),
                                          spec(rng, o, dt, mpi_type=t), op)
        if call == 'Reduce':
            args += ', root={}'.format(root)
        init = ['{} = np.zeros({}, {!r})'.format(s, total, dt),
                '{} = fill({!r}, {})'.format(o, dt, n),
                '{} = c.{}_init({})'.format(q, call, args)]
        refill = ['{}[:] = data({}, r, {!r}, {}, {!r}, salt={} + 10 * '
                  'rnd)'.format(s, k, dt, total, values, j)]
        record = o
        if call == 'Exscan':
            record = '{} if r else None'.format(o)
        elif call == 'Reduce':
            record = '{} if r == {} else None'.format(o, root)
        return init, refill, record, '{}_init {} x{} {}{}'.format(
            call, dt, n, op, ' root={}'.format(root)
            if call == 'Reduce' else '')
    if kind == 'Barrier':
        return (['{} = c.Barrier_init()'.format(q)], [], 'None',
                'Barrier_init')
    dt = rng.choice(DTYPES)
    n = pick_count(rng, big=False)
    root = rng.randrange(size)
    if kind == 'Bcast':
        init = ['{} = fill({!r}, {})'.format(o, dt, n),
                '{} = c.Bcast_init({}, root={})'.format(
                    q, spec(rng, o, dt), root)]
        refill = ['if r == {}:'.format(root),
                  '    {}[:] = data({}, r, {!r}, {}, salt={} + 10 * rnd)'
                  .format(o, k, dt, n, j)]
        return init, refill, o, 'Bcast_init {} x{} root={}'.format(
            dt, n, root)
    send_n = n * size if kind in ('Scatter', 'Alltoall') else n
    recv_n = n if kind == 'Scatter' else n * size
    rooted = kind in ('Gather', 'Scatter')
    init = ['{} = np.zeros({}, {!r})'.format(s, send_n, dt),
            '{} = fill({!r}, {})'.format(o, dt, recv_n)]
    where = ', root={}'.format(root) if rooted else ''
    init.append('{} = c.{}_init({}, {}{})'.format(
        q, kind, spec(rng, s, dt), spec(rng, o, dt), where))
    refill = ['{}[:] = data({}, r, {!r}, {}, salt={} + 10 * rnd)'.format(
        s, k, dt, send_n, j)]
    record = '{} if r == {} else None'.format(o, root) \
        if kind == 'Gather' else o
    return init, refill, record, '{}_init {} x{}{}'.format(kind, dt, n,
                                                            where)


def op_persistent_collectives(b):
    """A few persistent collectives, restarted over rounds."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    parts = [_pcoll(rng, k, j, e) for j in range(rng.randint(1, 3))]
    rounds = rng.randint(1, 3)
    names = ['p{}'.format(j) for j in range(len(parts))]
    lines = []
    for init, _, _, _ in parts:
        lines += init
    lines.append('q = [{}]'.format(', '.join(names)))
    lines.append('for rnd in range({}):'.format(rounds))
    for _, refill, _, _ in parts:
        lines += ['    ' + line for line in refill]
    if rng.random() < 0.5:
        lines.append('    MPI.Prequest.Startall(q)')
    else:
        lines += ['    for x in q:', '        x.Start()']
    finish = []
    for _ in e.members:
        order = list(range(len(parts)))
        rng.shuffle(order)
        finish.append(order)
    lines += ['    for i in {}[r]:'.format(finish), '        q[i].Wait()']
    for j, (_, _, record, _) in enumerate(parts):
        lines.append('    rec({}, "p{}", {})'.format(k, j, record))
    lines += ['for x in q:', '    x.Free()',
              'rec({}, "freed", [x == MPI.REQUEST_NULL for x in q])'.format(
                  k)]
    b.on_entity(e, 'persistent collectives [{}] rounds={}'.format(
        '; '.join(p[3] for p in parts), rounds), lines)


def _as_persistent(line):
    """``q.append(c.Igatherv(...))`` -> ``q.append(c.Gatherv_init(...))``."""
    return re.sub(r'c\.I(\w)(\w*)\(',
                  lambda m: 'c.{}{}_init('.format(m.group(1).upper(),
                                                  m.group(2)), line)


def op_persistent_like_nonblocking(b):
    """The non-blocking family's collectives (vector layouts, IN_PLACE,
    Alltoallw...) as persistent requests, started for a round or two."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    kinds, weights = zip(*icoll.KINDS)
    colls = [rng.choices(kinds, weights)[0](rng, k, j, e)
             for j in range(rng.randint(1, 3))]
    rounds = rng.randint(1, 2)
    lines = ['q = []']
    for one in colls:
        lines += [_as_persistent(line) for line in one.lines]
    lines.append('for rnd in range({}):'.format(rounds))
    lines.append('    MPI.Prequest.Startall(q)' if rng.random() < 0.5 else
                 '    for x in q:\n        x.Start()')
    order = [list(range(len(colls))) for _ in e.members]
    for o in order:
        rng.shuffle(o)
    lines += ['    for i in {}[r]:'.format(order), '        q[i].Wait()']
    for j, one in enumerate(colls):
        for x, what in enumerate(one.records):
            lines.append('    rec({}, "c{}.{}", {})'.format(k, j, x, what))
    lines += ['for x in q:', '    x.Free()']
    b.on_entity(e, 'persistent like non-blocking [{}] rounds={}'.format(
        '; '.join(_as_persistent(c.title) for c in colls), rounds),
        '\n'.join(lines).split('\n'))


OPS = (op_persistent, op_persistent_collectives,
       op_persistent_like_nonblocking)
