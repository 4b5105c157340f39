"""Point-to-point operations for fuzz programs.

Every message of a program has its own tag, so a receive from
ANY_SOURCE with a named tag can match one message only. ANY_TAG is used
with a named source only where that source sends one message to the
receiver in the operation (or, in a blocking sequence, where MPI's
non-overtaking rule decides), and ANY_SOURCE with ANY_TAG only between
two barriers with a single message in flight.

A blocking sequence is a list of messages in one global order; each rank
handles its messages in that order. Even with synchronous sends it
cannot deadlock: the earliest unfinished message always has both of its
ranks waiting on it.
"""
from simulator.fuzz.model import DTYPES, pick_count, spec
from simulator.fuzz.obj import any_object

_STATUS = 'rec_status({k}, {label!r}, {st}, MPI._typedict[{buf}.dtype.char])'


class _Message:
    def __init__(self, b, index, src, dst, objects):
        rng = b.rng
        self.index = index
        self.src, self.dst = src, dst
        self.tag = b.tag(index)
        self.objects = objects
        self.dtype = rng.choice(DTYPES)
        self.count = pick_count(rng)
        self.cap = self.count + rng.choice((0, 0, 0, 1, 5))
        self.value = any_object(rng)
        self.any_source = rng.random() < 0.25
        self.any_tag = False

    def recv_args(self):
        return 'source={}, tag={}'.format(
            'MPI.ANY_SOURCE' if self.any_source else self.src,
            'MPI.ANY_TAG' if self.any_tag else self.tag)

    def payload(self, k):
        if self.objects:
            return self.value
        return 'data({}, r, {!r}, {}, salt={})'.format(
            k, self.dtype, self.count, self.index)

    def describe(self):
        what = 'obj' if self.objects else '{} x{}'.format(self.dtype,
                                                          self.count)
        return '{}->{} tag={} {}{}{}'.format(
            self.src, self.dst, self.tag, what,
            ' ANY_SOURCE' if self.any_source else '',
            ' ANY_TAG' if self.any_tag else '')


def _messages(b, size, allow_self):
    rng = b.rng
    objects = rng.random() < 0.35
    out = []
    for j in range(rng.randint(1, 6)):
        src = rng.randrange(size)
        dst = rng.randrange(size)
        if dst == src and not allow_self:
            dst = (src + 1) % size
            if dst == src:
                break
        out.append(_Message(b, j, src, dst, objects))
    return out


