"""Process topologies: what a Cartesian, graph or distributed-graph
communicator knows of its neighbours, and the ``Intracomm`` calls that
make one (``Create_cart``...).

A topology is an immutable description kept in the new communicator's
per-rank state (``props['topology']``); ``Dup`` shares it. Ranks are
never reordered (``reorder`` is accepted and ignored, as Open MPI 5.0's
default topology component does), so ``Cart_map``/``Graph_map`` give a
rank its own number. Errors carry Open MPI's classes; where
Open MPI accepts an argument it goes on to misuse (an edge naming no
rank, a coordinate or rank outside the grid) the simulator refuses it
with the class Open MPI gives to the nearest case it checks.
"""
import operator

from simulator.mpi.cargs import c_int
from simulator.mpi.constants import (ERR_ARG, ERR_OTHER, ERR_RANK,
                                     PROC_NULL, UNDEFINED)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.values import VALUES

__all__ = ['CART', 'GRAPH', 'DIST_GRAPH', 'Cart', 'Graph', 'DistGraph',
           'register_class_chooser', 'class_for',
           'kth_edge', 'topology_of', 'int_list', 'TopologyConstructors']

CART, GRAPH, DIST_GRAPH = VALUES['CART'], VALUES['GRAPH'], \
    VALUES['DIST_GRAPH']
ERR_DIMS = VALUES['ERR_DIMS']
UNWEIGHTED, WEIGHTS_EMPTY = VALUES['UNWEIGHTED'], VALUES['WEIGHTS_EMPTY']


def int_list(values, what, length=None):
    """``values`` as a list of ints; mpi4py's ValueError when it must have
    ``length`` items and has not."""
    if isinstance(values, int) and not isinstance(values, bool):
        raise TypeError('{}: expecting a sequence of ints, got {!r}'.format(
            what, values))
    items = [operator.index(v) for v in values]  # mpi4py: no floats
    if length is not None and len(items) != length:
        raise ValueError('expecting {} items, got {}'.format(length,
                                                             len(items)))
    return items


def _check_rank(rank, size, what):
    rank = c_int(rank)
    if not 0 <= rank < size:
        raise MPIException(ERR_RANK, '{}: rank {!r} is not in 0..{}'.format(
            what, rank, size - 1))
    return rank


class Cart:
    """A periodic-or-not grid of ``dims``, ranks in row-major order."""

    kind = CART

    def __init__(self, dims, periods):
        self.dims, self.periods = tuple(dims), tuple(periods)
        self.size = 1
        for d in self.dims:
            self.size *= d

    def coords(self, rank, what='Get_coords'):
        """Coordinates of ``rank`` (the last dimension varies fastest)."""
        _check_rank(rank, self.size, what)
        out = []
        for d in reversed(self.dims):
            rank, c = divmod(rank, d)
            out.append(c)
        return out[::-1]

    def rank_of(self, coords, what='Get_cart_rank'):
        """The rank at ``coords``; periodic dimensions wrap around."""
        coords = int_list(coords, what, len(self.dims))
        rank = 0
        for c, d, p in zip(coords, self.dims, self.periods):
            if p:
                c %= d
            elif not 0 <= c < d:
                raise MPIException(ERR_ARG, '{}: coordinate {} is outside '
                                   'the non-periodic dimension of size {}'
                                   .format(what, c, d))
            rank = rank * d + c
        return rank

    def shift(self, rank, direction, disp):
        """(source, dest) ``disp`` steps along ``direction`` from
        ``rank``; PROC_NULL past a non-periodic edge."""
        if not isinstance(direction, int) or \
                not 0 <= direction < len(self.dims):
            raise MPIException(ERR_DIMS, 'Shift: direction {!r} is not a '
                               'dimension of a {}-dimensional grid'.format(
                                   direction, len(self.dims)))
        here = self.coords(rank)

        def step(delta):
            c = here[direction] + delta
            d = self.dims[direction]
            if not self.periods[direction] and not 0 <= c < d:
                return PROC_NULL
            moved = list(here)
            moved[direction] = c % d
            return self.rank_of(moved)
        return step(-disp), step(disp)

    def neighbours(self, rank):
        """(in, out): per dimension the -1 then the +1 neighbour."""
        out = []
        for d in range(len(self.dims)):
            out.extend(self.shift(rank, d, 1))
        return out, out

    def source_slot(self, ins, i, outs_of):
        # The -1 neighbour sent this slot from its +1 slot, and back.
        return i ^ 1


