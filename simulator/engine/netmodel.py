"""The network model: how long a message or a collective takes.

A :class:`Machine` describes a cluster the way the model needs it: link
classes (``intra``: between ranks of one node, ``inter``: between nodes),
each with a latency (seconds) and a bandwidth (bytes per second), how many
ranks run on a node and how many cores a node has. Time follows the
latency-bandwidth (Hockney) model: a message of ``n`` bytes takes
``latency + n / bandwidth``. A collective costs what the algorithm an MPI
library would pick for it costs in that model (the formulas of Thakur,
Rabenseifner and Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 2005); :meth:`Machine.collective_time` names
the algorithm it charged. Which algorithm: ``selection = "threshold"``
(the default) takes a latency-optimal one below 64 KiB and a
bandwidth-optimal one from there; ``selection = "openmpi"`` follows Open
MPI 5.0's ``coll/tuned`` fixed decision rules where the model has them
(Allreduce), so a description of a machine running Open MPI charges what
Open MPI runs. ``copy_bandwidth`` (bytes/s of a memory copy) charges the
copy of a non-in-place Allreduce's send buffer into its receive buffer
(and the copy recursive doubling always makes). Both memory rates
(``reduce_bandwidth``, ``copy_bandwidth``) are a number or a table of
``[bytes, rate]`` points (:class:`Rate`): a collective's buffers stay in
the caches when small and stream from memory when large, and the rate
drops by a factor of two to three between the two (SMPI models its
links with such piecewise factors).

Descriptions are TOML or JSON files (:func:`load_machine`); the shipped
ones live in ``simulator/machines/``.
"""
import json
import math
import os

try:
    import tomllib
except ImportError:         # Python 3.10: JSON descriptions only
    tomllib = None

__all__ = ['Link', 'Rate', 'Machine', 'load_machine', 'machine_path',
           'family_of', 'ALGORITHMS', 'SELECTIONS', 'DEFAULT_MACHINE']

_MACHINES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'machines')
DEFAULT_MACHINE = 'shared_memory'

# Algorithms per collective family; the first is the small-message choice,
# the second the large-message one (see _AUTO_SWITCH_BYTES).
ALGORITHMS = {
    'allreduce': ('recursive_doubling', 'ring', 'segmented_ring',
                  'rabenseifner', 'nonoverlapping', 'basic_linear'),
    'bcast': ('binomial', 'scatter_allgather'),
    'reduce': ('binomial', 'reduce_scatter_gather'),
    'allgather': ('recursive_doubling', 'ring'),
    'gather': ('binomial',),
    'scatter': ('binomial',),
    'alltoall': ('pairwise',),
    'reduce_scatter': ('ring',),
    'barrier': ('dissemination',),
    'scan': ('recursive_doubling',),
}
# MPICH's and Open MPI's tuned defaults switch to bandwidth-optimal
# algorithms around a few tens of KiB.
_AUTO_SWITCH_BYTES = 64 * 1024
# The large-message choice of selection "threshold" (the first entry of
# ALGORITHMS is the small-message one).
_LARGE = {'allreduce': 'ring'}

# Open MPI 5.0.x, coll/tuned's fixed decision for a commutative Allreduce
# (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, v5.0.9): per
# communicator size below the first figure, (bytes below, algorithm)
# rows; the last row of each has no bound.
_OPENMPI_ALLREDUCE = (
    (4, ((8, 'ring'), (4096, 'recursive_doubling'), (8192, 'ring'),
         (16384, 'recursive_doubling'), (65536, 'ring'),
         (262144, 'segmented_ring'), (None, 'rabenseifner'))),
    (8, ((16, 'ring'), (8192, 'recursive_doubling'),
         (None, 'rabenseifner'))),
    (16, ((8192, 'recursive_doubling'), (None, 'rabenseifner'))),
    (32, ((64, 'segmented_ring'), (4096, 'recursive_doubling'),
          (None, 'rabenseifner'))),
    (64, ((128, 'segmented_ring'), (None, 'rabenseifner'))),
    (128, ((262144, 'recursive_doubling'), (None, 'rabenseifner'))),
    (256, ((131072, 'nonoverlapping'), (262144, 'recursive_doubling'),
           (None, 'rabenseifner'))),
    (512, ((4096, 'nonoverlapping'), (None, 'rabenseifner'))),
    (2048, ((2048, 'nonoverlapping'), (16384, 'recursive_doubling'),
            (None, 'rabenseifner'))),
    (4096, ((2048, 'nonoverlapping'), (4096, 'segmented_ring'),
            (16384, 'recursive_doubling'), (None, 'rabenseifner'))),
    (None, ((2048, 'nonoverlapping'), (16384, 'segmented_ring'),
            (32768, 'recursive_doubling'), (None, 'rabenseifner'))),
)
SELECTIONS = ('threshold', 'openmpi')


