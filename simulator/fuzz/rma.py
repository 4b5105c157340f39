"""One-sided communication for fuzz programs: windows of every flavour,
fence / PSCW / passive-target epochs, and every RMA operation.

MPI leaves the order of one epoch's accesses to a location open, so the
generator cuts each target's window into segments and gives each
segment one rule (:func:`_plan`), under which every order gives the same
bytes:

- ``single``: one origin, one operation, or a run of accumulate-family
  operations (which MPI orders from one origin to one location);
- ``reads``: any origins, reads only (``Get``, ``Get_accumulate`` /
  ``Fetch_and_op`` with ``NO_OP``);
- ``acc``: any origins, ``Accumulate`` with one op whose result does
  not depend on the order (integer arithmetic, MAX / MIN, bitwise);
- untouched.

Window memory and origin buffers are recorded after the epochs end.
Request-based operations (``Rput`` ...) appear in passive-target epochs
only, where MPI allows them.
"""
from simulator.fuzz.model import VALUES_FOR_OP, pick_type, spec

__all__ = ['OPS', 'op_rma']

_INTS = ('int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
         'uint64')
_DTYPES = _INTS + ('float32', 'float64', 'complex64', 'complex128')
_ITEM = {'int8': 1, 'int16': 2, 'int32': 4, 'int64': 8, 'uint8': 1,
         'uint16': 2, 'uint32': 4, 'uint64': 8, 'float32': 4, 'float64': 8,
         'complex64': 8, 'complex128': 16}


def _window_kind(dt):
    """Values a window of ``dt`` starts with (see runtime.data)."""
    if dt in _INTS:
        return 'sum' if _ITEM[dt] <= 2 else 'any'
    return 'cmp' if dt.startswith('float') else 'sum'


def _ops_for(dt, shared):
    """Accumulate ops valid for ``dt``; with ``shared`` (several origins
    on one location) only those whose result ignores the order."""
    if dt in _INTS:
        ops = ['SUM']
        if _ITEM[dt] < 8:
            # Open MPI 5.0's remote 64-bit atomics get BAND / BOR wrong
            # (the target stays as it was) and BXOR (it becomes 0).
            ops += ['BAND', 'BOR', 'BXOR']
        if dt not in ('uint32', 'uint64'):
            # Open MPI 5.0's remote atomics compare 32- and 64-bit
            # unsigned integers as signed in MAX / MIN (0xc83e3a4b <
            # 0x617ad682 there).
            ops += ['MAX', 'MIN']
        if not shared or _ITEM[dt] >= 4:
            ops.append('PROD')
        if not shared:
            ops += ['REPLACE']
        return ops
    if dt.startswith('float'):
        return ['MAX', 'MIN'] + ([] if shared else ['SUM', 'PROD',
                                                    'REPLACE'])
    return [] if shared else ['SUM', 'PROD', 'REPLACE']


def _values(dt, op):
    if op == 'REPLACE':
        return _window_kind(dt)
    kind = VALUES_FOR_OP[op]
    if dt in _INTS and _ITEM[dt] <= 2 and kind in ('any', 'logic'):
        # stay clear of 8/16-bit overflow (Open MPI saturates in vectors)
        return 'sum' if op == 'SUM' else kind
    if dt.startswith('float') and kind in ('any', 'sum'):
        return 'cmp'
    return kind


class _Access:
    """One RMA call of the program."""

    def __init__(self, origin, target, at, count, call, op=None):
        self.origin, self.target = origin, target
        self.at, self.count = at, count
        self.call, self.op = call, op
        self.first = False      # the first access of its segment
        self.j = 0              # index among all accesses


def _sub(rng, lo, hi):
    """A random non-empty sub-range [a, a+n) of [lo, hi)."""
    a = rng.randrange(lo, hi)
    return a, rng.randint(1, hi - a)


