"""What string hashing looks like across ranks: each process draws its
own hash secret unless PYTHONHASHSEED fixes it, so hash('key') (and a
placement by it) differs between ranks; within a rank equal objects hash
equal and numbers hash alike everywhere."""
import datetime

from mpi4py import MPI

world = MPI.COMM_WORLD
keys = ['alpha', b'beta', ('gamma', 1), frozenset({'delta'}),
        datetime.date(2026, 11, 27)]
mine = [hash(key) for key in keys]
everyone = world.allgather(mine)
facts = {
    'strings_hash_apart': all(len({h[i] for h in everyone}) == world.size
                              for i in range(len(keys))),
    'placement_agrees': len({h[0] % 1000003 for h in everyone}) == 1,
    'numbers_agree': len(set(world.allgather(
        (hash(7), hash(2.5), hash((1, 2)))))) == 1,
    'equal_hash_equal': hash(('a', 1)) == hash(('a', 1.0)) and
    hash(b'ab') == hash(memoryview(b'ab')) and mine == [hash(k) for k in keys],
}
for name in sorted(facts):
    print('OUT rank={} {}={}'.format(world.rank, name, facts[name]))