def _first_below(rows, value):
    for bound, choice in rows:
        if bound is None or value < bound:
            return choice

# Collective op name (mpi4py spelling, any case) -> family.
_FAMILY = {
    'allreduce': 'allreduce', 'iallreduce': 'allreduce',
    'bcast': 'bcast', 'ibcast': 'bcast',
    'reduce': 'reduce',
    'allgather': 'allgather', 'allgatherv': 'allgather',
    'gather': 'gather', 'gatherv': 'gather',
    'scatter': 'scatter', 'scatterv': 'scatter',
    'alltoall': 'alltoall', 'alltoallv': 'alltoall',
    'reduce_scatter': 'reduce_scatter',
    'reduce_scatter_block': 'reduce_scatter',
    'reducescatter': 'reduce_scatter',      # NCCL's reduceScatter
    'barrier': 'barrier', 'ibarrier': 'barrier',
    'scan': 'scan', 'exscan': 'scan',
    # Making a communicator agrees on (color, key) among all members.
    'split': 'allgather', 'split_type': 'allgather', 'dup': 'allgather',
}


def family_of(op):
    """The collective family of an op name (``Iallreduce``,
    ``ncclAllReduce`` -> ``'allreduce'``), or None."""
    name = op.lower()
    return _FAMILY.get(name[4:] if name.startswith('nccl') else name)


class Link:
    """A link class: ``latency`` seconds, ``bandwidth`` bytes/second."""

    __slots__ = ('name', 'latency', 'bandwidth')

    def __init__(self, name, latency, bandwidth):
        for what, value in (('latency', latency), ('bandwidth', bandwidth)):
            if not isinstance(value, (int, float)) or value < 0 or (
                    what == 'bandwidth' and value == 0):
                raise ValueError('link {!r}: {} must be a {} number, got '
                                 '{!r}'.format(name, what, 'positive'
                                               if what == 'bandwidth'
                                               else 'non-negative', value))
        self.name = name
        self.latency = float(latency)
        self.bandwidth = float(bandwidth)

    def time(self, nbytes):
        """Seconds for one message of ``nbytes`` bytes."""
        return self.latency + nbytes / self.bandwidth

    def __repr__(self):
        return '<Link {} {:.3g} s, {:.3g} B/s>'.format(
            self.name, self.latency, self.bandwidth)


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


class Rate:
    """Bytes/s of a memory operation (a copy, a reduction) inside a
    collective on buffers of ``nbytes``: one figure, or ``points``
    ``[(bytes, rate), ...]`` measured at a few buffer sizes. Between two
    points the rate is interpolated on the logarithm of the size; below
    the first and above the last it is that point's."""

    __slots__ = ('points',)

    def __init__(self, what, value):
        if _positive(value):
            self.points = [(1.0, float(value))]
            return
        if not (isinstance(value, (list, tuple)) and value):
            raise ValueError('{} must be a positive number of bytes/s or '
                             'a list of [bytes, bytes/s] points, got '
                             '{!r}'.format(what, value))
        for point in value:
            if not (isinstance(point, (list, tuple)) and len(point) == 2
                    and _positive(point[0]) and _positive(point[1])):
                raise ValueError('{}: each point must be [bytes, bytes/s], '
                                 'two positive numbers, got {!r}'.format(
                                     what, point))
        sizes = [size for size, _ in value]
        if sizes != sorted(set(sizes)):
            raise ValueError('{}: the points\' sizes must increase, got '
                             '{!r}'.format(what, sizes))
        self.points = [(float(n), float(r)) for n, r in value]

    def at(self, nbytes):
        """Bytes/s on buffers of ``nbytes``."""
        points = self.points
        if nbytes <= points[0][0]:
            return points[0][1]
        for (n0, r0), (n1, r1) in zip(points, points[1:]):
            if nbytes <= n1:
                w = math.log(nbytes / n0) / math.log(n1 / n0)
                return r0 + w * (r1 - r0)
        return points[-1][1]

    def __repr__(self):
        if len(self.points) == 1:
            return '<Rate {:.3g} B/s>'.format(self.points[0][1])
        return '<Rate {}>'.format(', '.join(
            '{:.0f} B: {:.3g} B/s'.format(n, r) for n, r in self.points))


def _log2(p):
    return math.ceil(math.log2(p)) if p > 1 else 0


