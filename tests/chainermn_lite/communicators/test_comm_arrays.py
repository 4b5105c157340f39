"""Array methods of every communicator: p2p and collectives, all dtypes."""
import numpy as np
import pytest


NAMES = ('naive', 'flat', 'hierarchical', 'non_cuda_aware', 'dummy')
DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8,
          np.bool_)


def _value(rank, shape, dtype, salt=0):
    rs = np.random.RandomState(rank * 1000 + salt)
    return (rs.uniform(0, 50, size=shape)).astype(dtype)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('communicator_name', NAMES)
def test_ranks_and_sizes(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    assert comm.rank == mpi_comm.Get_rank()
    assert comm.size == mpi_comm.Get_size()
    assert comm.mpi_comm is mpi_comm
    assert 0 <= comm.intra_rank < comm.intra_size
    assert 0 <= comm.inter_rank < comm.inter_size
    assert comm.intra_size * comm.inter_size >= comm.size
    comm.finalize()


@pytest.mark.mpi(sizes=(2, 4, 8), nodes=2)
def test_two_nodes_intra_inter(mpi_comm, make_communicator, simulated):
    comm = make_communicator(mpi_comm, 'flat')
    everyone = comm.allgather_obj((comm.intra_rank, comm.intra_size,
                                   comm.inter_rank, comm.inter_size))
    # Whatever the real topology, ranks on one node are numbered densely
    # and nodes are ordered by their lowest rank.
    nodes = {}
    for rank, (ir, isz, er, esz) in enumerate(everyone):
        nodes.setdefault(er, []).append((rank, ir, isz))
        assert esz == everyone[0][3]
    assert sorted(nodes) == list(range(everyone[0][3]))
    lowest = [min(r for r, _, _ in nodes[n]) for n in sorted(nodes)]
    assert lowest == sorted(lowest)
    for members in nodes.values():
        assert [ir for _, ir, _ in members] == list(range(len(members)))
        assert all(isz == len(members) for _, _, isz in members)
    if simulated:
        assert comm.inter_size == 2
        assert comm.intra_size == comm.size // 2


@pytest.mark.mpi(sizes=(2, 3, 4))
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(), (0,), (1,), (3, 4), (2, 0, 5),
                                   (5000,)])
