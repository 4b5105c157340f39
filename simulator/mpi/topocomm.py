"""``Topocomm`` and its kinds (``Cartcomm``, ``Graphcomm``,
``Distgraphcomm``): mpi4py's topology communicators, with their queries.

The neighbourhood collectives they add are in
:mod:`simulator.mpi.neighbor`.
"""
from simulator.mpi.comm import Intracomm
from simulator.mpi.constants import ERR_COMM
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.neighbor import NeighborCollectives
from simulator.mpi.topology import (CART, DIST_GRAPH, GRAPH, int_list,
                                    register_class_chooser, topology_of)

__all__ = ['Topocomm', 'Cartcomm', 'Graphcomm', 'Distgraphcomm',
           'class_for']


class Topocomm(NeighborCollectives, Intracomm):
    """A communicator with a process topology."""

    __module__ = 'simulator.mpi'
    _kinds = (CART, GRAPH, DIST_GRAPH)
    _expecting = 'a topology communicator'

    def __init__(self, comm=None):
        super().__init__(comm)
        state = self._state
        if state is not None:
            topo = topology_of(state)
            if topo is None or topo.kind not in self._kinds:
                raise TypeError('expecting {}'.format(self._expecting))

    @property
    def _topo(self):
        state = self._local
        topo = topology_of(state)
        if topo is None:
            raise MPIException(ERR_COMM, '{} has no topology'.format(
                state.name))
        return topo

    @property
    def degrees(self):
        """Return (indegree, outdegree)."""
        ins, outs = self.inoutedges
        return len(ins), len(outs)

    indegree = property(lambda self: self.degrees[0],
                        doc='Number of in-neighbours.')
    outdegree = property(lambda self: self.degrees[1],
                         doc='Number of out-neighbours.')

    @property
    def inoutedges(self):
        """Return (in-neighbours, out-neighbours), in MPI's neighbour order."""
        return self._topo.neighbours(self._s.rank)

    inedges = property(lambda self: self.inoutedges[0],
                       doc='In-neighbours.')
    outedges = property(lambda self: self.inoutedges[1],
                        doc='Out-neighbours.')


class Cartcomm(Topocomm):
    """A Cartesian topology communicator."""

    __module__ = 'simulator.mpi'
    _kinds = (CART,)
    _expecting = 'a Cartesian communicator'

    def Get_dim(self):
        """Number of dimensions."""
        return len(self._topo.dims)

    dim = property(Get_dim)
    ndim = property(Get_dim, doc='Number of dimensions (as ``dim``).')

    def Get_topo(self):
        """Return (dims, periods, coords)."""
        topo = self._topo
        return (list(topo.dims), list(topo.periods),
                topo.coords(self._s.rank))

    topo = property(Get_topo)
    dims = property(lambda self: self.Get_topo()[0], doc='Grid size.')
    periods = property(lambda self: self.Get_topo()[1],
                       doc='Periodicity (0/1) per dimension.')
    coords = property(lambda self: self.Get_topo()[2],
                      doc="This rank's coordinates.")

    def Get_cart_rank(self, coords):
        """The rank at ``coords``."""
        return self._topo.rank_of(coords)

    def Get_coords(self, rank):
        """The coordinates of ``rank``."""
        return self._topo.coords(rank)

    def Shift(self, direction, disp):
        """Return (source, dest) for a shift of ``disp`` along
        ``direction``."""
        return self._topo.shift(self._s.rank, direction, disp)

    def Sub(self, remain_dims):
        """The sub-grids keeping the dimensions ``remain_dims`` marks
        (collective; each rank gets the one it lies in)."""
        from simulator.mpi.topology import Cart
        topo = self._topo
        keep = [bool(k) for k in int_list(remain_dims, 'Sub',
                                          len(topo.dims))]
        coords = topo.coords(self._s.rank)
        color = key = 0
        for c, d, k in zip(coords, topo.dims, keep):
            if k:
                key = key * d + c
            else:
                color = color * d + c
        sub = Cart([d for d, k in zip(topo.dims, keep) if k],
                   [p for p, k in zip(topo.periods, keep) if k])
        new = self._split('Sub', color, key)
        new._state.props['topology'] = sub
        return Cartcomm(new._state)


class Graphcomm(Topocomm):
    """A general graph topology communicator."""

    __module__ = 'simulator.mpi'
    _kinds = (GRAPH,)
    _expecting = 'a general graph communicator'

    def Get_dims(self):
        """Return (number of nodes, number of edges)."""
        topo = self._topo
        return len(topo.index), len(topo.edges)

    dims = property(Get_dims)
    nnodes = property(lambda self: self.Get_dims()[0], doc='Nodes.')
    nedges = property(lambda self: self.Get_dims()[1], doc='Edges.')

    def Get_topo(self):
        """Return (index, edges)."""
        topo = self._topo
        return list(topo.index), list(topo.edges)

    topo = property(Get_topo)
    index = property(lambda self: self.Get_topo()[0],
                     doc='Cumulative degrees.')
    edges = property(lambda self: self.Get_topo()[1], doc='Edges.')

    def Get_neighbors_count(self, rank):
        """Number of neighbours of ``rank``."""
        return len(self.Get_neighbors(rank))

    def Get_neighbors(self, rank):
        """Neighbours of ``rank``."""
        return self._topo.neighbours_of(rank, len(self._s.group))

    nneighbors = property(lambda self: self.Get_neighbors_count(
        self._s.rank), doc="This rank's number of neighbours.")
    neighbors = property(lambda self: self.Get_neighbors(self._s.rank),
                         doc="This rank's neighbours.")


class Distgraphcomm(Topocomm):
    """A distributed graph topology communicator."""

    __module__ = 'simulator.mpi'
    _kinds = (DIST_GRAPH,)
    _expecting = 'a distributed graph communicator'

    def Get_dist_neighbors_count(self):
        """Return (indegree, outdegree, weighted)."""
        topo = self._topo
        return (len(topo.sources), len(topo.destinations),
                topo.weights is not None)

    def Get_dist_neighbors(self):
        """Return (sources, destinations, (source weights, dest weights) or
        None)."""
        topo = self._topo
        weights = None if topo.weights is None else \
            (list(topo.weights[0]), list(topo.weights[1]))
        return list(topo.sources), list(topo.destinations), weights


_CLASSES = {CART: Cartcomm, GRAPH: Graphcomm, DIST_GRAPH: Distgraphcomm}


def class_for(state):
    """The mpi4py class of a communicator state: its topology's, or
    Intracomm."""
    topo = None if state is None else topology_of(state)
    return Intracomm if topo is None else _CLASSES[topo.kind]


register_class_chooser(class_for)