class Graph:
    """MPI_GRAPH: ``index`` (cumulative degrees) and ``edges``."""

    kind = GRAPH

    def __init__(self, index, edges):
        self.index, self.edges = tuple(index), tuple(edges)

    def neighbours_of(self, rank, size, what='Get_neighbors'):
        """Neighbours of ``rank`` in edge order."""
        _check_rank(rank, min(size, len(self.index)), what)
        start = self.index[rank - 1] if rank else 0
        return list(self.edges[start:self.index[rank]])

    def neighbours(self, rank):
        """(in, out): both the rank's edges."""
        out = self.neighbours_of(rank, len(self.index))
        return out, out

    source_slot = staticmethod(lambda ins, i, outs_of: kth_edge(
        ins, i, outs_of))


class DistGraph:
    """MPI_DIST_GRAPH: this rank's in- and out-edges (and weights)."""

    kind = DIST_GRAPH

    def __init__(self, sources, destinations, weights):
        self.sources, self.destinations = list(sources), list(destinations)
        self.weights = weights      # (in, out) lists, or None

    def neighbours(self, rank):
        """(in, out) edges, as given."""
        return list(self.sources), list(self.destinations)

    source_slot = staticmethod(lambda ins, i, outs_of: kth_edge(
        ins, i, outs_of))


def kth_edge(ins, i, outs_of):
    """Messages between two ranks match in order: in-edge ``i`` is the
    k-th from its source, so it is fed by that source's k-th out-edge
    to this rank (None when the source has no such edge)."""
    src = ins[i]
    k = ins[:i].count(src)
    me, outs = outs_of(src)
    seen = 0
    for j, dest in enumerate(outs):
        if dest == me:
            if seen == k:
                return j
            seen += 1
    return None


def topology_of(state):
    """The topology kept with a communicator's state (None if none)."""
    return state.props.get('topology')


def _weights(weights, n, what):
    """mpi4py's reading of a weights argument: None for unweighted."""
    if weights is None or (isinstance(weights, int) and
                           weights == UNWEIGHTED):
        return None
    if isinstance(weights, int) and weights == WEIGHTS_EMPTY:
        if n > 0:
            raise ValueError('empty weights but nonzero degree')
        return []
    return int_list(weights, what, n)


def _in_range(ranks, size, what):
    for r in ranks:
        if not 0 <= r < size:
            raise MPIException(ERR_ARG, '{}: rank {} is not in 0..{}'
                               .format(what, r, size - 1))


def _check_dims(dims, what):
    for d in dims:
        if d <= 0:
            # Open MPI's class for a dimension it cannot build
            raise MPIException(ERR_OTHER, '{}: dimension {} must be > 0'
                               .format(what, d))


def _periods(periods, ndims):
    if periods is None:
        periods = False
    if isinstance(periods, bool):
        periods = [periods] * ndims
    return [int(bool(p)) for p in int_list(periods, 'periods', ndims)]


def _graph_args(index, edges, size, what):
    index = int_list(index, what + ' index')
    edges = int_list(edges, what + ' edges')
    # mpi4py also takes the index with its leading 0 (CSR style)
    if index and index[0] == 0 and index[-1] == len(edges):
        index = index[1:]
    if len(index) > size:
        raise MPIException(ERR_ARG, '{}: {} nodes for a communicator of '
                           'size {}'.format(what, len(index), size))
    last = 0
    for i in index:
        if i < last:
            raise MPIException(ERR_ARG, '{}: index {} is not '
                               'non-decreasing'.format(what, index))
        last = i
    if index and index[-1] != len(edges):
        raise MPIException(ERR_ARG, '{}: index ends at {} but there are {} '
                           'edges'.format(what, index[-1], len(edges)))
    _in_range(edges, len(index), what + ' edge')
    return index, edges


# topocomm's classes (Cartcomm...) subclass Intracomm, which mixes in
# TopologyConstructors: topocomm registers its class chooser at import, so
# this module and comm need not import it (no import cycle).
_class_chooser = []


def register_class_chooser(choose):
    """Make ``choose(state)`` the answer of :func:`class_for`."""
    _class_chooser[:] = [choose]


def class_for(state):
    """The mpi4py class of a communicator state: its topology's class, or
    Intracomm (topocomm's chooser)."""
    return _class_chooser[0](state)


