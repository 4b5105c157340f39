"""Communicator management for fuzz programs: Split, Dup, Split_type,
Free and what a rank can ask of a communicator or datatype locally."""
from simulator.fuzz.model import NAMED_TYPES, UNDEFINED, Entity, per_rank

__all__ = ['op_split', 'op_dup', 'op_split_type', 'op_free',
           'op_comm_info', 'op_datatype_info']


def op_split(b):
    """Split with random colors (UNDEFINED included) and tied keys."""
    parent = b.pick_entity()
    rng = b.rng
    colors = [rng.choice((0, 0, 1, 2, UNDEFINED)) for _ in parent.members]
    keys = [rng.randint(-2, 3) for _ in parent.members]
    var = b.new_var()
    b.on_entity(parent, 'Split colors={} keys={}'.format(colors, keys), [
        '{} = c.Split({}, {})'.format(var, per_rank(colors),
                                      per_rank(keys)),
        'rec({}, "null", {} == MPI.COMM_NULL)'.format(b.op_id, var),
        'if {} != MPI.COMM_NULL:'.format(var),
        '    rec({}, "rank/size", ({v}.Get_rank(), {v}.Get_size()))'.format(
            b.op_id, v=var),
        '    rec({}, "compare-parent", c.Compare({}))'.format(b.op_id, var),
        '    rec({}, "name", {}.Get_name())'.format(b.op_id, var),
    ])
    for color in sorted(set(colors) - {UNDEFINED}):
        members = sorted((keys[i], i) for i in range(parent.size)
                         if colors[i] == color)
        b.entities.append(Entity(var, [parent.members[i]
                                       for _, i in members]))


def op_dup(b):
    """Dup (or Clone), compared with its parent."""
    parent = b.pick_entity()
    var = b.new_var()
    how = b.rng.choice(('Dup', 'Dup', 'Clone'))
    b.on_entity(parent, how, [
        '{} = c.{}()'.format(var, how),
        'rec({}, "rank/size", ({v}.Get_rank(), {v}.Get_size()))'.format(
            b.op_id, v=var),
        'rec({}, "compare", ({v}.Compare(c), c.Compare({v}), '
        '{v}.Compare({v}), {v}.Get_name()))'.format(b.op_id, v=var),
    ])
    b.entities.append(Entity(var, parent.members))


def op_split_type(b):
    """Split_type(COMM_TYPE_SHARED): one node, so one group by key."""
    parent = b.pick_entity()
    keys = [b.rng.randint(0, 2) for _ in parent.members]
    var = b.new_var()
    b.on_entity(parent, 'Split_type keys={}'.format(keys), [
        '{} = c.Split_type(MPI.COMM_TYPE_SHARED, key={})'.format(
            var, per_rank(keys)),
        'rec({}, "rank/size", ({v}.Get_rank(), {v}.Get_size()))'.format(
            b.op_id, v=var),
    ])
    order = sorted((keys[i], i) for i in range(parent.size))
    b.entities.append(Entity(var, [parent.members[i] for _, i in order]))


def op_free(b):
    """Free every communicator one variable holds."""
    freeable = [e for e in b.entities if e.freeable]
    if not freeable:
        return op_dup(b)
    var = b.rng.choice(freeable).var
    members = sorted(w for e in b.entities if e.var == var
                     for w in e.members)
    b.emit('Free {}'.format(var), members, [
        '{}.Free()'.format(var),
        'rec({}, "null-after-free", {} == MPI.COMM_NULL)'.format(
            b.op_id, var),
    ])
    b.entities = [e for e in b.entities if e.var != var]


def op_comm_info(b):
    """What a rank can ask of a communicator without communicating."""
    entity = b.pick_entity()
    b.on_entity(entity, 'info', [
        'rec({}, "info", (r, c.Get_size(), c.Is_inter(), c.Is_intra(), '
        'c.Compare(c0), c.Get_name()))'.format(b.op_id),
    ])


def op_datatype_info(b):
    """Names and sizes of the datatypes mpi4py picks by typecode."""
    rng = b.rng
    codes = ''.join(rng.sample('?bBhHiIlLqQefdFD', 4))
    named = rng.sample(sorted({n for v in NAMED_TYPES.values() for n in v}),
                       3)
    b.emit('datatypes {} {}'.format(codes, named), None, [
        'rec({}, "typedict", [(MPI._typedict[ch].Get_name(), '
        'MPI._typedict[ch].Get_size()) for ch in {!r}])'.format(
            b.op_id, codes),
        'rec({}, "named", [(t.Get_name(), t.Get_size()) for t in '
        '[{}]])'.format(b.op_id, ', '.join('MPI.' + n for n in named)),
    ])


