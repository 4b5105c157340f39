"""Conformance: buffers that are not NumPy arrays, and None as IN_PLACE.

mpi4py takes any object that exports its memory (the buffer protocol,
``__dlpack__``, ``__cuda_array_interface__``) and MPI writes received data
into that memory. A receive into a private copy would leave the caller's
buffer unwritten with no error (the silent ``Allgather`` of issue 17).
"""
import array

import numpy as np
import pytest

SIZES = (1, 2, 3)


class DLPackExporter:
    """Exports a NumPy array's memory through DLPack only."""

    def __init__(self, data):
        self.data = data

    def __dlpack__(self, stream=None):
        return self.data.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)           # kDLCPU


class HostArrayInterface:
    """Exports host memory through ``__cuda_array_interface__`` (what the
    simulator, like an MPI library, reads as a plain pointer)."""

    def __init__(self, data):
        self.data = data
        self.__cuda_array_interface__ = {
            'version': 3, 'shape': data.shape, 'typestr': data.dtype.str,
            'data': (data.ctypes.data, False), 'strides': None}


def _exporters():
    return {
        'array.array': lambda n: (lambda a: (a, a))(array.array('i',
                                                                [-1] * n)),
        'bytearray-view': lambda n: (lambda b: (
            memoryview(b).cast('i'), memoryview(b).cast('i')))(
                bytearray(b'\xff' * 4 * n)),
        'dlpack': lambda n: (lambda d: (DLPackExporter(d), d))(
            np.full(n, -1, np.intc)),
        'cuda_array_interface': lambda n: (lambda d: (
            HostArrayInterface(d), d))(np.full(n, -1, np.intc)),
    }


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('kind', sorted(_exporters()))
def test_allgather_writes_into_exported_memory(mpi_comm, MPI, kind):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    recv, seen = _exporters()[kind](2 * size)
    send = np.array([rank, 10 * rank], dtype=np.intc)
    mpi_comm.Allgather([send, MPI.INT], [recv, MPI.INT])
    expected = np.array([[r, 10 * r] for r in range(size)]).ravel()
    np.testing.assert_array_equal(np.asarray(seen), expected)


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('kind', sorted(_exporters()))
def test_recv_writes_into_exported_memory(mpi_comm, MPI, kind):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    recv, seen = _exporters()[kind](3)
    send = np.arange(3, dtype=np.intc) + 100 * rank
    request = mpi_comm.Isend([send, MPI.INT], (rank + 1) % size, tag=3)
    mpi_comm.Recv([recv, MPI.INT], (rank - 1) % size, tag=3)
    request.Wait()
    np.testing.assert_array_equal(np.asarray(seen),
                                  np.arange(3) + 100 * ((rank - 1) % size))


@pytest.mark.mpi(sizes=SIZES)
def test_none_send_buffer_is_in_place(mpi_comm, MPI):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    buf = np.full(size, -1, dtype=np.intc)
    buf[rank] = rank + 1
    mpi_comm.Allgather(None, [buf, MPI.INT])
    np.testing.assert_array_equal(buf, np.arange(size) + 1)
    total = np.full(2, rank, dtype=np.intc)
    mpi_comm.Allreduce(None, [total, MPI.INT], op=MPI.SUM)
    np.testing.assert_array_equal(total, [size * (size - 1) // 2] * 2)


@pytest.mark.mpi(sizes=(1, 2))
def test_object_without_memory_is_a_type_error(mpi_comm, MPI):
    with pytest.raises(TypeError):
        mpi_comm.Allgather([object(), MPI.INT], [np.zeros(
            mpi_comm.Get_size(), np.intc), MPI.INT])
