"""Object (pickled) collectives for fuzz programs, and random objects.

Objects are written into the program as Python literals, one per comm
rank. Reductions draw objects their operation accepts; several families
make the order of combination visible (string and list concatenation,
float sums, and a user operation that builds the tree itself).
"""
_LETTERS = 'abcxyz'


def _float_literal(rng):
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(('float("nan")', 'float("inf")', '-0.0'))
    return repr(rng.gauss(0, 1) * 10.0 ** rng.randint(-3, 3))


def any_object(rng, depth=0, arrays=True):
    """A Python literal for a random picklable object (``arrays``: NumPy
    arrays allowed; they have no truth value for LAND/LOR/LXOR)."""
    leaves = [
        lambda: repr(rng.randint(-1000, 1000)),
        lambda: repr(rng.randint(-2 ** 80, 2 ** 80)),
        lambda: _float_literal(rng),
        lambda: repr(''.join(rng.choice(_LETTERS)
                             for _ in range(rng.randint(0, 5)))),
        lambda: repr(bytes(rng.randrange(256)
                           for _ in range(rng.randint(0, 4)))),
        lambda: rng.choice(('None', 'True', 'False', '0', '""', '()')),
        lambda: 'complex({}, {})'.format(_float_literal(rng),
                                         _float_literal(rng)),
        lambda: 'np.arange({}, dtype={!r})'.format(
            rng.randint(0, 4), rng.choice(('int16', 'float32', 'uint8'))),
        lambda: 'np.float32({})'.format(_float_literal(rng)),
    ]
    if not arrays:
        del leaves[7]
    if depth < 2 and rng.random() < 0.3:
        items = [any_object(rng, depth + 1, arrays)
                 for _ in range(rng.randint(0, 3))]
        shape = rng.randrange(4)
        if shape == 0:
            return '[{}]'.format(', '.join(items))
        if shape == 1:
            return '({})'.format(''.join(i + ', ' for i in items))
        if shape == 2:
            return '{{{}}}'.format(', '.join(
                '{!r}: {}'.format(j, v) for j, v in enumerate(items)))
        return '{{{}}}'.format(', '.join(
            repr(rng.randint(0, 9)) for _ in range(len(items) + 1)))
    return rng.choice(leaves)()


def _family(rng, op, size):
    """(per-rank literals, description) that ``op`` can combine."""
    def each(make):
        return [make() for _ in range(size)]

    def small_int():
        return repr(rng.randint(-4, 4))
    if op in ('LAND', 'LOR', 'LXOR'):
        return each(lambda: any_object(rng, arrays=False)), 'any'
    if op in ('BAND', 'BOR', 'BXOR'):
        kind = rng.choice(('int', 'bool', 'set'))
        make = {'int': lambda: repr(rng.randint(-2 ** 40, 2 ** 40)),
                'bool': lambda: rng.choice(('True', 'False')),
                'set': lambda: repr(set(rng.sample(range(8),
                                                   rng.randint(1, 4))))}
        return each(make[kind]), kind
    if op == 'PROD':
        kind = rng.choice(('int', 'float'))
        make = small_int if kind == 'int' else \
            (lambda: repr(rng.uniform(0.5, 2.0)))
        return each(make), kind
    if op in ('MAX', 'MIN'):
        kind = rng.choice(('int', 'float', 'ties', 'str', 'tuple'))
        make = {'int': small_int,
                'float': lambda: repr(rng.gauss(0, 1)),
                'ties': lambda: rng.choice(('1', '1.0', 'True',
                                            'np.int64(1)', '2')),
                'str': lambda: repr(rng.choice(('a', 'ab', 'b', ''))),
                'tuple': lambda: repr((rng.randint(0, 2),
                                       rng.randint(0, 2)))}[kind]
        return each(make), kind
    # SUM and user operations: concatenations show the order.
    kind = rng.choice(('int', 'float', 'str', 'list', 'tuple', 'array',
                       'complex'))
    make = {'int': lambda: repr(rng.randint(-2 ** 70, 2 ** 70)),
            'float': lambda: repr(rng.gauss(0, 1) *
                                  10.0 ** rng.randint(-8, 8)),
            'str': lambda: repr(rng.choice(_LETTERS) * rng.randint(0, 2)),
            'list': lambda: repr([rng.randint(0, 9)
                                  for _ in range(rng.randint(0, 2))]),
            'tuple': lambda: repr((rng.choice(_LETTERS),)),
            'array': lambda: 'np.array([{}])'.format(', '.join(
                repr(rng.gauss(0, 1)) for _ in range(3))),
            'complex': lambda: 'complex({!r}, {!r})'.format(
                rng.gauss(0, 1), rng.gauss(0, 1))}[kind]
    return each(make), kind


# mpi4py passes user functions a third argument (None for objects).
_USER_OPS = ('lambda a, b, t: [a, b]', 'lambda a, b, t: a + b')


def _reduction(rng, size):
    """(op expression, setup lines, cleanup lines, values, title)."""
    if rng.random() < 0.15:
        fn = rng.choice(_USER_OPS)
        commute = rng.random() < 0.5
        values, kind = _family(rng, 'SUM', size)
        return ('uop', ['uop = MPI.Op.Create({}, commute={})'.format(
            fn, commute)], ['uop.Free()'], values,
            'user op {} commute={} on {}'.format(fn, commute, kind))
    op = rng.choice(('SUM', 'SUM', 'PROD', 'MAX', 'MIN', 'LAND', 'LOR',
                     'LXOR', 'BAND', 'BOR', 'BXOR'))
    values, kind = _family(rng, op, size)
    return 'MPI.' + op, [], [], values, '{} on {}'.format(op, kind)


def _values_line(values):
    return 'v = [{}][r]'.format(', '.join(values))


def op_obj_reduce(b):
    """allreduce, reduce, scan or exscan of objects."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    call = rng.choice(('allreduce', 'reduce', 'scan', 'exscan'))
    op, setup, cleanup, values, title = _reduction(rng, e.size)
    args = 'v, op={}'.format(op)
    if call == 'reduce':
        args += ', root={}'.format(rng.randrange(e.size))
    b.on_entity(e, '{}({}) {}'.format(call, args, title),
                [_values_line(values)] + setup +
                ['rec({}, "result", c.{}({}))'.format(k, call, args)] +
                cleanup)


def op_obj_coll(b):
    """bcast, gather, scatter, allgather or alltoall of objects."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    call = rng.choice(('bcast', 'gather', 'scatter', 'allgather',
                       'alltoall'))
    root = rng.randrange(e.size)
    if call in ('scatter', 'alltoall'):
        values = ['[{}]'.format(', '.join(any_object(rng)
                                          for _ in range(e.size)))
                  for _ in range(e.size)]
    else:
        values = [any_object(rng) for _ in range(e.size)]
    lines = [_values_line(values)]
    if call == 'bcast':
        lines.append('got = c.bcast(v if r == {0} else None, root={0})'
                     .format(root))
    elif call == 'scatter':
        lines.append('got = c.scatter(v if r == {0} else None, root={0})'
                     .format(root))
    elif call == 'gather':
        lines.append('got = c.gather(v, root={})'.format(root))
    else:
        lines.append('got = c.{}(v)'.format(call))
    lines.append('rec({}, "result", got)'.format(k))
    b.on_entity(e, '{} root={}'.format(call, root), lines)


OPS = (op_obj_reduce, op_obj_coll)