class TopologyConstructors:
    """``Create_cart``, ``Create_graph``, ``Create_dist_graph(_adjacent)``
    and the mapping queries; mixed into ``Intracomm``."""

    def _with_topology(self, op, member, key, topology):
        """The collective ``op`` making a communicator of the members (in
        ``key`` order) that carries ``topology``; COMM_NULL elsewhere."""
        new = self._split(op, 0 if member else UNDEFINED, key)
        if not new:
            return new
        state = new._state
        state.props['topology'] = topology(state)
        return class_for(state)(state)

    def Create_cart(self, dims, periods=None, reorder=False):
        """A Cartesian communicator over the first prod(dims) ranks
        (COMM_NULL on the others)."""
        size = len(self._s.group)
        dims = int_list(dims, 'Create_cart dims')
        periods = _periods(periods, len(dims))
        _check_dims(dims, 'Create_cart')
        cart = Cart(dims, periods)
        if cart.size > size:
            raise MPIException(ERR_ARG, 'Create_cart: dims {} need {} '
                               'ranks, the communicator has {}'.format(
                                   dims, cart.size, size))
        rank = self._s.rank
        return self._with_topology('Create_cart', rank < cart.size, rank,
                                   lambda state: cart)

    def Create_graph(self, index, edges, reorder=False):
        """A graph communicator over the first len(index) ranks."""
        index, edges = _graph_args(index, edges, len(self._s.group),
                                   'Create_graph')
        graph = Graph(index, edges)
        rank = self._s.rank
        return self._with_topology('Create_graph', rank < len(index), rank,
                                   lambda state: graph)

    def Create_dist_graph_adjacent(self, sources, destinations,
                                   sourceweights=None, destweights=None,
                                   info=None, reorder=False):
        """A distributed-graph communicator from this rank's own in- and
        out-neighbours."""
        size = len(self._s.group)
        sources = [] if sources is None else int_list(sources, 'sources')
        destinations = [] if destinations is None else \
            int_list(destinations, 'destinations')
        sw = _weights(sourceweights, len(sources), 'sourceweights')
        dw = _weights(destweights, len(destinations), 'destweights')
        _in_range(sources, size, 'Create_dist_graph_adjacent source')
        _in_range(destinations, size,
                  'Create_dist_graph_adjacent destination')
        weights = None
        if sw is not None or dw is not None:
            weights = (sw if sw is not None else [1] * len(sources),
                       dw if dw is not None else [1] * len(destinations))
        topo = DistGraph(sources, destinations, weights)
        return self._with_topology('Create_dist_graph_adjacent', True,
                                   self._s.rank, lambda state: topo)

    def Create_dist_graph(self, sources, degrees, destinations,
                          weights=None, info=None, reorder=False):
        """A distributed-graph communicator from edges any rank may give:
        each rank's in- and out-edges are collected, in the order of the
        ranks that gave them."""
        from simulator.mpi.coll import _run
        size = len(self._s.group)
        sources = int_list(sources, 'sources')
        degrees = int_list(degrees, 'degrees', len(sources))
        destinations = int_list(destinations, 'destinations', sum(degrees))
        w = _weights(weights, len(destinations), 'weights')
        _in_range(sources, size, 'Create_dist_graph source')
        _in_range(destinations, size, 'Create_dist_graph destination')
        edges, at = [], 0
        for src, degree in zip(sources, degrees):
            for _ in range(degree):
                edges.append((src, destinations[at],
                              1 if not w else w[at]))
                at += 1
        given = _run(self, 'Create_dist_graph', (), (edges, w is not None),
                     lambda st, slot: list(slot.args))
        weighted = any(flag for _, flag in given)
        everything = [e for part, _ in given for e in part]

        def topology(state):
            me = state.rank
            ins = [(s, wt) for s, d, wt in everything if d == me]
            outs = [(d, wt) for s, d, wt in everything if s == me]
            return DistGraph(
                [s for s, _ in ins], [d for d, _ in outs],
                ([wt for _, wt in ins], [wt for _, wt in outs])
                if weighted else None)
        return self._with_topology('Create_dist_graph', True, self._s.rank,
                                   topology)

    def Cart_map(self, dims, periods=None):
        """The rank this rank would have in a Cartesian communicator of
        ``dims``: its own, since ranks are not reordered (Open MPI 5.0
        answers so even for a rank the grid leaves out)."""
        dims = int_list(dims, 'Cart_map dims')
        _periods(periods, len(dims))
        _check_dims(dims, 'Cart_map')
        return self._s.rank

    def Graph_map(self, index, edges):
        """The rank this rank would have in a graph communicator: its own,
        as for Cart_map."""
        index, _ = _graph_args(index, edges, len(self._s.group),
                               'Graph_map')
        if not index:
            raise MPIException(ERR_ARG, 'Graph_map: a graph of no nodes')
        return self._s.rank