def op_nonblocking_round(b):
    """Isend/Irecv (or isend/irecv) posted in random order, then
    completed by Waitall, one Wait each, or a Testall loop."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    msgs = _messages(b, e.size, allow_self=True)
    if not msgs:
        return
    pairs = {}
    for m in msgs:
        pairs[(m.src, m.dst)] = pairs.get((m.src, m.dst), 0) + 1
    for m in msgs:
        m.any_tag = pairs[(m.src, m.dst)] == 1 and rng.random() < 0.3
        if m.any_tag:
            m.any_source = False
    finish = rng.choice(('waitall', 'each', 'testall', 'waitany'))
    objects = msgs[0].objects
    lines = []
    for i in range(e.size):
        actions = [('recv', m) for m in msgs if m.dst == i] + \
            [('send', m) for m in msgs if m.src == i]
        if not actions:
            continue
        rng.shuffle(actions)
        lines += ['{} r == {}:'.format('if' if not lines else 'elif', i),
                  '    reqs = []']
        recvs = []
        for what, m in actions:
            if what == 'send':
                call = rng.choice(('isend', 'issend')) if objects else \
                    rng.choice(('Isend', 'Isend', 'Issend'))
                lines.append('    reqs.append(c.{}({}, {}, tag={}))'.format(
                    call, m.payload(k), m.dst, m.tag))
            elif objects:
                recvs.append((len(recvs), m, None))
                lines.append('    reqs.append(c.irecv({}))'.format(
                    m.recv_args()))
            else:
                buf = 'b{}'.format(m.index)
                lines += ['    {} = fill({!r}, {})'.format(
                    buf, m.dtype, m.cap),
                    '    reqs.append(c.Irecv({}, {}))'.format(
                        spec(rng, buf, m.dtype), m.recv_args())]
                recvs.append((len(recvs), m, buf))
        lines += ['    sts = [MPI.Status() for _ in reqs]']
        if finish == 'waitall':
            lines.append('    got = MPI.Request.waitall(reqs, sts)')
        elif finish == 'each':
            order = list(range(len(actions)))
            rng.shuffle(order)
            lines += ['    got = [None] * len(reqs)',
                      '    for i in {!r}:'.format(order),
                      '        got[i] = reqs[i].wait(sts[i])']
        elif finish == 'waitany':
            # Each completion's status lands where its request was.
            call = 'waitany' if objects else 'Waitany'
            lines += ['    got = [None] * len(reqs)',
                      '    for _ in reqs:',
                      '        st = MPI.Status()',
                      '        i = MPI.Request.{}(reqs, st)'.format(call)]
            if objects:
                lines.append('        i, got[i] = i')
            lines.append('        sts[i] = st')
        else:
            lines += ['    while True:',
                      '        done, got = MPI.Request.testall(reqs, sts)',
                      '        if done:',
                      '            break']
        index = {id(m): n for n, (what, m) in enumerate(actions)
                 if what == 'recv'}
        for _, m, buf in recvs:
            at = index[id(m)]
            label = 'm{}'.format(m.index)
            if objects:
                lines += ['    rec({}, {!r}, got[{}])'.format(k, label, at),
                          '    rec_status({}, {!r}, sts[{}])'.format(
                              k, label + '-status', at)]
            else:
                lines += ['    rec({}, {!r}, {})'.format(k, label, buf),
                          '    ' + _STATUS.format(
                              k=k, label=label + '-status',
                              st='sts[{}]'.format(at), buf=buf)]
    b.on_entity(e, 'nonblocking {} {}'.format(
        finish, '; '.join(m.describe() for m in msgs)), lines)


def _blocking_send(rng, m, k):
    if m.objects:
        call = rng.choice(('send', 'ssend', 'isend-wait'))
        if call == 'isend-wait':
            return ['c.isend({}, {}, tag={}).wait()'.format(
                m.value, m.dst, m.tag)]
        return ['c.{}({}, {}, tag={})'.format(call, m.value, m.dst, m.tag)]
    call = rng.choice(('Send', 'Ssend', 'Isend-Wait'))
    if call == 'Isend-Wait':
        return ['c.Isend({}, {}, tag={}).Wait()'.format(
            m.payload(k), m.dst, m.tag)]
    return ['c.{}({}, {}, tag={})'.format(call, m.payload(k), m.dst, m.tag)]


def _blocking_recv(rng, m, k):
    label = 'm{}'.format(m.index)
    how = rng.choice(('plain', 'plain', 'probe', 'iprobe', 'irecv',
                      'mprobe', 'improbe'))
    if how in ('mprobe', 'improbe'):
        return _matched_recv(rng, m, k, how)
    lines = ['st = MPI.Status()']
    if how == 'probe':
        lines.append('c.{}({}, status=st)'.format(
            'probe' if m.objects else 'Probe', m.recv_args()))
    elif how == 'iprobe':
        lines += ['while not c.{}({}, status=st):'.format(
            'iprobe' if m.objects else 'Iprobe', m.recv_args()),
            '    pass']
    if how in ('probe', 'iprobe'):
        lines.append('rec_status({}, {!r}, st)'.format(k, label + '-probe'))
    if m.objects:
        if how == 'irecv':
            lines.append('got = c.irecv({}).wait(st)'.format(m.recv_args()))
        else:
            lines.append('got = c.recv(None, {}, status=st)'.format(
                m.recv_args()))
        return lines + ['rec({}, {!r}, got)'.format(k, label),
                        'rec_status({}, {!r}, st)'.format(
                            k, label + '-status')]
    lines.append('buf = fill({!r}, {})'.format(m.dtype, m.cap))
    if how == 'irecv':
        lines.append('c.Irecv({}, {}).Wait(st)'.format(
            spec(rng, 'buf', m.dtype), m.recv_args()))
    else:
        lines.append('c.Recv({}, {}, status=st)'.format(
            spec(rng, 'buf', m.dtype), m.recv_args()))
    return lines + ['rec({}, {!r}, buf)'.format(k, label),
                    _STATUS.format(k=k, label=label + '-status', st='st',
                                   buf='buf')]


def _matched_recv(rng, m, k, how):
    """A matched probe (Mprobe, or an Improbe loop) and the receive of
    the message it took (Recv / Irecv on the Message)."""
    label = 'm{}'.format(m.index)
    probe = ('mprobe' if m.objects else 'Mprobe') if how == 'mprobe' else \
        ('improbe' if m.objects else 'Improbe')
    lines = ['st = MPI.Status()']
    if how == 'mprobe':
        lines.append('msg = c.{}({}, status=st)'.format(probe,
                                                       m.recv_args()))
    else:
        lines += ['msg = None',
                  'while msg is None:',
                  '    msg = c.{}({}, status=st)'.format(probe,
                                                         m.recv_args())]
    lines.append('rec_status({}, {!r}, st)'.format(k, label + '-probe'))
    irecv = rng.random() < 0.5
    if m.objects:
        lines.append('got = msg.irecv().wait(st)' if irecv else
                     'got = msg.recv(status=st)')
        return lines + ['rec({}, {!r}, got)'.format(k, label),
                        'rec({}, {!r}, msg == MPI.MESSAGE_NULL)'.format(
                            k, label + '-null'),
                        'rec_status({}, {!r}, st)'.format(
                            k, label + '-status')]
    lines.append('buf = fill({!r}, {})'.format(m.dtype, m.cap))
    if irecv:
        lines.append('msg.Irecv({}).Wait(st)'.format(
            spec(rng, 'buf', m.dtype)))
    else:
        lines.append('msg.Recv({}, status=st)'.format(
            spec(rng, 'buf', m.dtype)))
    return lines + ['rec({}, {!r}, buf)'.format(k, label),
                    'rec({}, {!r}, msg == MPI.MESSAGE_NULL)'.format(
                        k, label + '-null'),
                    _STATUS.format(k=k, label=label + '-status', st='st',
                                   buf='buf')]


def op_blocking_sequence(b):
    """Blocking sends and receives, each rank in the global order."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity(min_size=2)
    if e.size < 2:
        return
    msgs = _messages(b, e.size, allow_self=False)
    for m in msgs:
        m.objects = rng.random() < 0.35
        m.any_tag = not m.any_source and rng.random() < 0.25
    lines = []
    for i in range(e.size):
        body = []
        for m in msgs:
            if m.src == i:
                body += _blocking_send(rng, m, k)
            elif m.dst == i:
                body += _blocking_recv(rng, m, k)
        if body:
            lines.append('{} r == {}:'.format('if' if not lines else 'elif',
                                              i))
            lines += ['    ' + line for line in body]
    b.on_entity(e, 'blocking sequence {}'.format(
        '; '.join(m.describe() for m in msgs)), lines)