def _plan(rng, dt, sizes, origins_of, passive):
    """The accesses of one epoch: ``sizes[t]`` elements per target,
    ``origins_of(t)`` the ranks that may access t."""
    accesses = []
    fetchable = dt in _INTS or dt.startswith('float')
    for t, n in enumerate(sizes):
        origins = origins_of(t)
        if not n or not origins:
            continue
        cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randint(0, 3))))
        for lo, hi in zip([0] + cuts, cuts + [n]):
            rule = rng.choice(('single', 'single', 'reads', 'acc', 'none'))
            if rule == 'acc' and not _ops_for(dt, True):
                rule = 'single'
            if rule == 'single':
                o = rng.choice(origins)
                if rng.random() < 0.4:
                    call = rng.choice(('Put', 'Get'))
                    if passive and rng.random() < 0.3:
                        call = 'R' + call[0].lower() + call[1:]
                    seq = [_Access(o, t, lo, hi - lo, call)]
                else:
                    seq = []
                    for _ in range(rng.randint(1, 3)):
                        kinds = ['Accumulate', 'Get_accumulate']
                        if fetchable:
                            kinds.append('Fetch_and_op')
                        if dt in _INTS:
                            kinds.append('Compare_and_swap')
                        call = rng.choice(kinds)
                        if call in ('Fetch_and_op', 'Compare_and_swap'):
                            at, count = rng.randrange(lo, hi), 1
                        else:
                            at, count = _sub(rng, lo, hi)
                        ops = _ops_for(dt, False)
                        if call != 'Accumulate' and fetchable:
                            ops = ops + ['NO_OP']
                        if call == 'Compare_and_swap':
                            ops = [None]
                        if passive and call in ('Accumulate',
                                                'Get_accumulate') and \
                                rng.random() < 0.3:
                            call = 'R' + call[0].lower() + call[1:]
                        seq.append(_Access(o, t, at, count, call,
                                           rng.choice(ops)))
                seq[0].first = True
                accesses.append(seq)
            elif rule == 'reads':
                for _ in range(rng.randint(1, 3)):
                    at, count = _sub(rng, lo, hi)
                    call = rng.choice(('Get', 'Get', 'Get_accumulate')
                                      if fetchable else ('Get',))
                    if passive and call == 'Get' and rng.random() < 0.3:
                        call = 'Rget'
                    op = 'NO_OP' if call == 'Get_accumulate' else None
                    accesses.append([_Access(rng.choice(origins), t, at,
                                             count, call, op)])
            elif rule == 'acc':
                op = rng.choice(_ops_for(dt, True))
                for _ in range(rng.randint(1, 4)):
                    at, count = _sub(rng, lo, hi)
                    call = 'Raccumulate' if passive and rng.random() < 0.3 \
                        else 'Accumulate'
                    accesses.append([_Access(rng.choice(origins), t, at,
                                             count, call, op)])
    return accesses


def _order(rng, groups):
    """Merge access runs into one list, each run kept in its order."""
    runs = [list(g) for g in groups]
    out = []
    while runs:
        run = rng.choice(runs)
        out.append(run.pop(0))
        if not run:
            runs.remove(run)
    return out


