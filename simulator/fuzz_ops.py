"""The operation kinds a fuzz program is made of, and what they share.

:func:`random_op` draws one kind and lets it append its block to a
:class:`simulator.fuzz_gen.Builder`. Kinds live in ``fuzz_coll``
(buffer collectives), ``fuzz_obj`` (object collectives), ``fuzz_p2p``
(point to point) and here (communicator management).
"""
UNDEFINED = -32766      # MPI.UNDEFINED in Open MPI and the simulator

INTS = ('int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
        'uint64')
FLOATS = ('float16', 'float32', 'float64')
COMPLEX = ('complex64', 'complex128')
DTYPES = INTS + FLOATS + COMPLEX + ('bool',)

# Which predefined reductions MPI defines per dtype kind, and the kind
# of values each needs (see fuzz_runtime.data).
OPS_BY_KIND = {
    'i': ('SUM', 'PROD', 'MAX', 'MIN', 'LAND', 'LOR', 'LXOR', 'BAND',
          'BOR', 'BXOR'),
    'f': ('SUM', 'PROD', 'MAX', 'MIN'),
    'c': ('SUM', 'PROD'),
    'b': ('LAND', 'LOR', 'LXOR'),
}
VALUES_FOR_OP = {'SUM': 'sum', 'PROD': 'prod', 'MAX': 'cmp', 'MIN': 'cmp',
                 'LAND': 'logic', 'LOR': 'logic', 'LXOR': 'logic',
                 'BAND': 'any', 'BOR': 'any', 'BXOR': 'any'}

# Named MPI datatypes both mpi4py and the simulator know, per dtype.
NAMED_TYPES = {
    'int8': ('INT8_T', 'SIGNED_CHAR'), 'int16': ('INT16_T', 'SHORT'),
    'int32': ('INT32_T', 'INT'), 'int64': ('INT64_T', 'LONG', 'LONG_LONG'),
    'uint8': ('UINT8_T', 'UNSIGNED_CHAR'),
    'uint16': ('UINT16_T', 'UNSIGNED_SHORT'),
    'uint32': ('UINT32_T', 'UNSIGNED'),
    'uint64': ('UINT64_T', 'UNSIGNED_LONG'),
    'float32': ('FLOAT',), 'float64': ('DOUBLE',),
    'complex64': ('C_FLOAT_COMPLEX',), 'complex128': ('C_DOUBLE_COMPLEX',),
    'bool': ('C_BOOL',),
}


def dtype_kind(dtype):
    """NumPy's kind letter, with unsigned folded into integers."""
    return {'int': 'i', 'uin': 'i', 'flo': 'f', 'com': 'c',
            'boo': 'b'}[dtype[:3]]


def pick_count(rng, big=True):
    """Mostly small element counts, some zero, a few large enough to
    make Open MPI switch algorithms."""
    roll = rng.random()
    if roll < 0.1:
        return 0
    if roll < 0.7 or not big:
        return rng.randint(1, 8)
    if roll < 0.9:
        return rng.randint(9, 100)
    if roll < 0.98:
        return rng.randint(100, 3000)
    return rng.randint(3000, 40000)


def pick_reduction(rng, dtypes=DTYPES):
    """(dtype, op name, value kind) of a valid buffer reduction."""
    dtype = rng.choice(dtypes)
    op = rng.choice(OPS_BY_KIND[dtype_kind(dtype)])
    return dtype, op, VALUES_FOR_OP[op]


def pick_type(rng, dtype):
    """How a buffer names its datatype: None (mpi4py picks it from the
    array's typecode) or the name of an MPI datatype of that dtype."""
    named = NAMED_TYPES.get(dtype)
    if named is None or rng.random() < 0.5:
        return None
    return rng.choice(named)


def spec(rng, var, dtype, count=None, mpi_type=False):
    """An mpi4py buffer spec for array ``var``: the bare array, or a list
    naming the datatype (and ``count`` when given). ``mpi_type`` is a
    :func:`pick_type` result to use (reductions need the same datatype
    on both sides); by default one is drawn."""
    if mpi_type is False:
        mpi_type = pick_type(rng, dtype)
    if mpi_type is None:
        if count is None:
            return var
        return '[{}, {}, MPI._typedict[{}.dtype.char]]'.format(
            var, count, var)
    if count is None:
        return '[{}, MPI.{}]'.format(var, mpi_type)
    return '[{}, {}, MPI.{}]'.format(var, count, mpi_type)


def per_rank(values):
    """Code for ``values[r]`` (one literal per comm rank)."""
    return '{!r}[r]'.format(list(values))


# -- communicator management ---------------------------------------------
def op_split(b):
    """Split with random colors (UNDEFINED included) and tied keys."""
    from simulator.fuzz_gen import Entity
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
    from simulator.fuzz_gen import Entity
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
    from simulator.fuzz_gen import Entity
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


def random_op(b):
    """Append one random operation to builder ``b``."""
    from simulator import fuzz_coll, fuzz_obj, fuzz_p2p
    live = len(b.entities)
    comm_ops = [(op_split, 3 if live < 12 else 0),
                (op_dup, 2 if live < 12 else 0),
                (op_split_type, 1 if live < 12 else 0),
                (op_free, 2 if live > 8 else 1), (op_comm_info, 1),
                (op_datatype_info, 0.3)]
    table = (comm_ops + [(f, 3) for f in fuzz_coll.OPS] +
             [(f, 2) for f in fuzz_obj.OPS] +
             [(f, 4) for f in fuzz_p2p.OPS])
    kinds, weights = zip(*table)
    b.rng.choices(kinds, weights)[0](b)
