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
