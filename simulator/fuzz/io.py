"""MPI-IO for fuzz programs: a file opened by a communicator's ranks,
written through a view, read back, and its size and pointers recorded.

Each program's files live in ``fuzz_io_dir()`` (under the LOGDIR the
program is given), so the simulated and the ``mpiexec`` run never meet.
Every rank's view covers slots no other rank's view covers (a subarray,
vector or darray tile, or a contiguous region of its own), so whatever
order the ranks' writes land in, the file's bytes are the same; a rank's
own accesses are each completed before the next. Shared-pointer writes
are ordered (``Write_ordered``) or take turns between barriers. Between
writing and reading, ranks meet by ``Sync`` / ``Barrier`` / ``Sync``
(MPI's rule for seeing other ranks' writes) or close and reopen.
"""
from simulator.fuzz.model import NAMED_TYPES, per_rank

__all__ = ['OPS', 'op_io']

_DTYPES = ('int8', 'uint16', 'int32', 'int64', 'float32', 'float64',
           'complex64')
_ITEM = {'int8': 1, 'uint16': 2, 'int32': 4, 'int64': 8, 'float32': 4,
         'float64': 8, 'complex64': 8}

_WRITES = ('Write_at', 'Write_at_all', 'Iwrite_at', 'Iwrite_at_all',
           'Write_at_all_begin', 'Write', 'Write_all', 'Iwrite',
           'Iwrite_all', 'Write_all_begin')
_READS = ('Read_at', 'Read_at_all', 'Iread_at', 'Iread_at_all',
          'Read_at_all_begin', 'Read', 'Read_all', 'Iread', 'Iread_all',
          'Read_all_begin')


def _filetype(rng, size, region):
    """(kind, lines that make ``ft`` for rank ``r`` from etype ``et``,
    displacement offset in etypes per rank); a contiguous view gives
    each rank ``region`` etypes of its own."""
    kind = rng.choice(('contig', 'subarray', 'vector', 'darray'))
    if kind == 'contig':
        return kind, ['ft = et.Dup()'], region
    if kind == 'subarray':
        bl = rng.randint(1, 4)
        if rng.random() < 0.5:
            return kind, [
                'ft = et.Create_subarray([{}], [{}], [r * {}])'.format(
                    size * bl, bl, bl)], 0
        rows = rng.randint(1, 3)
        return kind, [
            'ft = et.Create_subarray([{rows}, {n}], [{rows}, {bl}], '
            '[0, r * {bl}])'.format(rows=rows, n=size * bl, bl=bl)], 0
    if kind == 'vector':
        nb, bl = rng.randint(1, 3), rng.randint(1, 3)
        return kind, [
            'vt = et.Create_vector({}, {}, {})'.format(nb, bl, size * bl),
            'ft = vt.Create_resized(0, {} * et.Get_size())'.format(
                nb * size * bl),
            'vt.Free()'], bl
    distrib = rng.choice(('BLOCK', 'CYCLIC'))
    if distrib == 'BLOCK':
        n = size * rng.randint(1, 4)
        darg = 'MPI.DISTRIBUTE_DFLT_DARG'
    else:
        darg_value = rng.randint(1, 3)
        n = size * darg_value * rng.randint(1, 2)
        darg = rng.choice(('MPI.DISTRIBUTE_DFLT_DARG', str(darg_value)))
        if darg == 'MPI.DISTRIBUTE_DFLT_DARG':
            n = size * rng.randint(1, 3)
    return kind, [
        'ft = et.Create_darray({}, r, [{}], [MPI.DISTRIBUTE_{}], [{}], '
        '[{}])'.format(size, n, distrib, darg, size)], 0


def _access(rng, name, k, j, dt, counts, offsets, reading):
    """Lines of one access ``name`` (all ranks the same call), rank
    ``r`` moving ``counts[r]`` etypes at ``offsets[r]``."""
    lines = ['n = {}'.format(per_rank(counts)),
             'o = {}'.format(per_rank(offsets))]
    if reading:
        lines.append('buf = fill("{}", n)'.format(dt))
    else:
        lines.append('buf = data({}, r, "{}", n, salt={})'.format(k, dt, j))
    spec = '[buf, n, et]' if rng.random() < 0.5 else 'buf'
    explicit = '_at' in name
    if not explicit:
        if rng.random() < 0.5:
            lines.append('f.Seek(o, MPI.SEEK_SET)')
        else:
            lines += ['f.Seek(0, MPI.SEEK_SET)',
                      'f.Seek(o, MPI.SEEK_CUR)']
    args = ('o, ' if explicit else '') + spec
    lines.append('st = MPI.Status()')
    if name.startswith('I'):
        lines.append('f.{}({}).Wait(st)'.format(name, args))
    elif name.endswith('_begin'):
        lines += ['f.{}({})'.format(name, args),
                  'f.{}(buf, st)'.format(name[:-len('begin')] + 'end')]
    else:
        lines.append('f.{}({}, st)'.format(name, args))
    what = ['st.Get_count(et)']
    if reading:
        what.append('buf')
    if not explicit:
        what.append('f.Get_position()')
    lines.append('rec({}, "{}{}", ({},))'.format(k, name, j,
                                                ', '.join(what)))
    return lines


