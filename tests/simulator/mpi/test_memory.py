"""MPI.buffer (simulator/mpi/memory.py) as mpi4py 4 gives it: its own
object exporting one-dimensional bytes, emptied in place by release() and
Free_mem, indexed and sliced as mpi4py's. Both ways."""
import array
import pickle

import numpy as np
import pytest

SIZES = (1, 2)


@pytest.mark.mpi(sizes=SIZES)
def test_release_and_free_mem_empty_the_buffer_in_place(mpi_comm, MPI):
    obj = array.array('B', [1, 2, 3])
    buf = MPI.buffer.frombuffer(obj)
    view = memoryview(buf)          # taken before: keeps its memory
    assert buf.address == obj.buffer_info()[0] and buf.nbytes == 3
    buf.release()
    assert (buf.address, buf.nbytes, buf.readonly, buf.obj) == \
        (0, 0, False, None)
    assert memoryview(buf).nbytes == 0 and view.tobytes() == b'\1\2\3'
    mem = MPI.Alloc_mem(8)
    assert type(mem) is MPI.buffer and mem.address != 0
    MPI.Free_mem(mem)
    assert (mem.address, mem.nbytes, len(mem)) == (0, 0, 0)


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_exports_one_dimensional_bytes(mpi_comm, MPI):
    ints = np.arange(3, dtype=np.int32)
    buf = MPI.buffer(ints)
    assert not isinstance(buf, np.ndarray)
    assert (buf.nbytes, buf.itemsize, buf.format, buf.obj is ints) == \
        (12, 4, 'B', True)
    view = memoryview(buf)
    assert (view.format, view.ndim, view.shape, view.strides,
            view.readonly) == ('B', 1, (12,), (1,), False)
    assert buf.cast('i').tolist() == [0, 1, 2]
    assert buf.cast('i', (3, 1)).shape == (3, 1)
    ro = MPI.buffer.frombuffer(b'abc', readonly=True)
    assert memoryview(ro).readonly and ro.obj == b'abc'
    assert ro.toreadonly().address == ro.address
    with pytest.raises(BufferError):
        MPI.buffer.frombuffer(b'abc')           # writable by default
    with pytest.raises(TypeError):              # as mpi4py: no pickling
        pickle.dumps(MPI.buffer.allocate(2))
    empty = MPI.buffer()
    assert (empty.address, empty.obj, len(empty), bool(empty)) == \
        (0, None, 0, False)


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_indexes_and_slices_as_mpi4py(mpi_comm, MPI):
    mem = MPI.buffer.allocate(8, clear=True)
    mem[1:5] = b'abcd'
    mem[-1] = 255
    assert type(mem[1]) is int and mem[1] == ord('a') and mem[-1] == 255
    part = mem[1:5]
    assert type(part) is MPI.buffer and part.obj is mem
    assert part.address == mem.address + 1 and part.tobytes() == b'abcd'
    part[:] = 7                      # writes through to mem
    assert mem.tobytes() == b'\0' + b'\7' * 4 + b'\0\0\xff'
    for bad, error in ((8, IndexError), (slice(None, None, 2), IndexError),
                       (None, TypeError)):
        with pytest.raises(error):
            mem[bad]
        with pytest.raises(error):
            mem[bad] = 0
    with pytest.raises(NotImplementedError):
        del mem[0]
    with pytest.raises(OverflowError):
        mem[0] = 256
    with pytest.raises(ValueError):
        mem[0:1] = mem[1:3]
    with pytest.raises(TypeError):
        MPI.buffer(b'xy')[0] = 1


@pytest.mark.mpi(sizes=SIZES)
def test_fromaddress_wraps_memory_without_an_owner(mpi_comm, MPI):
    obj = array.array('B', [1, 2, 3])
    address = obj.buffer_info()[0]
    buf = MPI.buffer.fromaddress(address, 3)
    buf[0] = 9
    assert obj[0] == 9 and buf.obj is None and buf.address == address
    assert MPI.buffer.fromaddress(address, 0).address == address
    with pytest.raises(ValueError):
        MPI.buffer.fromaddress(address, -1)
    with pytest.raises(ValueError):
        MPI.buffer.fromaddress(0, 1)


@pytest.mark.mpi(sizes=SIZES)
def test_buffers_carry_messages(mpi_comm, MPI, simulated):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    send = MPI.buffer.allocate(4)
    send[:] = rank + 1
    recv = MPI.Alloc_mem(4 * size)
    mpi_comm.Allgather(send, recv)
    assert recv.tobytes() == b''.join(bytes([r + 1]) * 4
                                      for r in range(size))
    MPI.Free_mem(recv)
    if simulated:
        # Open MPI frees any address Free_mem gets (the process aborts):
        # the simulator names the mistake instead
        with pytest.raises(MPI.Exception, match='Alloc_mem'):
            MPI.Free_mem(b'abc')
