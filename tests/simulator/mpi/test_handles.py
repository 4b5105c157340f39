"""simulator.mpi.handles: every handle kind round-trips through its int
(``handle``/``toint``/``py2f`` and back), and a Status through its
Fortran form, as in mpi4py over Open MPI. Both ways."""
import weakref

import pytest

SIZES = (1, 2, 3)


def _round_trips(obj):
    cls = type(obj)
    for to, back in (('handle', 'fromhandle'), ('toint', 'fromint'),
                     ('py2f', 'f2py')):
        value = getattr(obj, to)
        value = value() if callable(value) else value
        assert isinstance(value, int) and value >= 0, (obj, to, value)
        again = getattr(cls, back)(value)
        assert again == obj, (obj, to)
        assert bool(again) == bool(obj)


@pytest.mark.mpi(sizes=SIZES)
def test_every_kind_round_trips_through_its_int(mpi_comm, MPI):
    dup = mpi_comm.Dup()
    session = MPI.Session.Init()
    win = MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_SELF)
    dtype = MPI.DOUBLE.Create_contiguous(3).Commit()
    objects = [MPI.COMM_NULL, MPI.COMM_WORLD, MPI.COMM_SELF, dup,
               MPI.DATATYPE_NULL, MPI.INT, dtype, MPI.GROUP_NULL,
               MPI.GROUP_EMPTY, mpi_comm.Get_group(), MPI.MESSAGE_NULL,
               MPI.MESSAGE_NO_PROC, MPI.SESSION_NULL, session, MPI.WIN_NULL,
               win, MPI.INFO_NULL, MPI.ERRORS_RETURN, MPI.SUM,
               MPI.REQUEST_NULL]
    for obj in objects:
        _round_trips(obj)
    # the int names the same object: a datatype made from it works
    again = MPI.Datatype.fromhandle(dtype.handle)
    assert again.Get_size() == 24
    world = MPI.Comm.fromhandle(MPI.COMM_WORLD.handle)
    assert world.Compare(MPI.COMM_WORLD) == MPI.IDENT
    again = MPI.Comm.fromhandle(dup.handle)     # communicates as dup
    assert again.Compare(dup) == MPI.IDENT
    assert again.allreduce(mpi_comm.rank) == sum(range(mpi_comm.size))
    assert MPI.File.fromhandle(MPI.FILE_NULL.handle) == MPI.FILE_NULL
    for obj in (dtype, win, dup):
        obj.Free()
    session.Finalize()


@pytest.mark.mpi(sizes=SIZES)
def test_status_fortran_form_and_weak_references(mpi_comm, MPI):
    status = MPI.Status()
    status.source, status.tag, status.error = 3, 7, MPI.ERR_OTHER
    status.Set_elements(MPI.BYTE, 5)
    fint = status.py2f()
    assert len(fint) == MPI.F_STATUS_SIZE
    assert (fint[MPI.F_SOURCE], fint[MPI.F_TAG], fint[MPI.F_ERROR]) == (
        3, 7, MPI.ERR_OTHER)
    back = MPI.Status.f2py(fint)
    assert back == status and back.Get_count(MPI.BYTE) == 5
    ref = weakref.ref(status)
    assert ref() is status


@pytest.mark.mpi(sizes=SIZES)
def test_free_clears_handles_but_keeps_constants(mpi_comm, MPI):
    constants = [MPI.INT, MPI.SUM, MPI.GROUP_EMPTY, MPI.INFO_ENV,
                 MPI.MESSAGE_NO_PROC, MPI.COMM_SELF, MPI.COMM_WORLD]
    for obj in constants:
        obj.free()
        assert obj
        clone = type(obj)(obj)
        assert clone == obj
        clone.free()
        assert not clone and obj
    dup = mpi_comm.Dup()
    dup.free()
    assert not dup
    request = MPI.COMM_SELF.Isend((None, 0, MPI.BYTE), MPI.PROC_NULL)
    request.free()
    assert not request
    session = MPI.Session.Init()
    session.free()
    assert not session
    for null in (MPI.COMM_NULL, MPI.DATATYPE_NULL, MPI.GROUP_NULL,
                 MPI.SESSION_NULL, MPI.FILE_NULL, MPI.MESSAGE_NULL):
        null.free()
        assert not null
    with pytest.raises(TypeError):
        MPI.Group(MPI.Status())
    with pytest.raises(TypeError):
        MPI.File(MPI.COMM_NULL)