def _cost(algorithm, p, n, a, b, g):
    """Seconds for ``algorithm`` over ``p`` ranks, ``n`` bytes, with
    latency ``a``, seconds per byte ``b`` and reduction seconds per byte
    ``g`` (0 for non-reducing collectives)."""
    if p <= 1:
        return 0.0
    frac = (p - 1) / p
    lg = _log2(p)
    if algorithm == 'recursive_doubling':
        return lg * (a + n * b + n * g)
    if algorithm in ('ring', 'segmented_ring'):
        # allreduce: reduce-scatter then allgather around the ring (the
        # segments pipeline, which this model does not see)
        return 2 * (p - 1) * a + 2 * frac * n * b + frac * n * g
    if algorithm == 'rabenseifner':
        # reduce-scatter by recursive halving, allgather by recursive
        # doubling over the largest power of two; the ranks beyond it
        # hand their data in first and get the result last
        q = 1 << (p.bit_length() - 1)
        extra = 0.0 if q == p else 2 * a + 2 * n * b + n * g
        fq = (q - 1) / q
        return 2 * _log2(q) * a + 2 * fq * n * b + fq * n * g + extra
    if algorithm == 'nonoverlapping':
        # a binomial Reduce, then a binomial Bcast
        return lg * (2 * a + 2 * n * b + n * g)
    if algorithm == 'basic_linear':
        # the root receives and reduces every rank's data, then sends
        # the result to each
        return (p - 1) * (2 * a + 2 * n * b + n * g)
    if algorithm == 'binomial':
        return lg * (a + n * b + n * g)
    if algorithm == 'scatter_allgather':
        return (lg + p - 1) * a + 2 * frac * n * b
    if algorithm == 'reduce_scatter_gather':
        return 2 * lg * a + 2 * frac * n * b + frac * n * g
    if algorithm == 'dissemination':
        return lg * a
    if algorithm == 'pairwise':
        return (p - 1) * a + frac * n * b
    raise ValueError('unknown collective algorithm {!r}'.format(algorithm))


def _gather_cost(algorithm, p, n, a, b):
    # n is the gathered total: allgather / gather / scatter / ring halves
    if p <= 1:
        return 0.0
    frac = (p - 1) / p
    if algorithm == 'ring':
        return (p - 1) * a + frac * n * b
    return _log2(p) * a + frac * n * b     # recursive doubling, binomial


