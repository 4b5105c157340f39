"""MAXLOC / MINLOC for fuzz programs: on (value, index) pair types and
on Python objects.

Buffers are NumPy record arrays laid out like the C pair structs MPI
defines (``{double; int}`` padded to 16 bytes for DOUBLE_INT...), with
field names of the program's own choosing. Values are small integers, so
ties are frequent: MPI then keeps the smaller index, which makes the
result independent of the reduction order.
"""
from simulator.fuzz.model import pick_count

__all__ = ['OPS', 'op_loc_buffers', 'op_loc_objects']

# MPI pair type -> (value dtype, the struct's alignment padding).
PAIRS = {'FLOAT_INT': 'f4', 'DOUBLE_INT': 'f8', 'LONG_INT': 'i8',
         'TWOINT': 'i4', 'SHORT_INT': 'i2'}
_FIELDS = (('v', 'i'), ('value', 'index'), ('a', 'b'), ('x', 'loc'))


def _record_dtype(rng, pair):
    names = rng.choice(_FIELDS)
    return 'np.dtype([({!r}, {!r}), ({!r}, "i4")], align=True)'.format(
        names[0], PAIRS[pair], names[1]), names


def op_loc_buffers(b):
    """A MAXLOC/MINLOC reduction of pair-type buffers."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    pair = rng.choice(sorted(PAIRS))
    op = rng.choice(('MAXLOC', 'MINLOC'))
    call = rng.choice(('Allreduce', 'Iallreduce', 'Reduce', 'Ireduce',
                       'Scan', 'Exscan', 'Reduce_scatter_block'))
    n = pick_count(rng, big=False)
    root = rng.randrange(e.size)
    in_place = rng.random() < 0.3
    dtype, (value, index) = _record_dtype(rng, pair)
    total = n * e.size if call == 'Reduce_scatter_block' else n
    lines = ['dt = ' + dtype,
             's = np.zeros({}, dt)'.format(total),
             'vals = data({}, r, "int8", {}, "logic")'.format(k, total),
             # Many ties: values 0..3, indices from the rank.
             's[{!r}] = vals % 4'.format(value),
             's[{!r}] = r * 100 + np.arange({}) % 5'.format(index, total),
             'out = np.full({}, 0, dt)'.format(n),
             "out[{!r}] = -9".format(value)]
    t = 'MPI.' + pair
    wait = '.Wait()' if call.startswith('I') else ''
    rooted = call in ('Reduce', 'Ireduce')
    where = ', root={}'.format(root) if rooted else ''
    if in_place and call == 'Reduce_scatter_block':
        lines += ['out = s.copy()',
                  'c.{}(MPI.IN_PLACE, [out, {}], op=MPI.{}){}'.format(
                      call, t, op, wait), 'out = out[:{}]'.format(n)]
    elif in_place and rooted:
        lines += ['if r == {}:'.format(root),
                  '    out[:] = s',
                  '    c.{}(MPI.IN_PLACE, [out, {}], op=MPI.{}{}){}'.format(
                      call, t, op, where, wait),
                  'else:',
                  '    c.{}([s, {}], None, op=MPI.{}{}){}'.format(
                      call, t, op, where, wait)]
    elif in_place:
        lines += ['out[:] = s',
                  'c.{}(MPI.IN_PLACE, [out, {}], op=MPI.{}){}'.format(
                      call, t, op, wait)]
    else:
        lines.append('c.{}([s, {}], [out, {}], op=MPI.{}{}){}'.format(
            call, t, t, op, where, wait))
    # The fields, not the records: the struct's padding bytes are
    # whatever MPI's temporary buffers held.
    lines.append('got = (out[{!r}].copy(), out[{!r}].copy())'.format(
        value, index))
    if call == 'Exscan':
        # Rank 0's Exscan output is undefined.
        lines.append('rec({}, "out", got if r else None)'.format(k))
    elif rooted:
        lines.append('rec({}, "out", got if r == {} else None)'.format(
            k, root))
    else:
        lines.append('rec({}, "out", got)'.format(k))
    b.on_entity(e, '{} {} {} x{}{} in_place={}'.format(
        call, op, pair, n, ' root={}'.format(root) if rooted else '',
        in_place), lines)


def op_loc_objects(b):
    """MAXLOC/MINLOC of (value, index) objects (mpi4py's own
    reduction)."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    op = rng.choice(('MAXLOC', 'MINLOC'))
    call = rng.choice(('allreduce', 'reduce', 'scan', 'exscan'))
    kind = rng.choice(('int', 'float', 'str'))
    values = []
    for _ in e.members:
        v = rng.randint(0, 3)
        values.append({'int': repr(v), 'float': repr(v / 4),
                       'str': repr('abcd'[v])}[kind])
    index = [rng.randint(0, 3) for _ in e.members]
    root = rng.randrange(e.size)
    pairs = '[{}][r]'.format(', '.join(
        '({}, {})'.format(v, i) for v, i in zip(values, index)))
    args = ', root={}'.format(root) if call == 'reduce' else ''
    b.on_entity(e, '{} {} {} objects'.format(call, op, kind), [
        'got = c.{}({}, op=MPI.{}{})'.format(call, pairs, op, args),
        'rec({}, "got", got)'.format(k),
    ])


OPS = (op_loc_buffers, op_loc_buffers, op_loc_objects)
