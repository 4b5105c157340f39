"""What every fuzz operation kind shares: the generator's view of the
world (:class:`Entity`, :class:`Builder`), the dtypes and reductions MPI
defines, and helpers that draw counts and buffer specs.

The kinds themselves live in :mod:`simulator.fuzz.comm_ops` (communicator
management), :mod:`~simulator.fuzz.coll` (buffer collectives),
:mod:`~simulator.fuzz.obj` (object collectives),
:mod:`~simulator.fuzz.p2p` (point to point, matched probes),
:mod:`~simulator.fuzz.icoll` (non-blocking collectives),
:mod:`~simulator.fuzz.loc` (MAXLOC/MINLOC),
:mod:`~simulator.fuzz.persist` (persistent requests),
:mod:`~simulator.fuzz.groups` (groups and the communicators made from
them), :mod:`~simulator.fuzz.rma` (one-sided communication),
:mod:`~simulator.fuzz.dtypes` (derived datatypes) and
:mod:`~simulator.fuzz.topo` (process topologies);
:mod:`~simulator.fuzz.gen` draws among them by family.
"""
import random

__all__ = ['Entity', 'Builder', 'DTYPES', 'UNDEFINED', 'NAMED_TYPES',
           'per_rank', 'dtype_kind', 'pick_count', 'pick_reduction',
           'pick_type', 'spec']

UNDEFINED = -32766      # MPI.UNDEFINED in Open MPI and the simulator

INTS = ('int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
        'uint64')
FLOATS = ('float16', 'float32', 'float64')
COMPLEX = ('complex64', 'complex128')
DTYPES = INTS + FLOATS + COMPLEX + ('bool',)

# Which predefined reductions MPI defines per dtype kind, and the kind
# of values each needs (see runtime.data).
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


class Entity:
    """One communicator as the generator sees it: the program variable
    that holds it, and its members (world ranks) in comm-rank order.

    A Split stores every color's communicator in one variable (each rank
    holds its own), so several entities can share a variable.
    """

    def __init__(self, var, members, freeable=True):
        self.var = var
        self.members = tuple(members)
        self.freeable = freeable

    @property
    def size(self):
        return len(self.members)


class Builder:
    """Collects the program's operations from one random stream."""

    def __init__(self, seed, size):
        self.rng = random.Random('fuzz:{}:{}'.format(seed, size))
        self.seed = seed
        self.world_size = size
        self.entities = [Entity('c0', range(size), freeable=False)]
        self.entities += [Entity('cs', [w], freeable=False)
                          for w in range(size)]
        self.blocks = []
        self.op_id = 0
        self._vars = 0

    def new_var(self):
        """A fresh communicator variable name."""
        self._vars += 1
        return 'c{}'.format(self._vars)

    def tag(self, index):
        """A tag no other message of the program uses."""
        return (self.op_id % 1500) * 20 + index

    def emit(self, title, members, lines):
        """Append one operation: ``lines`` run on the world ranks
        ``members`` (all of them when ``members`` is None)."""
        head = ['# --- op {}: {}'.format(self.op_id, title)]
        if members is None:
            self.blocks.append('\n'.join(head + list(lines)))
        else:
            guard = 'if W in {!r}:'.format(tuple(sorted(members)))
            self.blocks.append('\n'.join(
                head + [guard] + ['    ' + line for line in lines]))

    def on_entity(self, entity, title, lines):
        """Append an operation run by the members of ``entity``, with
        ``c`` bound to its communicator and ``r`` to the comm rank."""
        self.emit('{} on {} {}'.format(title, entity.var,
                                       list(entity.members)),
                  entity.members,
                  ['c = {}'.format(entity.var), 'r = c.Get_rank()'] +
                  list(lines))

    def pick_entity(self, min_size=1):
        """A live communicator with at least ``min_size`` ranks (or the
        largest there is)."""
        choices = [e for e in self.entities if e.size >= min_size] or \
            [self.entities[0]]
        # Favour real multi-rank communicators over COMM_SELF.
        weights = [4 if e.size > 1 else 1 for e in choices]
        return self.rng.choices(choices, weights)[0]
