"""Conformance: errors real MPI raises too, with the same exception kind.

mpi4py sets ``ERRORS_RETURN`` on its communicators, so a broken call raises
``MPI.Exception`` whose ``Get_error_class()`` names the rule; the simulator
raises the same.
"""
import numpy as np
import pytest

SIZES = (1, 2, 3, 4, 8)


def _neighbours(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    return (rank + 1) % size, (rank - 1) % size


@pytest.mark.mpi(sizes=SIZES)
def test_receive_buffer_too_small_raises_err_truncate(mpi_comm, MPI):
    right, left = _neighbours(mpi_comm)
    request = mpi_comm.Isend(np.arange(8, dtype=np.float64), right, tag=21)
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Recv(np.zeros(3), source=left, tag=21)
    assert info.value.Get_error_class() == MPI.ERR_TRUNCATE
    request.Wait()
    # The communicator stays usable after the error.
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_send_to_rank_out_of_range_raises_err_rank(mpi_comm, MPI):
    size = mpi_comm.Get_size()
    for dest in (size, -5):
        with pytest.raises(MPI.Exception) as info:
            mpi_comm.Send(np.zeros(2), dest=dest, tag=0)
        assert info.value.Get_error_class() == MPI.ERR_RANK


@pytest.mark.mpi(sizes=SIZES)
def test_recv_from_rank_out_of_range_raises_err_rank(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Recv(np.zeros(2), source=mpi_comm.Get_size(), tag=0)
    assert info.value.Get_error_class() == MPI.ERR_RANK


@pytest.mark.mpi(sizes=SIZES)
def test_negative_tag_raises_err_tag(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Send(np.zeros(2), dest=mpi_comm.Get_rank(), tag=-3)
    assert info.value.Get_error_class() == MPI.ERR_TAG


@pytest.mark.mpi(sizes=SIZES)
def test_bad_root_raises_err_root(mpi_comm, MPI):
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Bcast(np.zeros(2), root=mpi_comm.Get_size())
    assert info.value.Get_error_class() == MPI.ERR_ROOT
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.bcast('x', root=-4)
    assert info.value.Get_error_class() == MPI.ERR_ROOT


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('dtype,op_name', [
    ('bool', 'SUM'), ('bool', 'MAX'), ('complex64', 'MAX'),
    ('complex128', 'MIN'), ('float32', 'BAND'), ('float64', 'LAND'),
    ('complex64', 'BOR')])
def test_op_not_defined_for_dtype_raises_err_op(mpi_comm, MPI, dtype,
                                                op_name):
    # Every rank raises locally before communicating, so none is left
    # waiting in the collective.
    buf = np.ones(4, dtype=dtype)
    with pytest.raises(MPI.Exception) as info:
        mpi_comm.Allreduce(buf, np.zeros_like(buf), op=getattr(MPI, op_name))
    assert info.value.Get_error_class() == MPI.ERR_OP
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_mpi_exception_is_a_runtime_error_with_a_message(mpi_comm, MPI):
    with pytest.raises(RuntimeError) as info:
        mpi_comm.Send(np.zeros(1), dest=mpi_comm.Get_size(), tag=0)
    assert isinstance(info.value, MPI.Exception)
    assert str(info.value)
    assert isinstance(info.value.Get_error_class(), int)
