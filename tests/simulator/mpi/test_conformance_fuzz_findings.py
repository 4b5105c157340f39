"""Conformance: what the differential fuzzer (simulator.fuzz) found.

Each test is one difference between the simulator and Open MPI that a
fuzz program showed, cut down to a few calls. Every test runs in-process
on the simulator and under ``mpiexec`` with the same assertions.
"""
import numpy as np
import pytest

from simulator.engine import reduction_order as order
from simulator.mpi.ops import OP_NAMES

SIZES = (1, 2, 3, 4, 5)
# The model computes with the simulator's op (real mpi4py's has no
# NumPy kernel).
MODEL_SUM = OP_NAMES['SUM']


@pytest.mark.mpi(sizes=SIZES)
def test_nonblocking_collectives_complete_in_each_ranks_own_order(
        mpi_comm, MPI):
    # Rank 0 completes the Igather first, the others the Ibcast: neither
    # may wait for its peers' completion (the simulator used to wait for
    # every rank's Wait: a deadlock, or a Waitany without a ready request).
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    root = size - 1
    send = np.full(3, rank, dtype='i4')
    gathered = np.full(3 * size, -1, dtype='i4')
    data = np.arange(4, dtype='f8') * (rank == root)
    requests = [mpi_comm.Ibcast(data, root=root),
                mpi_comm.Igather(send, gathered if rank == 0 else None,
                                 root=0)]
    if rank == 0:
        requests[1].Wait()
        requests[0].Wait()
    else:
        while MPI.Request.Waitany(requests) != MPI.UNDEFINED:
            pass
    # Reusing a send buffer once its own request is done is legal.
    send[:] = -7
    mpi_comm.Barrier()
    assert data.tolist() == [0.0, 1.0, 2.0, 3.0]
    if rank == 0:
        assert gathered.tolist() == [r for r in range(size)
                                     for _ in range(3)]


@pytest.mark.mpi(sizes=SIZES)
def test_a_rank_completes_a_collective_while_its_peer_waits_elsewhere(
        mpi_comm, MPI):
    # The last rank completes its Iallgather before sending a token that
    # rank 0 waits for before its own Wait: Open MPI progresses the
    # collective inside rank 0's Recv.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    out = np.zeros(size, dtype='i8')
    request = mpi_comm.Iallgather(np.array([rank * 10], dtype='i8'), out)
    last = size - 1
    token = np.zeros(1, dtype='i4')
    if size > 1 and rank == last:
        request.Wait()
        mpi_comm.Ssend(np.ones(1, dtype='i4'), 0, tag=3)
    elif size > 1 and rank == 0:
        mpi_comm.Recv(token, last, tag=3)
        request.Wait()
    else:
        request.Wait()
    assert out.tolist() == [10 * r for r in range(size)]


def _floats(rank, count):
    rng = np.random.RandomState(rank + 17)
    return rng.standard_normal(count) * 10.0 ** rng.randint(-8, 9, count)


@pytest.mark.mpi(sizes=SIZES)
def test_ireduce_and_ireduce_scatter_sum_in_open_mpis_order(mpi_comm, MPI):
    # Their trees differ from the blocking calls' (coll/tuned), so float
    # sums differ in the last bits unless the simulator follows them.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    inputs = [_floats(r, 4 * size) for r in range(size)]
    wrong = []
    # Below and from pof2(size) elements (binomial tree over ranks with
    # the root swapped for 0, then Rabenseifner's).
    for count in (1, 2, 3, 4 * size):
        for root in range(size):
            out = np.zeros(count)
            mine = inputs[rank][:count]
            mpi_comm.Ireduce(mine, out, op=MPI.SUM, root=root).Wait()
            want = order.expected('Ireduce', [x[:count] for x in inputs],
                                  MODEL_SUM, root=root)
            if rank == root and out.tobytes() != want[root].tobytes():
                wrong.append(('Ireduce', count, root))
    out = np.zeros(4)
    mpi_comm.Ireduce_scatter_block(inputs[rank], out, op=MPI.SUM).Wait()
    want = order.expected('Ireduce_scatter_block', inputs, MODEL_SUM)
    if out.tobytes() != want[rank].tobytes():
        wrong.append('Ireduce_scatter_block')
    counts = [(r % 3) + 1 for r in range(size)]
    out = np.zeros(counts[rank])
    mpi_comm.Ireduce_scatter(inputs[rank][:sum(counts)], out, counts,
                             op=MPI.SUM).Wait()
    want = order.expected('Ireduce_scatter',
                          [x[:sum(counts)] for x in inputs], MODEL_SUM,
                          counts=counts)
    if out.tobytes() != want[rank].tobytes():
        wrong.append('Ireduce_scatter')
    assert wrong == []


