"""Conformance: buffer specifications as mpi4py accepts them.

``buf``, ``[buf, datatype]``, ``(buf, datatype)``, ``[buf, count,
datatype]``, and for the v-variants ``[buf, counts, displs, datatype]``,
``[buf, (counts, displs), datatype]`` and ``[buf, counts]`` (contiguous
displacements); datatype constants and their sizes; contiguity rules.
"""
import numpy as np
import pytest

SIZES = (1, 2, 3, 4, 8)


def _neighbours(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    return (rank + 1) % size, (rank - 1) % size


DATATYPE_SIZES = (('BYTE', 1), ('SIGNED_CHAR', 1), ('UNSIGNED_CHAR', 1),
                  ('SHORT', 2), ('UNSIGNED_SHORT', 2), ('INT', 4),
                  ('UNSIGNED', 4), ('LONG', 8), ('UNSIGNED_LONG', 8),
                  ('LONG_LONG', 8), ('INT8_T', 1), ('INT16_T', 2),
                  ('INT32_T', 4), ('INT64_T', 8), ('UINT8_T', 1),
                  ('UINT16_T', 2), ('UINT32_T', 4), ('UINT64_T', 8),
                  ('FLOAT', 4), ('DOUBLE', 8), ('C_BOOL', 1),
                  ('C_FLOAT_COMPLEX', 8), ('C_DOUBLE_COMPLEX', 16))


@pytest.mark.mpi(sizes=(1, 2))
def test_datatype_constants_and_sizes(mpi_comm, MPI):
    for name, nbytes in DATATYPE_SIZES:
        datatype = getattr(MPI, name)
        assert datatype.Get_size() == nbytes, name


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('form', ['plain', 'list', 'tuple', 'count'])
def test_send_recv_buffer_spec_forms(mpi_comm, MPI, form):
    right, left = _neighbours(mpi_comm)
    rank = mpi_comm.Get_rank()
    sent = np.arange(5, dtype=np.int32) + 10 * rank
    received = np.full(5, -1, dtype=np.int32)
    specs = {'plain': (sent, received),
             'list': ([sent, MPI.INT], [received, MPI.INT]),
             'tuple': ((sent, MPI.INT), (received, MPI.INT)),
             'count': ([sent, 3, MPI.INT], [received, 5, MPI.INT])}
    send_spec, recv_spec = specs[form]
    request = mpi_comm.Isend(send_spec, right, tag=1)
    status = MPI.Status()
    mpi_comm.Recv(recv_spec, left, 1, status)
    request.Wait()
    count = 3 if form == 'count' else 5
    assert status.Get_count(MPI.INT) == count
    np.testing.assert_array_equal(received[:count],
                                  np.arange(count) + 10 * left)
    np.testing.assert_array_equal(received[count:], -1)


@pytest.mark.mpi(sizes=SIZES)
def test_get_count_in_bytes_and_other_datatypes(mpi_comm, MPI):
    right, left = _neighbours(mpi_comm)
    request = mpi_comm.Isend(np.zeros(6, dtype=np.float32), right, tag=2)
    status = MPI.Status()
    mpi_comm.Recv(np.zeros(6, dtype=np.float32), left, 2, status)
    request.Wait()
    assert status.Get_count(MPI.FLOAT) == 6
    assert status.Get_count(MPI.BYTE) == 24
    assert status.Get_count() == 24


@pytest.mark.mpi(sizes=SIZES)
def test_bcast_partial_count_spec(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    buf = (np.arange(6, dtype=np.float64) if rank == 0
           else np.full(6, -1.0))
    mpi_comm.Bcast([buf, 4, MPI.DOUBLE], root=0)
    np.testing.assert_array_equal(buf[:4], np.arange(4))
    np.testing.assert_array_equal(buf[4:], [4.0, 5.0] if rank == 0
                                  else [-1.0, -1.0])


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('form', ['four', 'pair', 'counts_only'])
def test_scatterv_gatherv_spec_forms(mpi_comm, MPI, form):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    counts = [r + 1 for r in range(size)]
    displs = [sum(counts[:r]) for r in range(size)]
    total = sum(counts)

    def spec(buf):
        if form == 'four':
            return [buf, counts, displs, MPI.DOUBLE]
        if form == 'pair':
            return [buf, (counts, displs), MPI.DOUBLE]
        return [buf, counts]

    source = np.arange(total, dtype=np.float64)
    part = np.zeros(rank + 1)
    mpi_comm.Scatterv(spec(source) if rank == 0 else None, part, root=0)
    np.testing.assert_array_equal(part, source[displs[rank]:
                                               displs[rank] + rank + 1])
    table = np.zeros(total)
    mpi_comm.Gatherv(part * 2, spec(table) if rank == 0 else None, root=0)
    if rank == 0:
        np.testing.assert_array_equal(table, source * 2)


@pytest.mark.mpi(sizes=SIZES)
def test_allgather_and_alltoall_with_datatype_specs(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    everyone = np.zeros(size, dtype=np.int64)
    mpi_comm.Allgather([np.array([rank * 3], dtype=np.int64), MPI.INT64_T],
                       [everyone, MPI.INT64_T])
    np.testing.assert_array_equal(everyone, np.arange(size) * 3)
    received = np.zeros(size, dtype=np.float32)
    mpi_comm.Alltoall([np.arange(size, dtype=np.float32) + rank, MPI.FLOAT],
                      [received, MPI.FLOAT])
    np.testing.assert_array_equal(received, np.arange(size) + rank)


@pytest.mark.mpi(sizes=SIZES)
def test_alltoallv_counts_only_form(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    sent = np.repeat(np.arange(size), 2).astype(np.int32) + 100 * rank
    received = np.zeros(2 * size, dtype=np.int32)
    mpi_comm.Alltoallv([sent, [2] * size], [received, [2] * size])
    expected = np.repeat(100 * np.arange(size), 2) + rank
    np.testing.assert_array_equal(received, expected)


@pytest.mark.mpi(sizes=SIZES)
def test_views_and_offsets_are_valid_buffers(mpi_comm, MPI):
    right, left = _neighbours(mpi_comm)
    rank = mpi_comm.Get_rank()
    backing = np.full(10, rank, dtype=np.int16)
    target = np.full(10, -1, dtype=np.int16)
    request = mpi_comm.Isend(backing[2:6], right, tag=3)
    mpi_comm.Recv(target[4:8], left, tag=3)
    request.Wait()
    np.testing.assert_array_equal(target, [-1] * 4 + [left] * 4 + [-1] * 2)


@pytest.mark.mpi(sizes=SIZES)
def test_non_contiguous_buffer_is_refused(mpi_comm, MPI):
    strided = np.zeros((4, 4))[:, 0]
    with pytest.raises((BufferError, ValueError)):
        mpi_comm.Send(strided, dest=mpi_comm.Get_rank(), tag=4)
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_in_place_reduce_scatter_block_free_forms(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    buf = np.arange(2 * size, dtype=np.int64) + rank
    mpi_comm.Reduce_scatter_block(MPI.IN_PLACE, buf, op=MPI.SUM)
    whole = sum(np.arange(2 * size) + r for r in range(size))
    np.testing.assert_array_equal(buf[:2], whole[2 * rank:2 * rank + 2])


@pytest.mark.mpi(sizes=SIZES)
def test_default_datatypes_are_mpi4py_typecode_types(mpi_comm, MPI):
    # Found by simulator.fuzz: the simulator sent int32 as MPI_INT32_T
    # where mpi4py picks MPI_INT by the typecode (and so on).
    names = {'?': 'MPI_C_BOOL', 'b': 'MPI_SIGNED_CHAR',
             'B': 'MPI_UNSIGNED_CHAR', 'h': 'MPI_SHORT',
             'H': 'MPI_UNSIGNED_SHORT', 'i': 'MPI_INT', 'I': 'MPI_UNSIGNED',
             'l': 'MPI_LONG', 'L': 'MPI_UNSIGNED_LONG',
             'q': 'MPI_LONG_LONG_INT', 'Q': 'MPI_UNSIGNED_LONG_LONG',
             'f': 'MPI_FLOAT', 'd': 'MPI_DOUBLE', 'F': 'MPI_C_COMPLEX',
             'D': 'MPI_C_DOUBLE_COMPLEX'}
    for code, name in names.items():
        assert MPI._typedict[code].Get_name() == name
    assert MPI.C_FLOAT_COMPLEX.Get_name() == 'MPI_C_COMPLEX'
    # The default type of an int32 array is MPI.INT, so naming it on the
    # other side of a reduction is fine ...
    out = np.zeros(3, 'int32')
    mpi_comm.Allreduce(np.ones(3, 'int32'), [out, MPI.INT], op=MPI.SUM)
    assert out.tolist() == [mpi_comm.Get_size()] * 3


@pytest.mark.mpi(sizes=SIZES)
def test_reduction_buffers_must_name_one_datatype(mpi_comm, MPI):
    # ... while MPI_INT32_T is another datatype: mpi4py raises before
    # communicating (on every rank, so no rank is left waiting).
    send, out = np.ones(3, 'int32'), np.zeros(3, 'int32')
    with pytest.raises(ValueError, match='mismatch in send and receive'):
        mpi_comm.Allreduce(send, [out, MPI.INT32_T], op=MPI.SUM)
    out[:] = 7
    mpi_comm.Allreduce([send, MPI.INT32_T], [out, MPI.INT32_T], op=MPI.SUM)
    assert out.tolist() == [mpi_comm.Get_size()] * 3
