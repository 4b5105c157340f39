"""Conformance: handles and what communicators carry (statuses, requests,
error handlers, attributes, info, error classes), as Open MPI 5 and
mpi4py 4 give them.

Each test runs in-process on the simulator and under ``mpiexec`` on Open
MPI with the same assertions; every rank makes the same calls, so no test
waits on another rank except through collectives all ranks make.
"""
import pickle
import threading

import pytest

SIZES = (1, 2, 3)


@pytest.mark.mpi(sizes=SIZES)
def test_status_fields_and_memory(mpi_comm, MPI, error_class):
    status = MPI.Status()
    assert (status.source, status.tag, status.error) == (
        MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.SUCCESS)
    assert status.Get_count(MPI.BYTE) == 0 and not status.Is_cancelled()
    status.Set_elements(MPI.INT, 3)
    assert status.Get_count(MPI.BYTE) == 12 and status.count == 12
    assert status.Get_count(MPI.INT) == 3
    assert status.Get_count(MPI.DOUBLE) == MPI.UNDEFINED
    status.cancelled = True
    copy = MPI.Status(status)
    assert copy.Is_cancelled() and copy.Get_count(MPI.INT) == 3
    assert copy == status
    status.source, status.tag, status.error = 11, 22, 33
    mem = status.tomemory()
    seq = list(mem)
    assert seq[:3] == [11, 22, 33]
    mem[seq.index(22)] = 222
    assert status.tag == 222
    back = pickle.loads(pickle.dumps(status))
    assert (back.source, back.tag, back.error) == (11, 222, 33)
    with pytest.raises(TypeError):
        MPI.Status(123)
    assert error_class(status.Get_count, MPI.DATATYPE_NULL) == \
        MPI.ERR_TYPE


@pytest.mark.mpi(sizes=SIZES)
def test_null_requests_give_empty_statuses(mpi_comm, MPI, error_class):
    status = MPI.Status()
    status.source, status.tag = 3, 4
    MPI.REQUEST_NULL.Wait(status)
    assert (status.source, status.tag) == (MPI.ANY_SOURCE, MPI.ANY_TAG)
    requests = [MPI.Request() for _ in range(3)]
    statuses = []
    MPI.Request.Waitall(requests, statuses)
    assert len(statuses) == 3
    assert MPI.Request.Waitsome(requests) is None
    assert MPI.Request.Testsome(requests, statuses) is None
    # MPI 4.1's Get_status_any/all/some: not in Open MPI 5.0.
    for name in ('Get_status_any', 'Get_status_all', 'get_status_some'):
        with pytest.raises(NotImplementedError):
            getattr(MPI.Request, name)(requests)
    assert error_class(MPI.REQUEST_NULL.Free) == MPI.ERR_REQUEST
    assert error_class(MPI.REQUEST_NULL.Cancel) == MPI.ERR_REQUEST


@pytest.mark.mpi(sizes=SIZES)
def test_proc_null_requests_are_active_until_waited(mpi_comm, MPI):
    request = mpi_comm.isend('x', MPI.PROC_NULL)
    assert request
    status = MPI.Status()
    request.Wait(status)
    assert not request and status.source == MPI.PROC_NULL
    assert request.test() == (True, None)       # stays complete


@pytest.mark.mpi(sizes=SIZES)
def test_request_handles(mpi_comm, MPI):
    preq = mpi_comm.Send_init(b'', MPI.PROC_NULL, 0)
    for dupe in (MPI.Prequest(preq), MPI.Prequest.fromhandle(preq.handle),
                 MPI.Prequest.f2py(preq.py2f())):
        assert type(dupe) is MPI.Prequest and dupe == preq
    dupe = MPI.Request(preq)
    assert type(dupe) is MPI.Request and dupe == preq
    with pytest.raises(TypeError):
        MPI.Grequest(preq)
    preq.Start()
    preq.Wait()
    preq.Free()
    rank = mpi_comm.Get_rank()
    recv = mpi_comm.irecv(source=rank, tag=9)
    other = MPI.Request(recv)
    mpi_comm.send({'a': 1}, rank, 9)
    assert other.wait() == {'a': 1}       # completes the same receive
    assert not other


@pytest.mark.mpi(sizes=SIZES)
def test_errhandlers(mpi_comm, MPI, error_class):
    assert not MPI.ERRHANDLER_NULL and MPI.ERRORS_RETURN
    assert mpi_comm.Get_errhandler() == MPI.ERRORS_RETURN
    comm = mpi_comm.Dup()
    try:
        seen = []
        handler = MPI.Comm.Create_errhandler(
            lambda c, code: seen.append((c == comm, code)))
        comm.Set_errhandler(handler)
        comm.Call_errhandler(MPI.ERR_OTHER)
        assert seen == [(True, MPI.ERR_OTHER)]
        got = comm.Get_errhandler()
        assert got == handler
        got.Free()
        assert got == MPI.ERRHANDLER_NULL
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        comm.Call_errhandler(MPI.ERR_OTHER)     # returns
        handler.Free()
        assert pickle.loads(pickle.dumps(MPI.ERRORS_RETURN)) is \
            MPI.ERRORS_RETURN
        assert error_class(comm.Set_errhandler,
                            MPI.ERRHANDLER_NULL) in (MPI.ERR_ARG,
                                                     MPI.ERR_ERRHANDLER)
    finally:
        comm.Free()
    assert error_class(MPI.COMM_NULL.Get_errhandler) in (
        MPI.ERR_COMM, MPI.ERR_ARG)