@pytest.mark.mpi(sizes=SIZES)
def test_maxloc_on_pair_records_with_names_of_their_own(mpi_comm, MPI):
    # A DOUBLE_INT record is 16 bytes (the C struct's padding) though MPI
    # counts 12: the simulator refused 3 records of 48 bytes as "not a
    # whole number of MPI_DOUBLE_INT elements" unless the fields were
    # named like its own.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    dt = np.dtype([('x', 'f8'), ('loc', 'i4')], align=True)
    send = np.zeros(3, dt)
    send['x'] = [rank % 2, 1.5, -rank]
    send['loc'] = rank
    out = np.zeros(3, dt)
    mpi_comm.Allreduce([send, MPI.DOUBLE_INT], [out, MPI.DOUBLE_INT],
                       op=MPI.MAXLOC)
    assert out['x'].tolist() == [min(size - 1, 1), 1.5, 0.0]
    assert out['loc'].tolist() == [1 if size > 1 else 0, 0, 0]


@pytest.mark.mpi(sizes=SIZES)
def test_mprobe_from_proc_null_gives_a_message_that_a_receive_uses_up(
        mpi_comm, MPI):
    status = MPI.Status()
    message = mpi_comm.Mprobe(MPI.PROC_NULL, 5, status=status)
    assert message == MPI.MESSAGE_NO_PROC
    assert status.Get_source() == MPI.PROC_NULL
    message.Recv(np.zeros(2, 'i4'), status=status)
    assert message == MPI.MESSAGE_NULL
    # The constant itself is untouched.
    assert MPI.MESSAGE_NO_PROC != MPI.MESSAGE_NULL


@pytest.mark.mpi(sizes=(1, 2))
def test_bounds_set_by_resized_are_sticky_in_a_struct(mpi_comm, MPI):
    # Three shorts at 1 and a double resized to (0, 8) at 7: the struct's
    # bounds are the resized member's alone (lb 7, extent 8), as MPI
    # defines explicit bounds; the simulator took lb 1, extent 14.
    double = MPI.DOUBLE.Create_resized(0, 8)
    t = MPI.Datatype.Create_struct([3, 1], [1, 7], [MPI.SHORT, double])
    assert t.Get_extent() == (7, 8)
    assert t.Get_true_extent() == (1, 14)
    u = MPI.Datatype.Create_struct(
        [3, 2], [1, 20], [MPI.DOUBLE.Create_resized(0, 8),
                          MPI.SHORT.Create_resized(-4, 40)])
    assert u.Get_extent() == (1, 95)
    assert u.Create_contiguous(2).Get_extent() == (1, 190)


@pytest.mark.mpi(sizes=(1, 2))
def test_byte_displacement_constructors_pad_the_extent(mpi_comm, MPI):
    # Open MPI rounds every constructor's extent up to the widest
    # alignment inside, as for a struct: three ints 5 bytes apart span
    # 14 bytes but have extent 16 (the simulator said 14).
    cases = [(MPI.INT.Create_hvector(3, 1, 5), (0, 16), (0, 14)),
             (MPI.DOUBLE.Create_hvector(2, 1, 9), (0, 24), (0, 17)),
             (MPI.INT.Create_hindexed([1, 1], [0, 5]), (0, 12), (0, 9)),
             (MPI.INT.Create_hindexed_block(1, [0, 5]), (0, 12), (0, 9)),
             (MPI.INT.Create_hindexed([2], [3]), (3, 8), (3, 8)),
             # explicit bounds are never padded
             (MPI.INT.Create_resized(0, 5).Create_contiguous(2), (0, 10),
              (0, 9))]
    for t, extent, true_extent in cases:
        assert (t.Get_extent(), t.Get_true_extent()) == (extent,
                                                         true_extent)


