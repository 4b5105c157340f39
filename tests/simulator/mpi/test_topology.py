"""Process topologies and neighbourhood collectives, as Open MPI 5 and
mpi4py 4 give them: Cartesian grids (coordinates, shifts, sub-grids),
graphs and distributed graphs, and which neighbour's block lands where.

Each test runs in-process on the simulator and under ``mpiexec`` with
the same assertions.
"""
import numpy as np
import pytest

SIZES = (1, 2, 3, 4)


def test_compute_dims_as_open_mpi(MPI, error_class):
    assert MPI.Compute_dims(24, 4) == [3, 2, 2, 2]
    assert MPI.Compute_dims(30, 3) == [5, 3, 2]
    assert MPI.Compute_dims(4, [2, 0, 2]) == [2, 1, 2]
    assert MPI.Compute_dims(1, 0) == []
    # fully given dims come back unchecked, as Open MPI does
    assert MPI.Compute_dims(6, [2, 2]) == [2, 2]
    for nnodes, dims in ((0, 2), (-1, 2), (6, [4, 0]), (6, [3, -1])):
        assert error_class(MPI.Compute_dims, nnodes, dims) == \
            MPI.ERR_DIMS


@pytest.mark.mpi(sizes=SIZES)
def test_cart_coordinates_shifts_and_null_outside(mpi_comm, MPI, error_class):
    size, rank = mpi_comm.size, mpi_comm.rank
    rows = 2 if size % 2 == 0 else 1
    dims = [rows, size // rows]
    cart = mpi_comm.Create_cart(dims, periods=[True, False])
    assert isinstance(cart, MPI.Cartcomm) and cart.is_topo
    assert cart.Get_topology() == MPI.CART and cart.ndim == 2
    coords = [rank // dims[1], rank % dims[1]]
    assert cart.topo == (dims, [1, 0], coords)
    assert cart.Get_cart_rank(coords) == rank
    assert [cart.Get_coords(r) for r in range(size)] == \
        [[r // dims[1], r % dims[1]] for r in range(size)]
    # dimension 0 wraps around, dimension 1 ends in PROC_NULL
    up = ((coords[0] - 1) % rows) * dims[1] + coords[1]
    down = ((coords[0] + 1) % rows) * dims[1] + coords[1]
    assert cart.Shift(0, 1) == (up, down)
    left = rank - 1 if coords[1] > 0 else MPI.PROC_NULL
    right = rank + 1 if coords[1] < dims[1] - 1 else MPI.PROC_NULL
    assert cart.Shift(1, 1) == (left, right)
    assert cart.inedges == cart.outedges == [up, down, left, right]
    assert cart.degrees == (4, 4)
    assert error_class(cart.Shift, -1, 1) == MPI.ERR_DIMS
    assert error_class(cart.Get_coords, -1) == MPI.ERR_RANK
    assert error_class(cart.Get_cart_rank, [0, dims[1]]) == \
        MPI.ERR_ARG
    with pytest.raises(ValueError):
        cart.Get_cart_rank([0])
    dup = cart.Dup()
    assert type(dup) is MPI.Cartcomm and dup.topo == cart.topo
    assert type(MPI.Comm.fromint(cart.toint())) is MPI.Cartcomm
    with pytest.raises(TypeError):
        MPI.Graphcomm(cart)
    with pytest.raises(TypeError):
        MPI.Topocomm(mpi_comm)
    row = cart.Sub([False, True])
    assert row.dims == [dims[1]] and row.coords == [coords[1]]
    assert row.Get_size() == dims[1]
    for comm in (row, dup, cart):
        comm.Free()
    small = mpi_comm.Create_cart([1])
    assert (small == MPI.COMM_NULL) == (rank > 0)
    # Open MPI 5.0 maps every rank to itself, in the grid or not
    assert mpi_comm.Cart_map([1]) == rank
    assert error_class(mpi_comm.Create_cart, [size + 1]) == \
        MPI.ERR_ARG
    if small != MPI.COMM_NULL:
        small.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_graph_and_dist_graph_queries(mpi_comm, MPI, error_class):
    size, rank = mpi_comm.size, mpi_comm.rank
    index = [2 * (i + 1) for i in range(size)]
    edges = [e for i in range(size) for e in ((i - 1) % size,
                                              (i + 1) % size)]
    graph = mpi_comm.Create_graph([0] + index, edges)
    assert graph.topology == MPI.GRAPH and graph.topo == (index, edges)
    assert graph.dims == (size, 2 * size)
    assert graph.Get_neighbors(rank) == [(rank - 1) % size,
                                         (rank + 1) % size]
    assert graph.nneighbors == 2
    assert error_class(graph.Get_neighbors, -1) == MPI.ERR_RANK
    graph.Free()
    dist = mpi_comm.Create_dist_graph_adjacent(
        [(rank - 1) % size], [(rank + 1) % size, rank], [5], [6, 7])
    assert dist.topology == MPI.DIST_GRAPH
    assert dist.Get_dist_neighbors_count() == (1, 2, True)
    assert dist.Get_dist_neighbors() == (
        [(rank - 1) % size], [(rank + 1) % size, rank], ([5], [6, 7]))
    dist.Free()
    # every rank names one edge, rank -> rank+1 (weight rank): each
    # rank learns its in-edge from the rank before it
    dist = mpi_comm.Create_dist_graph([rank], [1], [(rank + 1) % size],
                                      [rank + 10])
    assert dist.Get_dist_neighbors() == (
        [(rank - 1) % size], [(rank + 1) % size],
        ([(rank - 1) % size + 10], [rank + 10]))
    dist.Free()
    assert error_class(mpi_comm.Create_dist_graph_adjacent,
                        [size], []) == MPI.ERR_ARG
    with pytest.raises(ValueError):
        mpi_comm.Create_dist_graph_adjacent([0], [0], MPI.WEIGHTS_EMPTY,
                                            MPI.WEIGHTS_EMPTY)


@pytest.mark.mpi(sizes=SIZES)
def test_neighbor_alltoall_pairs_cart_directions(mpi_comm, MPI):
    """Block 2d+1 (to the +1 neighbour) lands in its -1 slot (2d) and
    the reverse, even where both neighbours are one rank; PROC_NULL
    slots keep their values."""
    size, rank = mpi_comm.size, mpi_comm.rank
    for periodic in (True, False):
        cart = mpi_comm.Create_cart([size], periods=[periodic])
        send = np.array([100 * rank, 100 * rank + 1], 'i')
        recv = np.full(2, -1, 'i')
        cart.Neighbor_alltoall(send, recv)
        down, up = cart.Shift(0, 1)
        expect = [-1 if down < 0 else 100 * down + 1,
                  -1 if up < 0 else 100 * up]
        assert recv.tolist() == expect
        recv[:] = -1
        cart.Ineighbor_alltoall(send, recv).Wait()
        if size <= 2 and periodic:
            # Open MPI's non-blocking form matches in order: where one
            # rank is both neighbours, slot k gets its block k
            expect = [100 * down, 100 * up + 1]
        assert recv.tolist() == expect
        gathered = np.full((2, 3), -1.0)
        cart.Neighbor_allgather(np.full(3, rank + 0.5), gathered)
        assert gathered[:, 0].tolist() == [-1 if n < 0 else n + 0.5
                                          for n in (down, up)]
        assert cart.neighbor_allgather(rank) == [None if n < 0 else n
                                                 for n in (down, up)]
        assert cart.neighbor_alltoall(['-', '+']) == [
            None if down < 0 else '+', None if up < 0 else '-']
        cart.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_neighbor_collectives_on_graphs_match_edges_in_order(mpi_comm,
                                                             MPI):
    size, rank = mpi_comm.size, mpi_comm.rank
    ins = [(rank - 1) % size, (rank + 1) % size]
    outs = [(rank + 1) % size, (rank - 1) % size]
    dist = mpi_comm.Create_dist_graph_adjacent(ins, outs)
    send = np.array([10 * rank, 10 * rank + 1], 'd')
    recv = np.zeros(2)
    req = dist.Neighbor_alltoall_init(send, recv)
    for round_ in range(2):
        send += round_
        req.Start()
        req.Wait()
        if size <= 2:
            # both edges join the same two ranks: k-th to k-th
            assert recv.tolist() == [10 * ins[0] + round_,
                                     10 * ins[0] + 1 + round_]
        else:
            assert recv.tolist() == [10 * ins[0] + round_,
                                     10 * ins[1] + 1 + round_]
    req.Free()
    counts = [1, 2]
    vrecv = np.zeros(3, 'i')
    dist.Neighbor_allgatherv(np.array([rank, rank], 'i')[:1],
                             [vrecv, (counts[:1] * 2, [0, 2])])
    assert vrecv[[0, 2]].tolist() == ins
    wrecv = np.zeros(2, 'i')
    i4 = MPI.INT
    dist.Neighbor_alltoallw([np.array([7 * rank, 7 * rank + 1], 'i'),
                             ([1, 1], [0, 4]), [i4, i4]],
                            [wrecv, ([1, 1], [0, 4]), [i4, i4]])
    if size > 2:
        assert wrecv.tolist() == [7 * ins[0], 7 * ins[1] + 1]
    dist.Free()


@pytest.mark.simulator_only('Open MPI does not check that a pending '
                            'send buffer stays unwritten')
def test_ineighbor_send_buffer_written_before_wait_is_reported():
    import simulator
    from simulator.errors import BufferModifiedError

    def body(comm):
        cart = comm.Create_cart([comm.size], periods=[True])
        send = np.arange(2.0)
        req = cart.Ineighbor_alltoall(send, np.zeros(2))
        send[0] = 9.0
        req.Wait()
    with pytest.raises(BufferModifiedError, match='Ineighbor_alltoall'):
        simulator.run(body, 2)
