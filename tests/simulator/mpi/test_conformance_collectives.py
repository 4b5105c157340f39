"""Conformance: collectives (object and buffer forms) as on real MPI.

Runs in-process on the simulator at sizes 1, 2, 3, 4, 8 and under
``mpiexec -n 2`` / ``-n 4``; every assertion holds at any size.
"""
import functools
import operator

import nonblocking_reductions
import numpy as np
import pytest

SIZES = (1, 2, 3, 4, 8)

NUMERIC = ('float16', 'float32', 'float64', 'int8', 'int16', 'int32',
           'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'complex64',
           'complex128')
INTEGER = ('int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',
           'uint64')
REAL = ('float16', 'float32', 'float64') + INTEGER


def _contribution(rank, dtype, length=6):
    # Small values so PROD of up to 8 ranks fits int8 and float16 exactly.
    values = (np.arange(length) + rank) % 3 + 1
    if np.dtype(dtype).kind == 'c':
        return (values + 1j * (values % 2)).astype(dtype)
    if dtype == 'bool':
        return ((np.arange(length) + rank) % 2).astype(bool)
    return values.astype(dtype)


def _expected(size, dtype, combine):
    parts = [_contribution(r, dtype) for r in range(size)]
    return functools.reduce(combine, parts)


def _roots(size):
    return sorted({0, size - 1, size // 2})


@pytest.mark.mpi(sizes=SIZES)
def test_barrier_and_ibarrier(mpi_comm, MPI):
    assert mpi_comm.Barrier() is None
    request = mpi_comm.Ibarrier()
    request.Wait()
    mpi_comm.barrier()


@pytest.mark.mpi(sizes=SIZES)
def test_object_bcast_from_each_root(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for root in _roots(size):
        data = {'root': root, 'list': list(range(root + 2))}
        got = mpi_comm.bcast(data if rank == root else None, root=root)
        assert got == {'root': root, 'list': list(range(root + 2))}


@pytest.mark.mpi(sizes=SIZES)
def test_object_gather_scatter_allgather_alltoall(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for root in _roots(size):
        gathered = mpi_comm.gather(('g', rank), root=root)
        if rank == root:
            assert gathered == [('g', r) for r in range(size)]
        else:
            assert gathered is None
        items = [r * 3 for r in range(size)] if rank == root else None
        assert mpi_comm.scatter(items, root=root) == rank * 3
    assert mpi_comm.allgather(rank ** 2) == [r ** 2 for r in range(size)]
    sent = ['{}->{}'.format(rank, dest) for dest in range(size)]
    assert mpi_comm.alltoall(sent) == ['{}->{}'.format(src, rank)
                                       for src in range(size)]


@pytest.mark.mpi(sizes=SIZES)
def test_object_allreduce_and_reduce_ops(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    assert mpi_comm.allreduce(rank + 1) == size * (size + 1) // 2
    assert mpi_comm.allreduce(rank + 1, op=MPI.SUM) == size * (size + 1) // 2
    assert mpi_comm.allreduce(rank + 1, op=MPI.PROD) == functools.reduce(
        operator.mul, range(1, size + 1))
    assert mpi_comm.allreduce(rank - 2, op=MPI.MAX) == size - 3
    assert mpi_comm.allreduce(rank - 2, op=MPI.MIN) == -2
    assert mpi_comm.allreduce(rank == 0, op=MPI.LAND) == (size == 1)
    assert mpi_comm.allreduce(rank == 0, op=MPI.LOR) is True
    assert mpi_comm.allreduce(0b1111 ^ (1 << (rank % 4)),
                              op=MPI.BAND) == _band_expected(size)
    assert mpi_comm.allreduce(1 << rank, op=MPI.BOR) == (1 << size) - 1
    assert mpi_comm.allreduce([rank]) == list(range(size))
    for root in _roots(size):
        result = mpi_comm.reduce(rank * 2, op=MPI.SUM, root=root)
        assert result == (size * (size - 1) if rank == root else None)



@pytest.mark.mpi(sizes=SIZES)
def test_object_logical_ops_return_bools(mpi_comm, MPI):
    # Found by simulator.fuzz: mpi4py's LAND/LOR give True/False, never
    # one of the operands (LAND(2, 3) is True, not 3).
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    assert MPI.LAND(2, 3) is True and MPI.LAND(0, 3) is False
    assert MPI.LOR('a', []) is True and MPI.LOR(0, '') is False
    if size == 1:
        # One rank combines nothing: its object comes back unchanged.
        assert mpi_comm.allreduce(rank + 2, op=MPI.LAND) == 2
        return
    assert mpi_comm.allreduce(rank + 2, op=MPI.LAND) is True
    assert mpi_comm.allreduce([rank], op=MPI.LOR) is True
    assert mpi_comm.allreduce(0, op=MPI.LOR) is False
    prefix = mpi_comm.scan('x', op=MPI.LAND)
    assert prefix == 'x' if rank == 0 else prefix is True
    # Rank 0 contributes 0, so the conjunction is False.
    result = mpi_comm.reduce(rank, op=MPI.LAND, root=0)
    assert result is (False if rank == 0 else None)


@pytest.mark.mpi(sizes=SIZES)
def test_object_user_op_gets_three_arguments(mpi_comm, MPI):
    # Found by simulator.fuzz: mpi4py calls a user function as
    # fn(x, y, None) for objects, so a two-argument one raises TypeError.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    seen = []

    def concat(a, b, datatype):
        seen.append(datatype)
        return a + b
    op = MPI.Op.Create(concat, commute=False)
    try:
        assert op('a', 'b') == 'ab'
        assert mpi_comm.allreduce(str(rank), op=op) == ''.join(
            str(r) for r in range(size))
        assert mpi_comm.scan([rank], op=op) == list(range(rank + 1))
        assert set(seen) == {None}
    finally:
        op.Free()
    two = MPI.Op.Create(lambda a, b: a + b, commute=True)
    try:
        with pytest.raises(TypeError):
            two(1, 2)
    finally:
        two.Free()


def _band_expected(size):
    value = 0b1111
    for r in range(size):
        value &= 0b1111 ^ (1 << (r % 4))
    return value


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', NUMERIC + ('bool',))
def test_buffer_bcast_every_dtype(mpi_comm, MPI, dtype):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for root in _roots(size):
        buf = (_contribution(root, dtype) if rank == root
               else np.zeros(6, dtype=dtype))
        mpi_comm.Bcast(buf, root=root)
        np.testing.assert_array_equal(buf, _contribution(root, dtype))


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', NUMERIC)
def test_buffer_allreduce_sum_prod_every_dtype(mpi_comm, MPI, dtype):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = _contribution(rank, dtype)
    for op, combine in ((MPI.SUM, np.add), (MPI.PROD, np.multiply)):
        result = np.zeros_like(mine)
        mpi_comm.Allreduce(mine, result, op=op)
        np.testing.assert_array_equal(result,
                                      _expected(size, dtype, combine))
        assert result.dtype == np.dtype(dtype)


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', REAL)
def test_buffer_allreduce_max_min(mpi_comm, MPI, dtype):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = _contribution(rank, dtype)
    for op, combine in ((MPI.MAX, np.maximum), (MPI.MIN, np.minimum)):
        result = np.zeros_like(mine)
        mpi_comm.Allreduce(mine, result, op=op)
        np.testing.assert_array_equal(result,
                                      _expected(size, dtype, combine))


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', INTEGER + ('bool',))
def test_buffer_allreduce_logical_ops(mpi_comm, MPI, dtype):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = ((np.arange(6) + rank) % 2).astype(dtype)
    ones = ((np.arange(6) + r) % 2 for r in range(size))
    parts = [p.astype(bool) for p in ones]
    for op, combine in ((MPI.LAND, np.logical_and),
                        (MPI.LOR, np.logical_or)):
        result = np.zeros_like(mine)
        mpi_comm.Allreduce(mine, result, op=op)
        expected = functools.reduce(combine, parts)
        np.testing.assert_array_equal(result.astype(bool), expected)
        assert result.dtype == np.dtype(dtype)


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype', INTEGER)
def test_buffer_allreduce_bitwise_ops(mpi_comm, MPI, dtype):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = np.array([1 << (rank % 7), 0x7f ^ (1 << (rank % 7)), rank],
                    dtype=dtype)
    parts = [np.array([1 << (r % 7), 0x7f ^ (1 << (r % 7)), r], dtype=dtype)
             for r in range(size)]
    for op, combine in ((MPI.BAND, np.bitwise_and),
                        (MPI.BOR, np.bitwise_or)):
        result = np.zeros_like(mine)
        mpi_comm.Allreduce(mine, result, op=op)
        np.testing.assert_array_equal(result,
                                      functools.reduce(combine, parts))


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_allreduce_in_place(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    buf = np.arange(10, dtype=np.float64) * (rank + 1)
    mpi_comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    np.testing.assert_array_equal(
        buf, np.arange(10) * size * (size + 1) / 2)


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_allreduce_multidimensional_and_spec(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = np.full((2, 3), rank, dtype=np.float32)
    result = np.zeros((2, 3), dtype=np.float32)
    mpi_comm.Allreduce([mine, MPI.FLOAT], [result, MPI.FLOAT], op=MPI.MAX)
    np.testing.assert_array_equal(result, np.full((2, 3), size - 1))


@pytest.mark.mpi(sizes=SIZES)
def test_iallreduce_request(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = np.full(5, rank + 1, dtype=np.int64)
    result = np.zeros(5, dtype=np.int64)
    request = mpi_comm.Iallreduce(mine, result, op=MPI.SUM)
    request.Wait()
    np.testing.assert_array_equal(result,
                                  np.full(5, size * (size + 1) // 2))


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_reduce_to_each_root_and_in_place(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for root in _roots(size):
        mine = np.array([rank, 1, -rank], dtype=np.int32)
        result = np.full(3, -7, dtype=np.int32)
        mpi_comm.Reduce(mine, result if rank == root else None,
                        op=MPI.SUM, root=root)
        if rank == root:
            total = size * (size - 1) // 2
            np.testing.assert_array_equal(result, [total, size, -total])
        else:
            np.testing.assert_array_equal(result, [-7, -7, -7])
        buf = np.array([rank + 1.0, -rank])
        if rank == root:
            mpi_comm.Reduce(MPI.IN_PLACE, buf, op=MPI.MAX, root=root)
            np.testing.assert_array_equal(buf, [size, 0.0])
        else:
            mpi_comm.Reduce(buf, None, op=MPI.MAX, root=root)


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_gather_scatter_allgather(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    for root in _roots(size):
        mine = np.array([rank, rank * 10], dtype=np.int64)
        gathered = np.zeros((size, 2), dtype=np.int64)
        mpi_comm.Gather(mine, gathered if rank == root else None, root=root)
        if rank == root:
            np.testing.assert_array_equal(
                gathered, [[r, r * 10] for r in range(size)])
        source = (np.arange(size * 3, dtype=np.float32).reshape(size, 3)
                  if rank == root else None)
        part = np.zeros(3, dtype=np.float32)
        mpi_comm.Scatter(source, part, root=root)
        np.testing.assert_array_equal(part, np.arange(3) + 3 * rank)
    everyone = np.zeros(size * 2, dtype=np.uint16)
    mpi_comm.Allgather(np.array([rank, 2 * rank], dtype=np.uint16),
                       everyone)
    np.testing.assert_array_equal(
        everyone, np.ravel([[r, 2 * r] for r in range(size)]))


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_gather_scatter_in_place_at_root(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    root = size - 1
    table = np.full((size, 2), -1, dtype=np.int32)
    if rank == root:
        table[rank] = [rank, rank]
        mpi_comm.Gather(MPI.IN_PLACE, table, root=root)
        np.testing.assert_array_equal(table,
                                      [[r, r] for r in range(size)])
    else:
        mpi_comm.Gather(np.array([rank, rank], dtype=np.int32), None,
                        root=root)
    if rank == root:
        source = np.arange(size * 2, dtype=np.int32).reshape(size, 2)
        mpi_comm.Scatter(source, MPI.IN_PLACE, root=root)
        np.testing.assert_array_equal(source[rank], [2 * rank, 2 * rank + 1])
    else:
        part = np.zeros(2, dtype=np.int32)
        mpi_comm.Scatter(None, part, root=root)
        np.testing.assert_array_equal(part, [2 * rank, 2 * rank + 1])
    everyone = np.full((size, 3), -1.0)
    everyone[rank] = rank
    mpi_comm.Allgather(MPI.IN_PLACE, everyone)
    np.testing.assert_array_equal(everyone,
                                  np.repeat(np.arange(size), 3)
                                  .reshape(size, 3))


def _uneven(size):
    counts = [(r % 3) + (1 if r == 0 else 0) for r in range(size)]
    displs = [sum(counts[:r]) for r in range(size)]
    return counts, displs


@pytest.mark.mpi(sizes=SIZES)
def test_gatherv_scatterv_uneven_counts(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    counts, displs = _uneven(size)
    total = sum(counts)
    for root in _roots(size):
        mine = np.full(counts[rank], rank + 0.5)
        table = np.full(total, -1.0)
        mpi_comm.Gatherv(mine, [table, counts, displs, MPI.DOUBLE]
                         if rank == root else None, root=root)
        if rank == root:
            np.testing.assert_array_equal(
                table, np.repeat(np.arange(size) + 0.5, counts))
        source = (np.arange(total, dtype=np.int32) if rank == root
                  else None)
        part = np.full(counts[rank], -1, dtype=np.int32)
        mpi_comm.Scatterv([source, counts, displs, MPI.INT]
                          if rank == root else None, part, root=root)
        np.testing.assert_array_equal(
            part, np.arange(displs[rank], displs[rank] + counts[rank]))


@pytest.mark.mpi(sizes=SIZES)
def test_gatherv_with_gaps_in_displacements(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    counts = [2] * size
    displs = [3 * r for r in range(size)]
    table = np.full(3 * size, -1, dtype=np.int64)
    mpi_comm.Gatherv(np.array([rank, rank], dtype=np.int64),
                     [table, counts, displs, MPI.INT64_T]
                     if rank == 0 else None, root=0)
    if rank == 0:
        expected = np.ravel([[r, r, -1] for r in range(size)])
        np.testing.assert_array_equal(table, expected)


@pytest.mark.mpi(sizes=SIZES)
def test_allgatherv_uneven_counts_and_in_place(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    counts, displs = _uneven(size)
    total = sum(counts)
    table = np.zeros(total, dtype=np.float32)
    mpi_comm.Allgatherv(np.full(counts[rank], rank, dtype=np.float32),
                        [table, counts, displs, MPI.FLOAT])
    expected = np.repeat(np.arange(size), counts).astype(np.float32)
    np.testing.assert_array_equal(table, expected)
    table = np.full(total, -1, dtype=np.float32)
    table[displs[rank]:displs[rank] + counts[rank]] = rank
    mpi_comm.Allgatherv(MPI.IN_PLACE, [table, counts, displs, MPI.FLOAT])
    np.testing.assert_array_equal(table, expected)


@pytest.mark.mpi(sizes=SIZES)
def test_alltoall_buffers(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    sent = np.array([[rank, dest] for dest in range(size)], dtype=np.int32)
    received = np.zeros((size, 2), dtype=np.int32)
    mpi_comm.Alltoall(sent, received)
    np.testing.assert_array_equal(
        received, [[src, rank] for src in range(size)])


@pytest.mark.mpi(sizes=SIZES)
def test_alltoallv_uneven_counts(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    # rank sends (dest + 1) copies of 100*rank + dest to each dest.
    send_counts = [dest + 1 for dest in range(size)]
    send_displs = [sum(send_counts[:d]) for d in range(size)]
    sent = np.concatenate([np.full(dest + 1, 100 * rank + dest)
                           for dest in range(size)]).astype(np.int64)
    recv_counts = [rank + 1] * size
    recv_displs = [(rank + 1) * src for src in range(size)]
    received = np.full(size * (rank + 1), -1, dtype=np.int64)
    mpi_comm.Alltoallv([sent, send_counts, send_displs, MPI.INT64_T],
                       [received, recv_counts, recv_displs, MPI.INT64_T])
    expected = np.concatenate([np.full(rank + 1, 100 * src + rank)
                               for src in range(size)])
    np.testing.assert_array_equal(received, expected)


@pytest.mark.mpi(sizes=SIZES)
def test_reduce_scatter_block(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    mine = np.arange(size * 3, dtype=np.float64) + rank
    block = np.zeros(3)
    mpi_comm.Reduce_scatter_block(mine, block, op=MPI.SUM)
    whole = sum(np.arange(size * 3) + r for r in range(size))
    np.testing.assert_array_equal(block, whole[3 * rank:3 * rank + 3])
    mine = np.arange(size * 2, dtype=np.int32) * (rank + 1)
    block = np.zeros(2, dtype=np.int32)
    mpi_comm.Reduce_scatter_block(mine, block, op=MPI.MAX)
    np.testing.assert_array_equal(
        block, np.arange(2 * rank, 2 * rank + 2) * size)


@pytest.mark.mpi(sizes=SIZES)
def test_reduce_scatter_receive_buffer_must_hold_exactly_its_count(
        mpi_comm, MPI):
    # Found by simulator.fuzz: mpi4py raises ValueError before
    # communicating when the receive buffer is longer than counts[rank].
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    counts = [r + 1 for r in range(size)]
    send = np.ones(sum(counts))
    with pytest.raises(ValueError, match='mismatch in receive count'):
        mpi_comm.Reduce_scatter(send, np.zeros(counts[rank] + 2), counts,
                                op=MPI.SUM)
    mine = np.zeros(counts[rank])
    mpi_comm.Reduce_scatter(send, mine, counts, op=MPI.SUM)
    assert mine.tolist() == [float(size)] * counts[rank]


def _chain(blocks, combine):
    """((b0 op b1) op b2) ...: the order Open MPI's linear scan uses."""
    out = blocks[0]
    for block in blocks[1:]:
        out = combine(out, block)
    return out


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_scan_and_exscan_combine_left_to_right(mpi_comm, MPI):
    # The simulator lacked buffer Scan/Exscan (mpi4py has them).
    rank = mpi_comm.Get_rank()

    def block(r):
        rs = np.random.RandomState(r)
        return (rs.standard_normal(50) * 10.0 ** rs.randint(-3, 4, 50)
                ).astype(np.float32)
    out = np.zeros(50, np.float32)
    mpi_comm.Scan(block(rank), out, op=MPI.SUM)
    want = _chain([block(r) for r in range(rank + 1)], np.add)
    assert out.tobytes() == want.tobytes()
    inout = block(rank)
    mpi_comm.Scan(MPI.IN_PLACE, inout, op=MPI.SUM)
    assert inout.tobytes() == want.tobytes()
    ex = np.full(50, 7, np.float32)
    mpi_comm.Exscan(block(rank), ex, op=MPI.SUM)
    if rank == 0:
        assert (ex == 7).all()      # rank 0's buffer is left alone
    else:
        want = _chain([block(r) for r in range(rank)], np.add)
        assert ex.tobytes() == want.tobytes()
    ints = np.array([rank + 1, 2 * rank], dtype=np.int64)
    got = np.zeros(2, np.int64)
    mpi_comm.Scan(ints, got, op=MPI.MAX)
    assert got.tolist() == [rank + 1, 2 * rank]
    mpi_comm.Exscan(MPI.IN_PLACE, ints, op=MPI.PROD)
    if rank > 0:
        assert ints.tolist() == [
            int(np.prod(np.arange(1, rank + 1))),
            int(np.prod([2 * r for r in range(rank)]))]


@pytest.mark.mpi(sizes=SIZES)
def test_collectives_are_ordered_per_communicator(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    dup = mpi_comm.Dup()
    try:
        # Interleaving two communicators' collectives in the same order on
        # every rank keeps each result with its own communicator.
        a = mpi_comm.allreduce(rank)
        b = dup.allreduce(1)
        c = mpi_comm.bcast('parent', root=0)
        d = dup.bcast('dup', root=size - 1)
        assert (a, b, c, d) == (size * (size - 1) // 2, size, 'parent',
                                'dup')
    finally:
        dup.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_many_back_to_back_collectives(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    total = np.zeros(1, dtype=np.int64)
    for step in range(50):
        value = np.array([rank * step], dtype=np.int64)
        result = np.zeros(1, dtype=np.int64)
        mpi_comm.Allreduce(value, result, op=MPI.SUM)
        total += result
    assert total[0] == sum(range(50)) * size * (size - 1) // 2


@pytest.mark.mpi(sizes=SIZES)
def test_collective_objects_are_private_copies(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    shared = mpi_comm.bcast(['root'] if rank == 0 else None, root=0)
    shared.append(rank)
    everyone = mpi_comm.allgather({'r': rank})
    everyone[0]['r'] = 'changed by {}'.format(rank)
    mpi_comm.Barrier()
    # Each rank holds its own copy: nobody sees the others' appends.
    assert shared == ['root', rank]
    assert mpi_comm.allgather(len(shared)) == [2] * size
    assert everyone[0]['r'] == 'changed by {}'.format(rank)


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('call', ['Iallreduce', 'Ireduce', 'Iscan'])
def test_padded_pair_buffers_left_alone_are_not_reported(mpi_comm, MPI,
                                                         call):
    # MAXLOC's (double, int) pairs with NumPy's aligned layout carry 4
    # bytes of padding, which a copy of the array leaves undefined: the
    # check must compare the bytes the call saw, not such a copy.
    rank, size = mpi_comm.rank, mpi_comm.size
    pair = np.dtype([('value', 'f8'), ('index', 'i4')], align=True)
    send = np.zeros(3, pair)
    send['value'] = [rank, -rank, 1.0]
    send['index'] = rank
    out = np.zeros(3, pair)
    if call == 'Ireduce':
        request = mpi_comm.Ireduce([send, MPI.DOUBLE_INT],
                                   [out, MPI.DOUBLE_INT], op=MPI.MAXLOC,
                                   root=0)
    else:
        request = getattr(mpi_comm, call)([send, MPI.DOUBLE_INT],
                                          [out, MPI.DOUBLE_INT],
                                          op=MPI.MAXLOC)
    request.Wait()
    last = rank if call == 'Iscan' else size - 1
    if call != 'Ireduce' or rank == 0:
        assert out['value'].tolist() == [last, 0.0, 1.0]
        assert out['index'].tolist() == [last, 0, 0]


@pytest.mark.mpi(sizes=(1, 2, 3))
@pytest.mark.parametrize('length', [5, 1 << 17], ids=['small', 'large'])
@pytest.mark.parametrize('complete', ['Wait', 'Test'])
@pytest.mark.parametrize('in_place', [False, True],
                         ids=['buffers', 'in_place'])
@pytest.mark.parametrize('call', nonblocking_reductions.CALLS)
def test_reduction_buffers_left_alone_until_completion_are_not_reported(
        mpi_comm, MPI, call, in_place, complete, length):
    # The simulator checks a pending reduction's receive buffer around
    # its own early write of the result (the last rank to arrive, or a
    # progress thread from 512 KiB, writes it); a program that leaves
    # it alone until completion, then reads and rewrites it, is right.
    rank, size = mpi_comm.rank, mpi_comm.size
    root = size - 1
    name = nonblocking_reductions.i_name(call)
    request, (send, recv), expected, last = nonblocking_reductions.start(
        mpi_comm, MPI, call, in_place, length, root=root, fill=-7.0)
    if complete == 'Wait':
        request.Wait()
    else:
        while not request.Test():
            pass
    if (name != 'Ireduce' or rank == root) and last >= 0:
        assert recv[:length].tolist() == expected.tolist()
    elif not in_place:
        assert recv.tolist() == [-7.0] * length     # left alone
    recv[:] = -1.0                  # after completion: allowed
    mpi_comm.Barrier()
    if call != name:
        request.Free()