def op_sendrecv(b):
    """A shift by ``d``: Sendrecv, Sendrecv_replace or sendrecv; without
    wrap-around the edges talk to PROC_NULL."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    n = e.size
    periodic = rng.random() < 0.6 or n == 1
    d = rng.randrange(n) if periodic else rng.randint(1, max(1, n - 1))
    dests = [(i + d) % n if periodic or i + d < n else -2 for i in range(n)]
    sources = [(i - d) % n if periodic or i - d >= 0 else -2
               for i in range(n)]
    base = b.tag(0)
    any_source = [s >= 0 and rng.random() < 0.3 for s in sources]
    any_tag = [s >= 0 and not a and rng.random() < 0.3
               for s, a in zip(sources, any_source)]
    recv_from = ['MPI.ANY_SOURCE' if a else s
                 for s, a in zip(sources, any_source)]
    recv_tag = ['MPI.ANY_TAG' if a else base + max(s, 0)
                for s, a in zip(sources, any_tag)]
    call = rng.choice(('Sendrecv', 'Sendrecv_replace', 'sendrecv',
                       'Isendrecv', 'Isendrecv_replace'))
    dt = rng.choice(DTYPES)
    count = pick_count(rng)
    lines = ['dest = {!r}[r]'.format(dests),
             'source = [{}][r]'.format(', '.join(map(str, recv_from))),
             'recvtag = [{}][r]'.format(', '.join(map(str, recv_tag))),
             'st = MPI.Status()']
    if call == 'sendrecv':
        values = [any_object(rng) for _ in range(n)]
        lines += ['got = c.sendrecv([{}][r], dest, sendtag={} + r, '
                  'source=source, recvtag=recvtag, status=st)'.format(
                      ', '.join(values), base),
                  'rec({}, "got", got)'.format(k),
                  'rec_status({}, "status", st)'.format(k)]
    elif call == 'Sendrecv':
        lines += ['s = data({}, r, {!r}, {})'.format(k, dt, count),
                  'buf = fill({!r}, {})'.format(dt, count +
                                               rng.choice((0, 0, 3))),
                  'c.Sendrecv({}, dest, {} + r, {}, source, recvtag, '
                  'st)'.format(spec(rng, 's', dt), base,
                               spec(rng, 'buf', dt))]
    elif call == 'Isendrecv':
        lines += ['s = data({}, r, {!r}, {})'.format(k, dt, count),
                  'buf = fill({!r}, {})'.format(dt, count +
                                               rng.choice((0, 0, 3))),
                  'c.Isendrecv({}, dest, {} + r, {}, source, recvtag)'
                  '.Wait(st)'.format(spec(rng, 's', dt), base,
                                     spec(rng, 'buf', dt))]
    else:
        lines += ['buf = data({}, r, {!r}, {})'.format(k, dt, count),
                  'c.{}({}, dest, {} + r, source, recvtag{})'.format(
                      call, spec(rng, 'buf', dt), base,
                      ').Wait(st' if call.startswith('I') else ', st')]
    if call != 'sendrecv':
        lines += ['rec({}, "buf", buf)'.format(k),
                  _STATUS.format(k=k, label='status', st='st', buf='buf')]
    b.on_entity(e, '{} shift={} periodic={} {} x{}'.format(
        call, d, periodic, dt, count), lines)


def op_fenced_wildcard(b):
    """One message received with ANY_SOURCE and ANY_TAG between two
    barriers, so nothing else can be in flight to the receiver."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    src, dst = rng.randrange(e.size), rng.randrange(e.size)
    objects = rng.random() < 0.4
    dt, count = rng.choice(DTYPES), pick_count(rng)
    tag = b.tag(0)
    value = any_object(rng)
    if objects:
        send = 'req = c.isend({}, {}, tag={})'.format(value, dst, tag)
        recv = ['got = c.recv(status=st)', 'rec({}, "got", got)'.format(k),
                'rec_status({}, "status", st)'.format(k)]
    else:
        send = 'req = c.Isend(data({}, r, {!r}, {}), {}, tag={})'.format(
            k, dt, count, dst, tag)
        recv = ['buf = fill({!r}, {})'.format(dt, count + 2),
                'c.Recv(buf, MPI.ANY_SOURCE, MPI.ANY_TAG, st)',
                'rec({}, "buf", buf)'.format(k),
                _STATUS.format(k=k, label='status', st='st', buf='buf')]
    lines = ['c.Barrier()',
             'if r == {}:'.format(src), '    ' + send,
             'if r == {}:'.format(dst), '    st = MPI.Status()']
    lines += ['    ' + line for line in recv]
    lines += ['if r == {}:'.format(src), '    req.wait()', 'c.Barrier()']
    b.on_entity(e, 'fenced ANY_SOURCE/ANY_TAG {}->{} {}'.format(
        src, dst, 'obj' if objects else '{} x{}'.format(dt, count)), lines)


