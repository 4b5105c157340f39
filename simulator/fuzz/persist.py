"""Persistent point-to-point requests for fuzz programs.

Each rank sets up ``Send_init`` / ``Ssend_init`` / ``Recv_init``
requests for its messages once, then runs a few rounds: fill the send
buffers (legal while the requests are inactive), ``Start`` or
``Startall``, complete them, record what arrived; finally ``Free``.
Every message has its own tag and a named source, so matching is
deterministic; a receive may still give a buffer longer than the
message.
"""
from simulator.fuzz.model import DTYPES, pick_count, spec

__all__ = ['OPS', 'op_persistent']


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


OPS = (op_persistent,)