class Machine:
    """A described cluster: link classes, ranks and cores per node.

    ``links`` maps 'intra' and 'inter' to :class:`Link`; ``ranks_per_node``
    (None: all ranks on one node unless told otherwise) and
    ``cores_per_node`` (None: unlimited); ``reduce_bandwidth`` bytes/s
    a rank reduces (sums) at; ``copy_bandwidth`` bytes/s it copies
    memory at (None: copies are free), each a number or a :class:`Rate`'s
    points; ``compute_scale`` the default
    factor on measured compute; ``collectives`` family -> forced
    algorithm; ``selection`` how the others are chosen (see
    :data:`SELECTIONS`).
    """

    def __init__(self, name, intra, inter=None, ranks_per_node=None,
                 cores_per_node=None, reduce_bandwidth=None,
                 compute_scale=1.0, collectives=None, source=None,
                 copy_bandwidth=None, selection='threshold'):
        self.name = name
        self.links = {'intra': intra, 'inter': inter or intra}
        self.ranks_per_node = ranks_per_node
        self.cores_per_node = cores_per_node
        self.reduce_bandwidth, self.copy_bandwidth = (
            None if value is None or isinstance(value, Rate) else
            Rate('{}: {}'.format(name, what), value)
            for what, value in (('reduce_bandwidth', reduce_bandwidth),
                                ('copy_bandwidth', copy_bandwidth)))
        if selection not in SELECTIONS:
            raise ValueError('{}: unknown selection {!r} (known: {})'.format(
                name, selection, ', '.join(SELECTIONS)))
        self.selection = selection
        self.compute_scale = float(compute_scale)
        self.collectives = dict(collectives or {})
        self.source = source
        for family, algorithm in self.collectives.items():
            if family not in ALGORITHMS:
                raise ValueError('{}: unknown collective {!r} (known: {})'
                                 .format(name, family,
                                         ', '.join(sorted(ALGORITHMS))))
            if algorithm != 'auto' and algorithm not in ALGORITHMS[family]:
                raise ValueError('{}: {} cannot use algorithm {!r} (known: '
                                 '{})'.format(name, family, algorithm,
                                              ', '.join(ALGORITHMS[family])))

    def link(self, node_a, node_b):
        """The link class between two nodes."""
        return self.links['intra' if node_a == node_b else 'inter']

    def algorithm(self, family, nbytes, p=2):
        """The algorithm charged for a ``family`` collective of
        ``nbytes`` over ``p`` ranks."""
        forced = self.collectives.get(family, 'auto')
        if forced != 'auto':
            return forced
        if self.selection == 'openmpi' and family == 'allreduce':
            return _first_below(
                _first_below(_OPENMPI_ALLREDUCE, p), nbytes)
        choices = ALGORITHMS[family]
        if nbytes < _AUTO_SWITCH_BYTES:
            return choices[0]
        return _LARGE.get(family, choices[-1])

    def copy_time(self, algorithm, nbytes, in_place):
        """Seconds a rank copies its ``nbytes`` send buffer before
        ``algorithm`` runs: always for recursive doubling (it works on a
        copy), else unless the call is in place."""
        if not self.copy_bandwidth or (
                in_place and algorithm != 'recursive_doubling'):
            return 0.0
        return nbytes / self.copy_bandwidth.at(nbytes)

    def collective_time(self, op, p, nbytes, link):
        """(seconds, algorithm) for collective ``op`` over ``p`` ranks
        moving ``nbytes`` (per rank for reductions and broadcasts, the
        gathered total for gathers and all-to-all) over ``link``."""
        family = family_of(op)
        if family is None:
            raise ValueError('no cost model for collective {!r}'.format(op))
        algorithm = self.algorithm(family, nbytes, p)
        a, b = link.latency, 1.0 / link.bandwidth
        reduces = family in ('allreduce', 'reduce', 'reduce_scatter',
                             'scan')
        g = 1.0 / self.reduce_bandwidth.at(nbytes) if reduces and \
            self.reduce_bandwidth else 0.0
        if family in ('allgather', 'gather', 'scatter', 'reduce_scatter'):
            seconds = _gather_cost(algorithm, p, nbytes, a, b)
            if family == 'reduce_scatter' and p > 1:
                seconds += (p - 1) / p * nbytes * g
        else:
            seconds = _cost(algorithm, p, nbytes, a, b, g)
        return seconds, algorithm

    def nodes_for(self, size):
        """Nodes a job of ``size`` ranks takes on this machine."""
        if not self.ranks_per_node:
            return 1
        return -(-size // self.ranks_per_node)

    def __repr__(self):
        return '<Machine {!r}>'.format(self.name)


def machine_path(name):
    """The file of a shipped description (``'gpu_cluster'``) or ``name``
    itself when it is a path."""
    if os.path.exists(name):
        return name
    for ext in ('.toml', '.json'):
        path = os.path.join(_MACHINES, name + ext)
        if os.path.exists(path):
            return path
    shipped = sorted(os.path.splitext(f)[0] for f in os.listdir(_MACHINES))
    raise ValueError('no machine description {!r}: not a file, nor one of '
                     'the shipped ones ({})'.format(name, ', '.join(shipped)))


def _link(data, name, path):
    entry = data.get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict) or set(entry) - {'latency', 'bandwidth'} \
            or len(entry) != 2:
        raise ValueError('{}: [links.{}] needs exactly latency (s) and '
                         'bandwidth (bytes/s), got {!r}'.format(
                             path, name, entry))
    return Link(name, entry['latency'], entry['bandwidth'])


def load_machine(name=DEFAULT_MACHINE):
    """A :class:`Machine` from a TOML or JSON file, or a shipped name."""
    path = machine_path(name)
    with open(path, 'rb') as f:
        if path.endswith('.json'):
            data = json.load(f)
        elif tomllib is None:
            raise ValueError('{}: TOML needs Python 3.11 (tomllib); write '
                             'the description as JSON'.format(path))
        else:
            data = tomllib.load(f)
    known = {'name', 'links', 'ranks_per_node', 'cores_per_node',
             'reduce_bandwidth', 'copy_bandwidth', 'selection',
             'compute_scale', 'collectives'}
    unknown = set(data) - known
    if unknown:
        raise ValueError('{}: unknown keys {} (known: {})'.format(
            path, sorted(unknown), sorted(known)))
    links = data.get('links', {})
    intra = _link(links, 'intra', path)
    if intra is None:
        raise ValueError('{}: [links.intra] (latency, bandwidth) is '
                         'required'.format(path))
    return Machine(data.get('name', os.path.basename(path)), intra,
                   _link(links, 'inter', path),
                   data.get('ranks_per_node'), data.get('cores_per_node'),
                   data.get('reduce_bandwidth'),
                   data.get('compute_scale', 1.0),
                   data.get('collectives'), source=path,
                   copy_bandwidth=data.get('copy_bandwidth'),
                   selection=data.get('selection', 'threshold'))
