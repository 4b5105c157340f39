"""MPI-IO (``MPI.File``): what lands on disk, views, file pointers, errors.

Each multi-rank test runs in-process on the simulator and under
``mpiexec`` on Open MPI with the same assertions. The ranks agree on one
path (rank 0's ``tmp_path``, broadcast: under mpiexec every process has
its own) and check the file's bytes with plain Python reads.
"""
import os
import pickle

import numpy as np
import pytest

import simulator
from simulator.errors import CollectiveMismatchError

SIZES = (1, 2, 3)


def _path(comm, tmp_path, name='data'):
    return comm.bcast(str(tmp_path / name) if comm.rank == 0 else None, 0)


def _disk(path):
    with open(path, 'rb') as f:
        return f.read()


@pytest.mark.mpi(sizes=SIZES)
def test_explicit_offsets_put_each_ranks_block_on_disk(mpi_comm, MPI,
                                                       tmp_path):
    comm, rank, size = mpi_comm, mpi_comm.rank, mpi_comm.size
    path = _path(comm, tmp_path)
    fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
    assert fh.Get_size() == 0 and fh.Get_position() == 0
    comm.Barrier()
    fh.Write_at(16 * rank, np.arange(4, dtype='i4') + 10 * rank)
    fh.Sync()
    comm.Barrier()
    expected = np.concatenate([np.arange(4, dtype='i4') + 10 * r
                               for r in range(size)])
    assert _disk(path) == expected.tobytes()
    assert fh.Get_size() == 16 * size
    peer = (rank + 1) % size
    got, status = np.full(6, -1, 'i4'), MPI.Status()
    fh.Read_at(16 * peer, got, status)       # past the end for the last
    assert status.Get_count(MPI.INT) == (6 if peer < size - 1 else 4)
    assert list(got[:4]) == [10 * peer + i for i in range(4)]
    assert list(got[4:]) == ([10 * peer + 10, 10 * peer + 11]
                             if peer < size - 1 else [-1, -1])
    req = fh.Iread_at(0, [got, 2, MPI.INT])
    req.Wait(status)
    assert status.Get_count(MPI.INT) == 2 and list(got[:2]) == [0, 1]
    comm.Barrier()
    fh.Write_at_all(16 * rank + 4, np.array([-rank], 'i4'), status)
    assert status.Get_count(MPI.BYTE) == 4
    comm.Barrier()
    assert np.frombuffer(_disk(path), 'i4')[1::4].tolist() == \
        [-r for r in range(size)]
    fh.Close()
    assert not fh and fh == MPI.FILE_NULL
    comm.Barrier()
    if rank == 0:
        MPI.File.Delete(path)
    comm.Barrier()
    assert not os.path.exists(path)