@pytest.mark.mpi(sizes=SIZES)
def test_attributes_copy_on_dup(mpi_comm, MPI, error_class):
    # Predefined attributes live on COMM_WORLD (and its duplicates: not
    # checked here, a Dup of COMM_WORLD needs every rank of the job).
    assert MPI.COMM_WORLD.Get_attr(MPI.TAG_UB) >= 32767
    assert MPI.COMM_WORLD.Get_attr(MPI.LASTUSEDCODE) >= MPI.ERR_LASTCODE
    split = mpi_comm.Split(0, 0)
    assert split.Get_attr(MPI.TAG_UB) is None
    split.Free()
    assert MPI.COMM_SELF.Get_attr(MPI.TAG_UB) is None
    copied = MPI.Comm.Create_keyval(copy_fn=True)
    dropped = MPI.Comm.Create_keyval()
    deleted = []
    called = MPI.Comm.Create_keyval(
        copy_fn=lambda c, k, v: v + 1,
        delete_fn=lambda c, k, v: deleted.append(v))
    comm = mpi_comm.Dup()
    try:
        value = [1]
        comm.Set_attr(copied, value)
        comm.Set_attr(dropped, 'x')
        comm.Set_attr(called, 10)
        dup = comm.Dup()
        assert dup.Get_attr(copied) is value
        assert dup.Get_attr(dropped) is None
        assert dup.Get_attr(called) == 11
        dup.Free()
        assert deleted == [11]
        comm.Delete_attr(called)
        assert deleted == [11, 10] and comm.Get_attr(called) is None
    finally:
        comm.Free()
    for keyval in (copied, dropped, called):
        assert MPI.Comm.Free_keyval(keyval) == MPI.KEYVAL_INVALID
    assert error_class(mpi_comm.Get_attr, MPI.KEYVAL_INVALID) in (
        MPI.ERR_KEYVAL, MPI.ERR_OTHER)


@pytest.mark.mpi(sizes=SIZES)
def test_info(mpi_comm, MPI, error_class):
    assert not MPI.INFO_NULL
    info = MPI.Info.Create()
    info.Set('key', 'value')
    assert info.Get('key') == 'value' and info.Get_nkeys() == 1
    assert info.Get_nthkey(0) == 'key' and dict(info.items()) == {
        'key': 'value'}
    assert error_class(info.Delete, 'other') == MPI.ERR_INFO_NOKEY
    assert error_class(info.Get_nthkey, 1) in (MPI.ERR_ARG,
                                                     MPI.ERR_INFO_KEY)
    dup = info.Dup()
    info.Free()
    assert not info and dup.Get('key') == 'value'
    dup.Free()
    assert error_class(MPI.INFO_NULL.Get, 'key') in (MPI.ERR_INFO,
                                                           MPI.ERR_ARG)


@pytest.mark.mpi(sizes=SIZES)
def test_error_classes_and_exceptions(mpi_comm, MPI, error_class):
    error = MPI.Exception(MPI.ERR_OTHER)
    assert isinstance(error, RuntimeError)
    assert error == MPI.ERR_OTHER and int(error) == MPI.ERR_OTHER
    assert repr(error) == 'MPI.Exception({})'.format(MPI.ERR_OTHER)
    assert str(error) == MPI.Get_error_string(MPI.ERR_OTHER)
    assert not MPI.Exception(MPI.SUCCESS)
    assert MPI.Get_error_string(MPI.ERR_KEYVAL) == \
        'MPI_ERR_KEYVAL: invalid key value'
    errclass = MPI.Add_error_class()
    code = MPI.Add_error_code(errclass)
    assert errclass > MPI.ERR_LASTCODE and code == errclass + 1
    assert MPI.Get_error_class(code) == errclass
    MPI.Add_error_string(code, 'mine')
    assert MPI.Get_error_string(code) == 'mine'
    assert MPI.COMM_WORLD.Get_attr(MPI.LASTUSEDCODE) == code
    assert error_class(MPI.Get_error_class, 100000) == MPI.ERR_ARG
    # a code of a predefined class; a negative code is ERR_UNKNOWN
    other = MPI.Add_error_code(MPI.ERR_OTHER)
    assert other > code and MPI.Get_error_class(other) == MPI.ERR_OTHER
    assert MPI.Exception(MPI.SUCCESS - 1) == MPI.ERR_UNKNOWN
    assert MPI.Exception(MPI.ERR_LASTCODE + 1) == MPI.ERR_LASTCODE + 1


@pytest.mark.mpi(sizes=SIZES)
def test_null_communicators(mpi_comm, MPI, error_class):
    assert MPI.COMM_NULL.Get_name() == 'MPI_COMM_NULL'
    assert MPI.Intercomm() == MPI.COMM_NULL
    assert isinstance(MPI.Comm.Get_parent(), MPI.Intercomm)
    with pytest.raises(TypeError):
        MPI.Comm((1, 2, 3))
    for method in ('Get_size', 'Is_inter', 'Get_group', 'Get_topology'):
        assert error_class(getattr(MPI.COMM_NULL, method)) == \
            MPI.ERR_COMM
    assert error_class(MPI.Comm.Compare, mpi_comm,
                        MPI.COMM_NULL) == MPI.ERR_COMM
    same = MPI.Comm.fromhandle(mpi_comm.handle)
    assert same == mpi_comm


@pytest.mark.mpi(sizes=SIZES)
def test_thread_main(mpi_comm, MPI):
    assert MPI.Query_thread() in (MPI.THREAD_SERIALIZED,
                                  MPI.THREAD_MULTIPLE)
    assert MPI.Is_thread_main() == (
        threading.current_thread().name == 'MainThread')
    seen = []
    thread = threading.Thread(target=lambda: seen.append(
        MPI.Is_thread_main()))
    thread.start()
    thread.join()
    assert seen == [False]