def test_send_recv_ring(mpi_comm, dtype, shape, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    x = _value(r, shape, dtype)
    if r % 2 == 0:
        comm.send(x, (r + 1) % n, 7)
        y = comm.recv((r - 1) % n, 7)
    else:
        y = comm.recv((r - 1) % n, 7)
        comm.send(x, (r + 1) % n, 7)
    expect = _value((r - 1) % n, shape, dtype)
    assert y.dtype == np.dtype(dtype) and y.shape == shape
    np.testing.assert_array_equal(y, expect)


@pytest.mark.mpi(sizes=(2, 4))
def test_send_recv_tuple_big_and_noncontiguous(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    comm.set_config('max_buf_len', 1000)   # forces chunked payloads
    r = comm.rank
    big = _value(r, (300, 70), np.float32)
    parts = (big[:, ::3], np.arange(7, dtype=np.int16), big.T,
             np.zeros((0, 2)), np.float64(3.5) * np.ones(()))
    if r == 0:
        for dest in range(1, comm.size):
            comm.send(parts, dest, tag=dest)
            comm.send(list(parts[:2]), dest, tag=0)
    else:
        got = comm.recv(0, r)
        expect = _value(0, (300, 70), np.float32)
        assert isinstance(got, tuple) and len(got) == 5
        np.testing.assert_array_equal(got[0], expect[:, ::3])
        np.testing.assert_array_equal(got[1], np.arange(7))
        assert got[1].dtype == np.int16
        np.testing.assert_array_equal(got[2], expect.T)
        assert got[3].shape == (0, 2)
        assert got[4].shape == () and got[4] == 3.5
        two = comm.recv(0, 0)
        assert isinstance(two, tuple) and len(two) == 2


@pytest.mark.mpi(sizes=(2, 3))
@pytest.mark.parametrize('communicator_name', NAMES)
def test_send_exact_recv_exact(mpi_comm, make_communicator):
    # Bare bytes, the layout named by the receiver: strided arrays, 0-d,
    # empty and chunked ones (max_buf_len 1000) all arrive as sent.
    comm = make_communicator(mpi_comm)
    comm.set_config('max_buf_len', 1000)
    big = _value(0, (300, 70), np.float32)
    parts = (big[:, ::3], np.arange(7, dtype=np.int16), np.zeros((0, 2)),
             np.float64(3.5) * np.ones(()))
    if comm.rank == 0:
        for dest in range(1, comm.size):
            comm.send_exact(parts, dest, 5)
            comm.send_exact((p for p in parts), dest, 6)  # any iterable
    else:
        for tag in (5, 6):
            got = comm.recv_exact([(p.shape, p.dtype) for p in parts], 0,
                                  tag)
            for g, p in zip(got, parts):
                assert g.shape == p.shape and g.dtype == p.dtype
                np.testing.assert_array_equal(g, p)
    with pytest.raises(ValueError, match='recv_exact: rank 9 is out of '
                       'range'):
        comm.recv_exact([((1,), np.float32)], 9, 0)
    with pytest.raises(ValueError, match='send_exact: tag must be an int '
                       '>= 0, got -2'):
        comm.send_exact([np.ones(1)], (comm.rank + 1) % comm.size, -2)


@pytest.mark.mpi(sizes=(2, 3))
def test_recv_any_source_any_tag(mpi_comm, MPI, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    if r == 0:
        got = sorted(int(comm.recv(MPI.ANY_SOURCE, MPI.ANY_TAG)[0])
                     for _ in range(n - 1))
        assert got == list(range(1, n))
        mpi_comm.Barrier()   # objects only after every array arrived
        objs = sorted(comm.recv_obj(MPI.ANY_SOURCE) for _ in range(n - 1))
        assert objs == [('hello', i) for i in range(1, n)]
    else:
        comm.send(np.full(20000, r, dtype=np.int64), 0, tag=r)
        mpi_comm.Barrier()
        comm.send_obj(('hello', r), 0, tag=10 + r)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype', DTYPES)
def test_bcast(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    for root in {0, comm.size - 1}:
        x = _value(root, (4, 3), dtype) if comm.rank == root else None
        y = comm.bcast(x, root=root)
        np.testing.assert_array_equal(y, _value(root, (4, 3), dtype))
        assert y.dtype == np.dtype(dtype)
    big = _value(0, (3000,), np.float64) if comm.rank == 0 else None
    y = comm.bcast(big, max_buf_len=1000)
    np.testing.assert_array_equal(y, _value(0, (3000,), np.float64))


@pytest.mark.mpi(sizes=(2, 3))
def test_array_collectives_take_chainermns_positional_and_keyword_names(
        mpi_comm, make_communicator):
    # ChainerMN 7.8.1's MPI communicators: bcast(x, root=0),
    # gather(x, root=0), allgather(x), allreduce(x).
    comm = make_communicator(mpi_comm, 'naive')
    last = comm.size - 1
    x = np.full(3, comm.rank, np.float32)
    np.testing.assert_array_equal(comm.bcast(x, last), [last] * 3)
    np.testing.assert_array_equal(comm.bcast(x=x, root=last), [last] * 3)
    got = comm.gather(x=x, root=last)
    if comm.rank == last:
        assert [g[0] for g in got] == list(range(comm.size))
    assert [g[0] for g in comm.allgather(x=x)] == list(range(comm.size))
    np.testing.assert_array_equal(comm.allreduce(x=x),
                                  [sum(range(comm.size))] * 3)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype', DTYPES)
def test_gather_allgather_differing_shapes(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    mine = _value(r, (r, 3), dtype)
    everyone = [_value(i, (i, 3), dtype) for i in range(n)]
    for got in (comm.allgather(mine),
                comm.gather(mine, root=n - 1) if r == n - 1
                else comm.gather(mine, root=n - 1)):
        if got is None:
            assert r != n - 1
            continue
        assert isinstance(got, tuple) and len(got) == n
        for g, e in zip(got, everyone):
            assert g.dtype == np.dtype(dtype) and g.shape == e.shape
            np.testing.assert_array_equal(g, e)


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype', DTYPES)
def test_scatter_tuple_and_array(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    root = n // 2
    parts = [_value(i, (i + 1, 2), dtype) for i in range(n)]
    got = comm.scatter(tuple(parts) if r == root else None, root=root)
    np.testing.assert_array_equal(got, parts[r])
    stacked = np.stack([_value(i, (2, 3), dtype) for i in range(n)])
    got = comm.scatter(stacked if r == root else None, root=root)
    assert got.shape == (2, 3) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, stacked[r])


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype', DTYPES)
def test_alltoall(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    xs = [_value(r, (i + r, 2), dtype, salt=i) for i in range(n)]
    ys = comm.alltoall(xs)
    assert len(ys) == n
    for src, y in enumerate(ys):
        np.testing.assert_array_equal(y, _value(src, (r + src, 2), dtype,
                                                salt=r))


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('dtype', (np.float16, np.float32, np.float64,
                                   np.int32, np.int64, np.uint8))
def test_allreduce_sums(mpi_comm, dtype, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    r, n = comm.rank, comm.size
    x = _value(r, (5, 2), dtype) // 8
    got = comm.allreduce(x)
    expect = sum(_value(i, (5, 2), dtype).astype(np.float64) // 8
                 for i in range(n))
    assert got.dtype == np.dtype(dtype) and got.shape == (5, 2)
    np.testing.assert_allclose(got.astype(np.float64),
                               expect.astype(dtype).astype(np.float64))
    zero = comm.allreduce(np.zeros((0, 3), dtype=dtype))
    assert zero.shape == (0, 3)


@pytest.mark.mpi(sizes=(2, 3))
def test_send_recv_small_array_kinds(mpi_comm, make_communicator):
    # The single-small-array fast path caches frame heads by (dtype,
    # shape): every kind of array it may see, sent twice so the second
    # send and receive use the caches.
    comm = make_communicator(mpi_comm, 'flat')
    arrays = [np.arange(3, dtype=np.complex64) * 1j, np.array(5.0),
              np.array([True, False]), np.zeros((0, 3), np.float32),
              np.arange(6, dtype=np.float16).reshape(2, 3),
              np.arange(4, dtype=np.int8)[::2]]
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for _ in range(2):
        for tag, x in enumerate(arrays):
            if comm.rank % 2 == 0:
                comm.send(x, right, tag)
                got = comm.recv(left, tag)
            else:
                got = comm.recv(left, tag)
                comm.send(x, right, tag)
            assert got.dtype == x.dtype and got.shape == x.shape
            np.testing.assert_array_equal(got, x)


@pytest.mark.mpi(sizes=(2, 3))
def test_plain_path_and_methods_read_each_other(mpi_comm, make_communicator):
    # A communicator's send/recv are its own plain-path functions; the
    # class methods (what a subclass's super() reaches) speak the same
    # frames: small arrays (cached heads), big ones (bare after the first)
    # and non-contiguous ones, bit-identical whichever side took which.
    from chainermn_lite.communicators.mpi_communicator import \
        MpiCommunicator
    comm = make_communicator(mpi_comm, 'naive')
    assert 'send' in comm.__dict__ and 'recv' in comm.__dict__
    arrays = [np.arange(3, dtype=np.float64), np.arange(5000.0),
              np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]]
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    sends = (comm.send, lambda *a: MpiCommunicator.send(comm, *a))
    recvs = (comm.recv, lambda *a: MpiCommunicator.recv(comm, *a))
    for step in range(4):
        send, recv = sends[step % 2], recvs[step // 2]
        for tag, x in enumerate(arrays):
            x = x + step
            if comm.rank % 2 == 0:
                send(x, right, tag)
                got = recv(left, tag)
            else:
                got = recv(left, tag)
                send(x, right, tag)
            assert got.dtype == x.dtype and got.shape == x.shape
            assert got.tobytes() == np.ascontiguousarray(x).tobytes()


@pytest.mark.mpi(sizes=(2,))
def test_subclass_send_recv_overrides_are_kept(mpi_comm):
    from chainermn_lite.communicators.mpi_communicator_base import \
        MpiCommunicatorBase

    class Logged(MpiCommunicatorBase):
        def send(self, data, dest, tag):
            self.log.append(('send', tag))
            super().send(data, dest, tag)

        def recv(self, source, tag):
            self.log.append(('recv', tag))
            return super().recv(source, tag)

    comm = Logged(mpi_comm)
    comm.log = []
    peer = 1 - comm.rank
    x = np.arange(4.0)
    if comm.rank == 0:
        comm.send(x, peer, 7)
    else:
        np.testing.assert_array_equal(comm.recv(peer, 7), x)
    assert comm.log == [('send' if comm.rank == 0 else 'recv', 7)]