def _pick_reads(rng, size):
    """[(call, counts, offsets)]: reads anywhere (after Sync / Barrier
    / Sync every byte is settled)."""
    return [(rng.choice(_READS), [rng.randint(0, 8) for _ in range(size)],
             [rng.randint(0, 10) for _ in range(size)])
            for _ in range(rng.randint(1, 3))]


def _pick_writes(rng, size):
    """[(call, counts, offsets)]: each rank's writes one after another
    in its view, never on the same etype twice: Open MPI 5.0's
    collective writes from one rank to the same bytes land in either
    order (a run of ``Write_at_all`` then ``Write_all_begin`` / ``_end``
    over the same etypes, under mpiexec -n 4, kept the first write's
    data in 2 runs out of 3)."""
    writes = [(rng.choice(_WRITES), [], []) for _ in range(rng.randint(1, 4))]
    for _ in range(size):
        cursor = rng.randint(0, 2)
        spans = []
        for _ in writes:
            count = rng.randint(0, 6)
            spans.append((cursor, count))
            cursor += count + rng.randint(0, 2)
        rng.shuffle(spans)
        for (_, counts, offsets), (offset, count) in zip(writes, spans):
            counts.append(count)
            offsets.append(offset)
    return writes


def _sized(call):
    """``call`` (``Set_size`` or ``Preallocate``) between barriers:
    Open MPI resizes the file at once on each rank's call, so without
    them a rank's ``Get_size`` sees another's resize or not."""
    return ['c.Barrier()', call, 'c.Barrier()']


def _never_ends_past_eof(name):
    """Open MPI 5.0.11's ompio never completes a non-blocking or
    split-collective read that reaches past the end of the file
    (``Read_all_end``, ``Iread_at(...).Wait()`` hang, even on one
    rank), and its blocking collective reads there return the count
    asked for (``Read_all``, ``Read_ordered``: 6 of 4 etypes, or zeros
    past the end); only blocking independent reads return what the file
    has."""
    return name not in ('Read_at', 'Read')


def _whole_file(k, label):
    """Lines that read and record every byte of ``f`` (a byte view)."""
    return ['f.Set_view(0, MPI.BYTE, MPI.BYTE)',
            'size = f.Get_size()',
            'whole = np.zeros(size, "u1")',
            'f.Read_at_all(0, whole)',
            'rec({}, "{}", (size, whole))'.format(k, label)]