@pytest.mark.mpi(sizes=SIZES)
def test_strided_views_interleave_the_ranks(mpi_comm, MPI, tmp_path):
    comm, rank, size = mpi_comm, mpi_comm.rank, mpi_comm.size
    path = _path(comm, tmp_path)
    fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
    # every rank sees every size-th pair of ints, from its own pair on
    filetype = MPI.INT.Create_vector(1, 2, 2 * size).Create_resized(
        0, 8 * size).Commit()
    fh.Set_view(8 * rank, MPI.INT, filetype)
    filetype.Free()        # the view keeps its own
    disp, etype, ftype, rep = fh.Get_view()
    assert (disp, rep) == (8 * rank, 'native') and etype == MPI.INT
    assert ftype.Get_extent() == (0, 8 * size) and ftype.Get_size() == 8
    ftype.Free()
    assert [fh.Get_byte_offset(i) for i in range(5)] == [
        8 * rank + 8 * size * (i // 2) + 4 * (i % 2) for i in range(5)]
    mine = np.arange(6, dtype='i4') + 100 * rank
    fh.Write_all(mine)
    assert fh.Get_position() == 6
    fh.Sync()
    comm.Barrier()
    on_disk = np.frombuffer(_disk(path), 'i4').reshape(3, size, 2)
    for r in range(size):
        assert on_disk[:, r, :].ravel().tolist() == \
            list(range(100 * r, 100 * r + 6))
    fh.Seek(1)
    back = np.zeros(4, 'i4')
    fh.Read_all(back)
    assert back.tolist() == (mine[1:5]).tolist()
    # the whole file through a byte view, from rank 0's pair on
    fh.Set_view(0, MPI.BYTE, MPI.BYTE)
    assert fh.Get_position() == 0 and fh.Get_position_shared() == 0
    raw = bytearray(fh.Get_size())
    fh.Read_at_all(0, raw)
    assert bytes(raw) == on_disk.tobytes()
    fh.Close()


@pytest.mark.mpi(sizes=SIZES)
def test_ordered_accesses_follow_rank_order(mpi_comm, MPI, tmp_path):
    comm, rank, size = mpi_comm, mpi_comm.rank, mpi_comm.size
    path = _path(comm, tmp_path)
    amode = MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE
    fh = MPI.File.Open(comm, path, amode)
    fh.Set_view(0, MPI.SHORT)
    status = MPI.Status()
    fh.Write_ordered(np.full(rank + 1, rank, 'i2'), status)
    assert status.Get_count(MPI.SHORT) == rank + 1
    total = size * (size + 1) // 2
    assert fh.Get_position_shared() == total
    fh.Sync()
    comm.Barrier()
    assert np.frombuffer(_disk(path), 'i2').tolist() == [
        r for r in range(size) for _ in range(r + 1)]
    fh.Seek_shared(0)
    got = np.zeros(rank + 1, 'i2')
    fh.Read_ordered_begin(got)
    fh.Read_ordered_end(got, status)
    assert got.tolist() == [rank] * (rank + 1)
    assert status.Get_count(MPI.SHORT) == rank + 1
    fh.Seek_shared(-1, MPI.SEEK_END)
    assert fh.Get_position_shared() == total - 1
    fh.Close()
    comm.Barrier()
    assert not os.path.exists(path)


@pytest.mark.mpi(sizes=SIZES)
def test_shared_pointer_gives_each_write_its_own_place(mpi_comm, MPI,
                                                      tmp_path):
    comm, rank, size = mpi_comm, mpi_comm.rank, mpi_comm.size
    path = _path(comm, tmp_path)
    fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
    fh.Set_view(0, MPI.DOUBLE)
    fh.Write_shared(np.full(3, rank, 'f8'))
    fh.Iwrite_shared(np.full(2, rank + 0.5, 'f8')).Wait()
    fh.Sync()
    comm.Barrier()
    assert fh.Get_position_shared() == 5 * size
    values = np.frombuffer(_disk(path), 'f8')
    # blocks land whole, in some order, none over another
    blocks = []
    i = 0
    while i < len(values):
        n = 3 if values[i] == int(values[i]) else 2
        assert (values[i:i + n] == values[i]).all(), values
        blocks.append(values[i])
        i += n
    assert sorted(blocks) == sorted([r for r in range(size)] +
                                    [r + 0.5 for r in range(size)])
    fh.Close()


@pytest.mark.mpi(sizes=SIZES)
def test_individual_pointers_seek_and_split_collectives(mpi_comm, MPI,
                                                        tmp_path, error_class):
    comm, rank, size = mpi_comm, mpi_comm.rank, mpi_comm.size
    path = _path(comm, tmp_path)
    fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
    fh.Set_view(0, MPI.INT)
    fh.Seek(4 * rank)
    fh.Iwrite(np.array([rank, rank + 1], 'i4')).Wait()
    assert fh.Get_position() == 4 * rank + 2
    fh.Seek(1, MPI.SEEK_CUR)
    status = MPI.Status()
    mine = np.array([-1], 'i4')
    fh.Write_all_begin(mine)
    with pytest.raises(TypeError):
        fh.Write_all_end(None)
    fh.Write_all_end(mine, status)
    assert status.Get_count(MPI.INT) == 1
    fh.Sync()
    comm.Barrier()
    # each rank's four ints: its two, a hole (reads as 0), its -1
    assert np.frombuffer(_disk(path), 'i4').tolist() == [
        v for r in range(size) for v in (r, r + 1, 0, -1)]
    fh.Seek(0, MPI.SEEK_END)
    assert fh.Get_position() == 4 * size
    fh.Seek(-3, MPI.SEEK_END)
    got = np.zeros(3, 'i4')
    fh.Read(got, status)
    assert got.tolist() == [size, 0, -1]
    assert fh.Get_position() == 4 * size
    assert error_class(fh.Seek, -1) == MPI.ERR_OTHER
    assert error_class(fh.Seek, 0, 12345) == MPI.ERR_ARG
    fh.Seek(4 * rank)
    fh.Read_all_begin(got)
    fh.Read_all_end(got, status)
    assert got.tolist() == [rank, rank + 1, 0]
    assert status.Get_count(MPI.INT) == 3
    assert fh.Get_position() == 4 * rank + 3
    fh.Close()


@pytest.mark.mpi(sizes=SIZES)
def test_open_modes_and_errors_give_ompios_classes(mpi_comm, MPI, tmp_path,
                                                   error_class):
    comm = mpi_comm
    path = _path(comm, tmp_path)
    missing = _path(comm, tmp_path, 'missing')
    assert error_class(MPI.File.Open, comm, missing,
                        MPI.MODE_RDONLY) == MPI.ERR_NO_SUCH_FILE
    for amode in (0, MPI.MODE_RDONLY | MPI.MODE_RDWR,
                  MPI.MODE_RDONLY | MPI.MODE_CREATE,
                  MPI.MODE_RDWR | MPI.MODE_SEQUENTIAL):
        assert error_class(MPI.File.Open, comm, path,
                            amode) == MPI.ERR_AMODE, amode
    assert error_class(MPI.File.Open, comm, str(tmp_path),
                        MPI.MODE_RDWR) == MPI.ERR_BAD_FILE
    fh = MPI.File.Open(comm, path, MPI.MODE_WRONLY | MPI.MODE_CREATE)
    assert fh.Get_amode() == MPI.MODE_WRONLY | MPI.MODE_CREATE
    assert error_class(MPI.File.Open, comm, path, MPI.MODE_WRONLY |
                        MPI.MODE_CREATE | MPI.MODE_EXCL) == \
        MPI.ERR_FILE_EXISTS
    assert error_class(fh.Read_at, 0, bytearray(1)) == MPI.ERR_ACCESS
    assert error_class(fh.Set_view, 0, MPI.INT, MPI.INT,
                        'no-such-rep') == MPI.ERR_UNSUPPORTED_DATAREP
    assert error_class(fh.Set_view, 0, MPI.DOUBLE, MPI.INT) == \
        MPI.ERR_ARG
    assert error_class(fh.Set_view, 0, MPI.INT,
                        MPI.INT.Create_contiguous(2)) == MPI.ERR_TYPE
    fh.Write_at(0, b'abc')
    fh.Close()
    assert error_class(fh.Get_size) == MPI.ERR_FILE
    assert error_class(MPI.FILE_NULL.Close) == MPI.ERR_FILE
    fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
    assert fh.Get_size() == 3
    assert error_class(fh.Write_at, 0, b'x') == MPI.ERR_READ_ONLY
    fh.Close()
    fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_APPEND)
    assert fh.Get_position() == fh.Get_position_shared() == 3
    fh.Close()
    comm.Barrier()
    if comm.rank == 0:
        MPI.File.Delete(path)
    comm.Barrier()
    assert error_class(MPI.File.Delete, path) == MPI.ERR_NO_SUCH_FILE


@pytest.mark.mpi(sizes=SIZES)
def test_file_handles_properties_and_error_handlers(mpi_comm, MPI,
                                                    tmp_path, simulated):
    if not simulated and mpi_comm.size != MPI.COMM_WORLD.size:
        # Under mpiexec -n 4, the 3-rank run of this test passes on every
        # process and then Open MPI 5.0.11 never returns from MPI_Finalize
        # (not isolated: each step alone in a script exits cleanly).
        pytest.skip('hangs Open MPI 5.0.11 at exit on a sub-communicator')
    comm = mpi_comm
    path = _path(comm, tmp_path)
    amode = MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE
    fh = MPI.File.Open(comm, path, amode)
    assert fh and fh != MPI.FILE_NULL
    assert MPI.File.fromhandle(fh.handle) == fh
    assert MPI.File.f2py(fh.py2f()) == fh
    assert MPI.File(fh) == fh
    group = fh.Get_group()
    assert MPI.Group.Compare(group, comm.Get_group()) == MPI.IDENT
    assert (fh.group_size, fh.group_rank) == (comm.size, comm.rank)
    assert not fh.atomicity
    fh.atomicity = True
    assert fh.Get_atomicity() is True
    fh.Preallocate(10)
    fh.Preallocate(4)
    assert fh.size == 10
    comm.Barrier()      # (ompio may truncate before every rank has read)
    fh.Set_size(2)
    assert fh.Get_size() == 2
    assert fh.Get_type_extent(MPI.DOUBLE) == 8
    with pytest.raises(ValueError):
        pickle.dumps(fh)
    assert fh.Get_errhandler() == MPI.ERRORS_RETURN
    seen = []
    handler = MPI.File.Create_errhandler(
        lambda f, code: seen.append((f == fh, code)))
    fh.Set_errhandler(handler)
    fh.Call_errhandler(MPI.ERR_OTHER)
    assert seen == [(True, MPI.ERR_OTHER)]
    fh.Set_errhandler(MPI.ERRORS_RETURN)
    handler.Free()
    copy = MPI.File(fh)
    copy.Close()
    assert not copy and fh      # the other handle names the closed file
    comm.Barrier()
    assert not os.path.exists(path)


def test_mismatched_file_collectives_are_reported(tmp_path):
    path = str(tmp_path / 'f')

    def body(comm):
        MPI = simulator.mpi
        fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
        if comm.rank == 0:
            fh.Set_size(8)
        else:
            fh.Sync()
    with pytest.raises(CollectiveMismatchError) as info:
        simulator.run(body, 2)
    assert 'File.Set_size' in str(info.value)
    assert 'File.Sync' in str(info.value)


def test_split_collectives_pair_up(tmp_path, error_class):
    # Open MPI crashes on an _end without _begin and hangs in the _end
    # after a second _begin (ERR_OTHER, as here); the simulator names them
    path = str(tmp_path / 'f')

    def body(comm):
        MPI = simulator.mpi
        fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
        with pytest.raises(MPI.Exception, match='Write_all_end without'):
            fh.Write_all_end(b'x')
        fh.Write_at_all_begin(0, b'x')
        with pytest.raises(MPI.Exception, match='pending: Write_at_all'):
            fh.Write_all_end(b'x')
        with pytest.raises(MPI.Exception, match='one split collective') \
                as info:
            fh.Read_all_begin(bytearray(1))
        assert info.value.Get_error_class() == MPI.ERR_OTHER
        fh.Write_at_all_end(b'x')
        fh.Close()
    simulator.run(body, 2)