@pytest.mark.mpi(sizes=(1, 2))
def test_get_elements_counts_the_members_of_a_mixed_struct(mpi_comm, MPI):
    # Two floats and three chars: 11 bytes received are 5 basic
    # elements, 9 bytes 3; the simulator counted whole structs (1).
    comm = MPI.COMM_SELF
    t = MPI.Datatype.Create_struct([2, 3], [0, 8],
                                   [MPI.FLOAT, MPI.SIGNED_CHAR])
    t.Commit()
    pair = t.Create_contiguous(2)
    pair.Commit()
    seen = []
    for n in (11, 22, 9, 4, 3, 12):
        recv = np.zeros(64, 'u1')
        status = MPI.Status()
        comm.Sendrecv([np.arange(n, dtype='u1'), n, MPI.BYTE], 0, 0,
                      [recv, 2, t], 0, 0, status=status)
        seen.append((status.Get_count(t), status.Get_elements(t),
                     status.Get_elements(pair)))
    u = MPI.UNDEFINED
    assert seen == [(1, 5, 5), (2, 10, 10), (u, 3, 3), (u, 1, 1),
                    (u, u, u), (u, u, u)]
    pair.Free()
    t.Free()


@pytest.mark.mpi(sizes=(1, 2))
def test_dup_and_resized_are_named_after_their_parent(mpi_comm, MPI):
    # Open MPI names a duplicate 'Dup <name>', and Create_resized
    # resizes a duplicate; the simulator left both unnamed.
    assert MPI.INT.Dup().Get_name() == 'Dup MPI_INT'
    assert MPI.INT.Dup().Dup().Get_name() == 'Dup Dup MPI_INT'
    assert MPI.LONG.Create_resized(-3, 18).Get_name() == 'Dup MPI_LONG'
    t = MPI.INT.Create_contiguous(2)
    assert t.Dup().Get_name() == 'Dup '
    t.Set_name('foo')
    assert t.Create_resized(0, 4).Get_name() == 'Dup foo'
    assert t.Create_contiguous(1).Get_name() == ''
    deep = MPI.FLOAT
    for _ in range(18):
        deep = deep.Dup()
    assert deep.Get_name() == 'Dup ' * 15 + 'Dup'


@pytest.mark.mpi(sizes=(1, 2))
def test_pack_external_swaps_each_member_of_a_mixed_struct(mpi_comm, MPI):
    # external32 is big-endian: each int, int64, complex half and pair
    # field is byte-swapped by its own size (the simulator left mixed
    # structs and pair types as they were).
    t = MPI.Datatype.Create_struct(
        [1, 1, 1], [0, 8, 16], [MPI.INT.Create_contiguous(2), MPI.INT64_T,
                                MPI.C_FLOAT_COMPLEX])
    t.Commit()
    pair = MPI.Datatype.Create_struct([1, 2], [0, 16],
                                      [MPI.DOUBLE_INT, MPI.SHORT])
    pair.Commit()
    got = []
    for x in (t, pair):
        extent = x.Get_extent()[1]
        data = (np.arange(extent) % 251).astype('u1')
        out = np.zeros(x.Pack_external_size('external32', 1), 'u1')
        assert x.Pack_external('external32', data, out, 0) == out.size
        back = np.zeros(extent, 'u1')
        x.Unpack_external('external32', out, 0, back)
        got.append(out.tobytes().hex())
        mask = np.zeros(extent, bool)
        mask[[i for i in range(extent) if x is t or i < 12 or
              16 <= i < 20]] = True
        assert (back[mask] == data[mask]).all()
    assert got == ['03020100070605040f0e0d0c0b0a09081312111017161514',
                   '07060504030201000b0a090811101312']
    pair.Free()
    t.Free()


@pytest.mark.mpi(sizes=(1, 2))
def test_detach_of_memory_never_attached_fails(mpi_comm, MPI):
    # A fuzz program detached a copy of the memory it had attached:
    # Open MPI fails (MPI_ERR_UNKNOWN), the simulator did nothing.
    win = MPI.Win.Create_dynamic(comm=mpi_comm)
    attached = np.zeros(4, 'i8')
    win.Attach(attached)
    with pytest.raises(MPI.Exception) as info:
        win.Detach(attached.copy())
    assert info.value.Get_error_class() == MPI.ERR_UNKNOWN
    win.Detach(attached)
    win.Free()