@pytest.mark.mpi(sizes=SIZES)
def test_private_size_address_and_handle_of(mpi_comm, MPI):
    status = MPI.Status()
    assert MPI._sizeof(status) == MPI._sizeof(MPI.Status) == 24
    assert MPI._sizeof(MPI.COMM_NULL) == MPI._sizeof(MPI.Comm) == 8
    assert MPI._addressof(status) == MPI._handleof(status) != 0
    assert MPI._handleof(MPI.INT) == MPI.INT.handle
    for fn in (MPI._sizeof, MPI._addressof, MPI._handleof):
        with pytest.raises(TypeError):
            fn(None)


def _null_handles(MPI):
    return [MPI.Status(), MPI.DATATYPE_NULL, MPI.REQUEST_NULL, MPI.INFO_NULL,
            MPI.ERRHANDLER_NULL, MPI.SESSION_NULL, MPI.GROUP_NULL,
            MPI.WIN_NULL, MPI.OP_NULL, MPI.FILE_NULL, MPI.MESSAGE_NULL,
            MPI.COMM_NULL]


@pytest.mark.mpi(sizes=SIZES)
def test_handles_are_unhashable(mpi_comm, MPI):
    # mpi4py's handles compare by value and have no hash: code that keys
    # a dict by a communicator fails on the cluster, so it fails here
    for obj in _null_handles(MPI) + [MPI.INT, MPI.SUM, MPI.COMM_WORLD,
                                     mpi_comm, MPI.GROUP_EMPTY,
                                     MPI.INFO_ENV, MPI.ERRORS_RETURN,
                                     MPI.MESSAGE_NO_PROC]:
        with pytest.raises(TypeError):
            hash(obj)


@pytest.mark.mpi(sizes=SIZES)
def test_comm_world_is_an_intracomm_and_fromhandle_keeps_it(mpi_comm, MPI):
    for comm in (MPI.COMM_WORLD, MPI.COMM_SELF):
        assert type(comm) is MPI.Intracomm
        again = type(comm).fromhandle(comm.handle)
        assert type(again) is MPI.Intracomm and again == comm
    # (COMM_WORLD's Dup is collective over ranks this test may not have)
    dup = MPI.COMM_SELF.Dup()
    assert type(dup) is MPI.Intracomm
    dup.Free()
    assert MPI.COMM_WORLD.Get_size() >= mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_pickled_copies_keep_a_subclass(mpi_comm, MPI):
    import copy
    import pickle
    import sys
    main = sys.modules['__main__']
    objects = _null_handles(MPI) + [MPI.INT, MPI.SUM, MPI.GROUP_EMPTY,
                                    MPI.ERRORS_RETURN, MPI.MESSAGE_NO_PROC,
                                    MPI.COMM_WORLD]
    for obj in objects:
        # a uniquely named subclass per rank: ranks share __main__ here
        cls = type('My{}{}'.format(type(obj).__name__, mpi_comm.rank),
                   (type(obj),), {'__module__': main.__name__})
        setattr(main, cls.__name__, cls)
        try:
            for copier in (copy.copy, copy.deepcopy,
                           lambda o: pickle.loads(pickle.dumps(o))):
                dup = copier(cls(obj))
                assert type(dup) is cls and dup == obj, (obj, copier)
        finally:
            delattr(main, cls.__name__)