class _Window:
    """What the generator decided about one window."""

    def __init__(self, rng, size):
        self.dt = rng.choice(_DTYPES)
        self.item = _ITEM[self.dt]
        self.flavor = rng.choice(('Create', 'Create', 'Allocate',
                                  'Allocate_shared', 'Create_dynamic'))
        smallest = 1 if self.flavor == 'Create_dynamic' else 0
        self.sizes = [rng.choice((smallest, 3, 5, 8, 12))
                      for _ in range(size)]
        self.disp_unit = 1 if self.flavor == 'Create_dynamic' or \
            rng.random() < 0.3 else self.item
        self.mpi_type = pick_type(rng, self.dt)
        self.kind = _window_kind(self.dt)

    def disp(self, a):
        """Code for the target displacement of element ``a``."""
        if self.flavor == 'Create_dynamic':
            return 'base[t] + {}'.format(a * self.item)
        return str(a * self.item // self.disp_unit)

    def setup(self, k):
        dt, sizes = self.dt, self.sizes
        init = 'data({}, r, {!r}, {}[r], {!r}, salt=50)'.format(
            k, dt, sizes, self.kind)
        lines = []
        if self.flavor in ('Create', 'Create_dynamic'):
            lines.append('wm = ' + init)
        if self.flavor == 'Create':
            lines.append('win = MPI.Win.Create(wm, disp_unit={}, comm=c)'
                         .format(self.disp_unit))
        elif self.flavor == 'Create_dynamic':
            lines += ['win = MPI.Win.Create_dynamic(comm=c)',
                      'win.Attach(wm)',
                      'base = c.allgather(MPI.Get_address(wm))']
        else:
            lines += ['win = MPI.Win.{}({}[r] * {}, disp_unit={}, comm=c)'
                      .format(self.flavor, sizes, self.item,
                              self.disp_unit),
                      'wm = np.frombuffer(win.tomemory(), {!r})'.format(dt),
                      'wm[:] = ' + init]
        return lines


def _call(rng, w, k, a):
    """Lines of one access (origin side) and the buffers it leaves to
    record."""
    dt = w.dt
    ob, rb, cb = 'ob{}'.format(a.j), 'rb{}'.format(a.j), 'cb{}'.format(a.j)
    op = 'MPI.{}'.format(a.op) if a.op else None
    values = _values(dt, a.op) if a.op and a.op != 'NO_OP' else w.kind
    lines = ['t = {}'.format(a.target)]
    target = '({}, {})'.format(w.disp(a.at), a.count)
    if a.call in ('Put', 'Rput', 'Accumulate', 'Raccumulate'):
        lines.append('{} = data({}, r, {!r}, {}, {!r}, salt={})'.format(
            ob, k, dt, a.count, values, 100 + a.j))
        args = '{}, t, {}'.format(spec(rng, ob, dt, mpi_type=w.mpi_type),
                                  target)
        if a.call.endswith('ccumulate'):
            args += ', op={}'.format(op)
        kept = [ob]
    elif a.call in ('Get', 'Rget'):
        extra = rng.choice((0, 0, 2))
        lines.append('{} = fill({!r}, {})'.format(ob, dt, a.count + extra))
        args = '{}, t, {}'.format(spec(rng, ob, dt, a.count if extra
                                       else None, w.mpi_type), target)
        kept = [ob]
    elif a.call in ('Get_accumulate', 'Rget_accumulate'):
        lines += ['{} = data({}, r, {!r}, {}, {!r}, salt={})'.format(
                      ob, k, dt, a.count, values, 100 + a.j),
                  '{} = fill({!r}, {})'.format(rb, dt, a.count)]
        args = '{}, {}, t, {}, op={}'.format(
            spec(rng, ob, dt, mpi_type=w.mpi_type),
            spec(rng, rb, dt, mpi_type=w.mpi_type), target, op)
        kept = [ob, rb]
    elif a.call == 'Fetch_and_op':
        lines += ['{} = data({}, r, {!r}, 1, {!r}, salt={})'.format(
                      ob, k, dt, values, 100 + a.j),
                  '{} = fill({!r}, 1)'.format(rb, dt)]
        args = '{}, {}, t, {}, op={}'.format(ob, rb, w.disp(a.at), op)
        kept = [rb]
    else:
        # Compare with what the target held at the start when this is
        # the segment's first access (so the swap happens), else with a
        # value of our own.
        if a.first and rng.random() < 0.6:
            compare = 'data({}, t, {!r}, {}[t], {!r}, salt=50)[{}:{}]'.format(
                k, dt, w.sizes, w.kind, a.at, a.at + 1)
        else:
            compare = 'data({}, r, {!r}, 1, salt={})'.format(k, dt,
                                                            200 + a.j)
        lines += ['{} = data({}, r, {!r}, 1, {!r}, salt={})'.format(
                      ob, k, dt, w.kind, 100 + a.j),
                  '{} = {}'.format(cb, compare),
                  '{} = fill({!r}, 1)'.format(rb, dt)]
        args = '{}, {}, {}, t, {}'.format(ob, cb, rb, w.disp(a.at))
        kept = [rb]
    call = 'win.{}({})'.format(a.call, args)
    if a.call.startswith('R'):
        lines.append('reqs.append({})'.format(call))
    else:
        lines.append(call)
    return lines, kept


def _origin_lines(rng, w, k, mine):
    lines, kept = [], []
    for a in mine:
        more, bufs = _call(rng, w, k, a)
        lines += more
        kept += bufs
    return lines, kept


def op_rma(b):
    """One window, one to two epochs of one synchronisation kind, then
    every rank's window and origin buffers."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    size = e.size
    w = _Window(rng, size)
    sync = rng.choice(('fence', 'fence', 'pscw', 'lock', 'lock_all'))
    passive = sync.startswith('lock')
    epochs = 1 if sync != 'fence' or (w.dt in _INTS and w.item <= 2) \
        else rng.randint(1, 2)
    everyone = list(range(size))
    plans = []
    for _ in range(epochs):
        plan = _plan(rng, w.dt, w.sizes, lambda t: everyone, passive)
        flat = _order(rng, plan)
        done = sum(len(p) for p in plans)
        for j, a in enumerate(flat):
            a.j = done + j
        plans.append(flat)
    lines = w.setup(k)
    lines.append('rec({}, "win", (win.Get_attr(MPI.WIN_DISP_UNIT), '
                 'win.Get_attr(MPI.WIN_SIZE), win.Get_attr(MPI.WIN_CREATE_'
                 'FLAVOR) == MPI.WIN_FLAVOR_{}, win.Get_attr(MPI.WIN_MODEL)'
                 ' == MPI.WIN_UNIFIED, win.Get_group().Get_size()))'.format(
                     k, {'Create': 'CREATE', 'Allocate': 'ALLOCATE',
                         'Allocate_shared': 'SHARED',
                         'Create_dynamic': 'DYNAMIC'}[w.flavor]))
    lines.append('kept = []')
    if sync == 'fence':
        lines += _fence(rng, w, k, plans, size)
    elif sync == 'pscw':
        lines += _pscw(rng, w, k, plans[0], size)
    else:
        lines += _passive(rng, w, k, plans[0], size, sync)
    lines += ['rec({}, "window", {})'.format(k, 'seen' if passive
                                              else 'wm'),
              'rec({}, "origin", kept)'.format(k)]
    if w.flavor == 'Allocate_shared' and sync == 'fence':
        lines.append('rec({}, "shared", [(np.frombuffer(m, {!r}), u) for m,'
                     ' u in (win.Shared_query(x) for x in range({}))])'
                     .format(k, w.dt, size))
    if w.flavor == 'Create_dynamic':
        lines.append('win.Detach(wm)')
    lines.append('win.Free()')
    b.on_entity(e, 'rma {} {} {} disp_unit={} sizes={} {} epoch(s) [{}]'
                .format(w.flavor, w.dt, sync, w.disp_unit, w.sizes, epochs,
                        '; '.join('{}->{} {}{} @{}x{}'.format(
                            a.origin, a.target, a.call,
                            ' ' + a.op if a.op else '', a.at, a.count)
                            for p in plans for a in p)), lines)


def _by_origin(plan, size):
    return [[a for a in plan if a.origin == i] for i in range(size)]


def _branches(per_rank):
    out = []
    for i, body in enumerate(per_rank):
        if not body:
            continue
        out.append('{} r == {}:'.format('if' if not out else 'elif', i))
        out += ['    ' + line for line in body]
    return out


def _fence(rng, w, k, plans, size):
    first = rng.choice(('0', 'MPI.MODE_NOPRECEDE'))
    lines = ['win.Fence({})'.format(first)]
    for n, plan in enumerate(plans):
        bodies = []
        for mine in _by_origin(plan, size):
            more, kept = _origin_lines(rng, w, k, mine)
            bodies.append(more + (['kept += [{}]'.format(', '.join(kept))]
                                  if kept else []))
        lines += _branches(bodies)
        last = n == len(plans) - 1
        flags = ['MPI.MODE_NOSTORE'] if rng.random() < 0.5 else []
        if last:
            flags += [f for f in ('MPI.MODE_NOSUCCEED', 'MPI.MODE_NOPUT')
                      if rng.random() < 0.5]
        lines.append('win.Fence({})'.format(' | '.join(flags) or '0'))
    return lines


def _pscw(rng, w, k, plan, size):
    """Post (targets) / Start (origins) / Complete / Wait, groups from
    who accesses whom."""
    bodies = []
    for i in range(size):
        mine = [a for a in plan if a.origin == i]
        origins = sorted({a.origin for a in plan if a.target == i})
        targets = sorted({a.target for a in mine})
        writes = any(a.call != 'Get' and a.op != 'NO_OP' for a in plan
                     if a.target == i)
        body = []
        if origins:
            body.append('win.Post(c.Get_group().Incl({!r}), {})'.format(
                origins, '0' if writes or rng.random() < 0.5 else
                'MPI.MODE_NOPUT'))
        if targets:
            more, kept = _origin_lines(rng, w, k, mine)
            body += ['win.Start(c.Get_group().Incl({!r}))'.format(targets)]
            body += more + ['win.Complete()']
            if kept:
                body.append('kept += [{}]'.format(', '.join(kept)))
        if origins:
            if rng.random() < 0.5:
                body.append('win.Wait()')
            else:
                body += ['while not win.Test():', '    pass']
        bodies.append(body)
    return _branches(bodies)


def _passive(rng, w, k, plan, size, sync):
    """Lock / Unlock per target (exclusive or shared), or Lock_all with
    Flush; then a Barrier, and each rank reads its window under a lock
    of its own."""
    lines = ['win.Lock(r, MPI.LOCK_EXCLUSIVE)',
             'wm[:] = data({}, r, {!r}, {}[r], {!r}, salt=50)'.format(
                 k, w.dt, w.sizes, w.kind),
             'win.Unlock(r)', 'c.Barrier()', 'reqs = []']
    bodies = []
    for mine in _by_origin(plan, size):
        body = []
        if sync == 'lock':
            targets = []
            for a in mine:
                if a.target not in targets:
                    targets.append(a.target)
            kept_all = []
            for t in targets:
                lock = rng.choice(('LOCK_EXCLUSIVE', 'LOCK_SHARED'))
                more, kept = _origin_lines(rng, w, k, [a for a in mine
                                                  if a.target == t])
                body += ['win.Lock({}, MPI.{})'.format(t, lock)] + more + \
                    ['MPI.Request.Waitall(reqs)', 'win.Unlock({})'.format(t)]
                kept_all += kept
        else:
            more, kept_all = _origin_lines(rng, w, k, mine)
            body += ['win.Lock_all()'] + more + ['MPI.Request.Waitall(reqs)']
            flush = rng.choice(('Flush_all', 'Flush', 'none'))
            if flush == 'Flush_all':
                body.append('win.Flush_all()')
            elif flush == 'Flush':
                body += ['win.Flush({})'.format(t) for t in
                         sorted({a.target for a in mine})]
            body.append('win.Unlock_all()')
        if kept_all:
            body.append('kept += [{}]'.format(', '.join(kept_all)))
        bodies.append(body)
    lines += _branches(bodies)
    lines += ['c.Barrier()', 'win.Lock(r, MPI.LOCK_SHARED)',
              'seen = wm.copy()', 'win.Unlock(r)']
    return lines


OPS = (op_rma,)
