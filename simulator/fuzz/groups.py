"""Groups for fuzz programs: a communicator's group, set operations on
groups, and communicators made from a group (``Create_group``, called by
the group's members only, or ``Create``, called by every rank of the
parent), which later operations then use like any other.
"""
from simulator.fuzz.model import Entity

__all__ = ['OPS', 'op_group_comm']


def _subset(rng, size):
    """(code for a subgroup of ``g``, its ranks of ``g`` in order)."""
    how = rng.choice(('Incl', 'Excl', 'Range_incl'))
    if how == 'Incl':
        ranks = rng.sample(range(size), rng.randint(1, size))
        return 'g.Incl({!r})'.format(ranks), ranks
    if how == 'Excl' and size > 1:
        gone = rng.sample(range(size), rng.randint(0, size - 1))
        return ('g.Excl({!r})'.format(gone),
                [x for x in range(size) if x not in gone])
    first = rng.randrange(size)
    last = rng.randrange(size)
    stride = rng.choice((1, 2)) * (1 if last >= first else -1)
    ranks = list(range(first, last + (1 if stride > 0 else -1), stride))
    return 'g.Range_incl([({}, {}, {})])'.format(first, last, stride), ranks


def op_group_comm(b):
    """Group queries and set operations, then a communicator over a
    subgroup and one Allgather on it."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    code, ranks = _subset(rng, e.size)
    other, _ = _subset(rng, e.size)
    var = b.new_var()
    create = rng.choice(('Create_group', 'Create'))
    members = [e.members[x] for x in ranks]
    lines = [
        'g = c.Get_group()',
        'sub = {}'.format(code),
        'oth = {}'.format(other),
        'rec({}, "sub", (sub.Get_size(), sub.Get_rank(), '
        'MPI.Group.Compare(g, sub), MPI.Group.Compare(sub, sub)))'.format(k),
        'for name, h in (("union", MPI.Group.Union(sub, oth)), '
        '("inter", MPI.Group.Intersection(sub, oth)), '
        '("diff", MPI.Group.Difference(sub, oth))):',
        '    rec({}, name, (h.Get_size(), h.Get_rank(), '
        'MPI.Group.Translate_ranks(h, list(range(h.Get_size())), g)))'.format(
            k),
        '    h.Free()',
        'rec({}, "translate", MPI.Group.Translate_ranks(g, '
        'list(range(g.Get_size())), sub))'.format(k),
    ]
    if create == 'Create_group':
        lines += ['{} = MPI.COMM_NULL'.format(var),
                  'if r in {!r}:'.format(sorted(ranks)),
                  '    {} = c.Create_group(sub, tag={})'.format(
                      var, b.tag(0))]
    else:
        lines.append('{} = c.Create(sub)'.format(var))
    lines += ['rec({}, "null", {} == MPI.COMM_NULL)'.format(k, var),
              'if {} != MPI.COMM_NULL:'.format(var),
              '    n = {v}.Get_rank()'.format(v=var),
              '    rec({}, "rank/size", (n, {}.Get_size()))'.format(k, var),
              '    rec({}, "gather", {}.allgather(r))'.format(k, var),
              'for h in (g, sub, oth):',
              '    h.Free()']
    b.on_entity(e, '{} {} ranks={}'.format(create, code, ranks), lines)
    b.entities.append(Entity(var, members))


OPS = (op_group_comm,)