def op_io(b):
    """Open a file, write through a view, read back, close (reopen)."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    size = e.size
    dt = rng.choice(_DTYPES)
    et = 'MPI.' + rng.choice(NAMED_TYPES[dt])
    write_only = rng.random() < 0.25
    delete_on_close = not write_only and rng.random() < 0.25
    amode = ['MPI.MODE_CREATE', 'MPI.MODE_WRONLY' if write_only
             else 'MPI.MODE_RDWR']
    if rng.random() < 0.3:
        amode.append('MPI.MODE_EXCL')
    if delete_on_close:
        amode.append('MPI.MODE_DELETE_ON_CLOSE')
    if rng.random() < 0.2:
        amode.append('MPI.MODE_UNIQUE_OPEN')
    writes = _pick_writes(rng, size)
    region = max(o + n for _, counts, offsets in writes
                 for o, n in zip(offsets, counts))
    kind, make, shift = _filetype(rng, size, region)
    disp = rng.choice((0, 0, 3, 16, 40))
    lines = [
        'path = os.path.join(fuzz_io_dir(), "f{}_{}.dat")'.format(
            k, e.members[0]),
        'et = {}'.format(et),
        'f = MPI.File.Open(c, path, {})'.format(' | '.join(amode)),
        'g, fg = c.Get_group(), f.Get_group()',
        'rec({}, "open", (f.Get_amode(), MPI.Group.Compare(g, fg), '
        'f.Get_size(), f.Get_position(), f.Get_atomicity()))'.format(k),
        'g.Free()', 'fg.Free()',
        'f.Get_info().Free()',
    ]
    if rng.random() < 0.3:
        lines += ['f.Set_atomicity(True)',
                  'rec({}, "atomic", f.Get_atomicity())'.format(k)]
    if rng.random() < 0.3:
        lines += _sized('f.Preallocate({})'.format(rng.randint(0, 200))) + [
                  'rec({}, "prealloc", f.Get_size())'.format(k)]
    lines += make + ['ft.Commit()']
    view_disp = '{} + r * {} * et.Get_size()'.format(disp, shift) \
        if shift else str(disp)
    lines += [
        'f.Set_view({}, et, ft)'.format(view_disp),
        'v = f.Get_view()',
        'rec({}, "view", (v[0], v[1].Get_size(), v[2].Get_size(), '
        'v[2].Get_extent(), f.Get_type_extent(et), f.Get_position(), '
        '[f.Get_byte_offset(p) for p in range(4)]))'.format(k),
        'for t in v[1:3]:',
        '    if not t.is_predefined:',
        '        t.Free()',
    ]
    for j, (name, counts, offsets) in enumerate(writes):
        lines += _access(rng, name, k, j, dt, counts, offsets, False)
    lines += ['f.Sync()', 'c.Barrier()', 'f.Sync()',
              'rec({}, "size", f.Get_size())'.format(k)]
    if not write_only:
        reads = _pick_reads(rng, size)
        if any(_never_ends_past_eof(read[0]) for read in reads):
            # No read reaches past the end of the file (1 KiB covers
            # every view's reach: 18 etypes of at most 4 ranks * 8
            # bytes per etype, plus the displacement).
            lines += _sized('f.Set_size(max(f.Get_size(), 1024))')
        for j, (name, counts, offsets) in enumerate(reads):
            lines += _access(rng, name, k, 10 + j, dt, counts, offsets,
                             True)
    roll = rng.random()
    if roll < 0.3:
        lines += _sized('f.Set_size({})'.format(rng.randint(0, 120))) + [
                  'rec({}, "set_size", f.Get_size())'.format(k)]
    if not write_only and rng.random() < 0.6:
        lines += _shared(rng, b, k, dt, size)
    if not write_only:
        lines += _whole_file(k, 'whole')
    # Every rank's reads are over before a rank closes (and maybe
    # deletes) the file.
    lines += ['ft.Free()', 'c.Barrier()', 'f.Close()',
              'rec({}, "closed", f == MPI.FILE_NULL)'.format(k),
              'c.Barrier()']
    if delete_on_close:
        lines.append('rec({}, "exists", os.path.exists(path))'.format(k))
    else:
        reopen = rng.choice(('MPI.MODE_RDONLY',
                             'MPI.MODE_RDWR | MPI.MODE_APPEND',
                             'MPI.MODE_WRONLY | MPI.MODE_APPEND'))
        lines += [
            'f = MPI.File.Open(c, path, {})'.format(reopen),
            'rec({}, "reopen", (f.Get_amode(), f.Get_size(), '
            'f.Get_position(), f.Get_position_shared()))'.format(k)]
        if 'APPEND' in reopen:
            counts = [rng.randint(0, 5) for _ in range(size)]
            lines += [
                'buf = data({}, r, "u1", {}, salt=99)'.format(
                    k, per_rank(counts)),
                'f.Write_ordered(buf)',
                'rec({}, "appended", (f.Get_position(), '
                'f.Get_position_shared()))'.format(k),
                'f.Sync()', 'c.Barrier()', 'f.Sync()',
                'rec({}, "appended-size", f.Get_size())'.format(k)]
        if 'WRONLY' not in reopen:
            lines += _whole_file(k, 'reread')
        lines += ['f.Close()', 'c.Barrier()']
        if rng.random() < 0.5:
            lines += ['if r == 0:',
                      '    MPI.File.Delete(path)',
                      'c.Barrier()',
                      'rec({}, "deleted", os.path.exists(path))'.format(k)]
    title = 'io {} {} {} amode={} view={} disp={}'.format(
        dt, et, size, '|'.join(a[9:] for a in amode), kind, disp)
    b.on_entity(e, title, lines)


def _shared(rng, b, k, dt, size):
    """Shared-pointer accesses past what the view part wrote: ordered
    writes, turn-taking Write_shared, ordered reads back."""
    lines = ['base = f.Get_size() + 8',
             'f.Set_view(base, et, et)',
             'f.Seek_shared(0, MPI.SEEK_SET)']
    counts = [rng.randint(0, 5) for _ in range(size)]
    how = rng.choice(('Write_ordered', 'Write_ordered_begin', 'shared'))
    lines.append('buf = data({}, r, "{}", {}, salt=50)'.format(
        k, dt, per_rank(counts)))
    if how == 'Write_ordered':
        lines.append('f.Write_ordered(buf)')
    elif how == 'Write_ordered_begin':
        lines += ['f.Write_ordered_begin(buf)',
                  'f.Write_ordered_end(buf)']
    else:
        # Turns between barriers: the shared pointer's order is fixed.
        order = list(range(size))
        rng.shuffle(order)
        lines += ['for turn in {!r}:'.format(order),
                  '    if r == turn:',
                  '        f.Write_shared(buf)',
                  '    c.Barrier()']
    lines += ['rec({}, "shared-pos", f.Get_position_shared())'.format(k),
              'f.Sync()', 'c.Barrier()', 'f.Sync()']
    # Ordered reads stay inside the file (see _never_ends_past_eof).
    lines += _sized('f.Set_size(max(f.Get_size(), base + 256))') + [
              'f.Seek_shared(0, MPI.SEEK_SET)']
    read = [rng.randint(0, 6) for _ in range(size)]
    lines += ['buf = fill("{}", {})'.format(dt, per_rank(read)),
              'st = MPI.Status()']
    if rng.random() < 0.5:
        lines.append('f.Read_ordered(buf, st)')
    else:
        lines += ['f.Read_ordered_begin(buf)',
                  'f.Read_ordered_end(buf, st)']
    lines.append('rec({}, "read-ordered", (st.Get_count(et), buf, '
                 'f.Get_position_shared()))'.format(k))
    return lines


OPS = (op_io,)