def op_proc_null(b):
    """Sends to and receives from PROC_NULL complete at once."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    dt = rng.choice(DTYPES)
    b.on_entity(e, 'PROC_NULL {}'.format(dt), [
        'buf = fill({!r}, 3)'.format(dt),
        'st = MPI.Status()',
        'c.Send(buf, MPI.PROC_NULL, tag=5)',
        'c.Recv(buf, MPI.PROC_NULL, 5, st)',
        'rec({}, "buf", buf)'.format(k),
        _STATUS.format(k=k, label='status', st='st', buf='buf'),
        'c.send({}, MPI.PROC_NULL)'.format(any_object(rng)),
        'rec({}, "obj", c.recv(source=MPI.PROC_NULL, status=st))'.format(k),
        'rec_status({}, "obj-status", st)'.format(k),
        'rec({}, "sendrecv", c.sendrecv(1, MPI.PROC_NULL, '
        'source=MPI.PROC_NULL))'.format(k),
        'msg = c.Mprobe(MPI.PROC_NULL, 5, status=st)',
        'rec({}, "mprobe", (msg == MPI.MESSAGE_NO_PROC, bool(msg), '
        'st.Get_source(), st.Get_tag(), st.Get_count()))'.format(k),
        'msg.Recv(buf, status=st)',
        'rec({}, "mrecv", (msg == MPI.MESSAGE_NO_PROC, '
        'msg == MPI.MESSAGE_NULL, st.Get_source()))'.format(k),
        'req = c.Irecv(buf, MPI.PROC_NULL)',
        'rec({}, "irecv", (req.Test(st), st.Get_source(), '
        'st.Get_tag()))'.format(k),
    ])


OPS = (op_nonblocking_round, op_nonblocking_round, op_blocking_sequence,
       op_blocking_sequence, op_sendrecv, op_fenced_wildcard, op_proc_null)
