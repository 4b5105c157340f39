"""simulator.mpi.attributes: keyvals and attributes of communicators,
datatypes and windows, with their copy and delete callbacks, as Open MPI
5.0 and mpi4py 4 give them. Both ways."""
import contextlib
import io

import pytest

SIZES = (1, 2, 3)


def _objects(MPI, comm):
    """(class, object) of each kind that carries attributes."""
    return [(MPI.Comm, comm.Dup()), (MPI.Datatype, MPI.INT.Dup()),
            (MPI.Win, MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_SELF))]


@pytest.mark.mpi(sizes=SIZES)
def test_callbacks_copy_and_delete_values(mpi_comm, MPI):
    for cls, obj in _objects(MPI, mpi_comm):
        log = []

        def copy_fn(o, k, v, log=log):
            log.append(('copy', k, v))
            return v * 10

        def delete_fn(o, k, v, log=log):
            log.append(('delete', k, v))
        key = cls.Create_keyval(copy_fn, delete_fn)
        assert key != MPI.KEYVAL_INVALID
        assert obj.Get_attr(key) is None
        obj.Set_attr(key, 1)
        obj.Set_attr(key, 2)            # replaces: deletes 1
        assert obj.Get_attr(key) == 2
        assert log == [('delete', key, 1)]
        if hasattr(obj, 'Dup'):
            dup = obj.Dup()
            assert dup.Get_attr(key) == 20
            dup.Free()                  # deletes the copy
            assert log[1:] == [('copy', key, 2), ('delete', key, 20)]
            del log[1:]
        obj.Free()                      # deletes the value it holds
        assert log[1:] == [('delete', key, 2)]
        assert cls.Free_keyval(key) == MPI.KEYVAL_INVALID


@pytest.mark.mpi(sizes=SIZES)
def test_copy_flags_and_not_implemented(mpi_comm, MPI):
    for cls, obj in _objects(MPI, mpi_comm)[:2]:
        value = [1, 2]
        keys = [cls.Create_keyval(True), cls.Create_keyval(False),
                cls.Create_keyval(lambda o, k, v: NotImplemented)]
        for key in keys:
            obj.Set_attr(key, value)
        dup = obj.Dup()
        assert dup.Get_attr(keys[0]) is value
        assert dup.Get_attr(keys[1]) is None
        assert dup.Get_attr(keys[2]) is None
        for o in (dup, obj):
            o.Free()
        for key in keys:
            cls.Free_keyval(key)


@pytest.mark.mpi(sizes=SIZES)
def test_callback_errors_are_err_other(mpi_comm, MPI, error_class):
    def fail(o, k, v):
        raise ValueError('from the callback of rank {}'.format(
            mpi_comm.rank))
    # Each rank reads its own stderr, as mpi4py's tests do: the callbacks'
    # tracebacks are printed to the rank's sys.stderr.
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        for cls, obj in _objects(MPI, mpi_comm):
            key = cls.Create_keyval(None, fail)
            obj.Set_attr(key, 'v')
            assert error_class(obj.Delete_attr, key) == MPI.ERR_OTHER
            cls.Free_keyval(key)
            obj.Free()
        dtype = MPI.INT.Dup()
        key = MPI.Datatype.Create_keyval(fail)
        dtype.Set_attr(key, 'v')
        assert error_class(dtype.Dup) == MPI.ERR_OTHER
        dtype.Delete_attr(key)
        MPI.Datatype.Free_keyval(key)
        dtype.Free()
    printed = [line for line in err.getvalue().splitlines()
               if line.startswith('ValueError')]
    assert printed == ['ValueError: from the callback of rank {}'.format(
        mpi_comm.rank)] * 4


@pytest.mark.mpi(sizes=SIZES)
def test_keyvals_are_checked(mpi_comm, MPI, error_class):
    # Open MPI reports a bad key as ERR_OTHER (not ERR_KEYVAL); keys of
    # all kinds are numbered in one sequence
    comm = mpi_comm.Dup()
    key = MPI.Comm.Create_keyval()
    assert MPI.Datatype.Create_keyval() == key + 1
    MPI.Comm.Free_keyval(key)
    assert error_class(comm.Set_attr, key, 1) == MPI.ERR_OTHER
    assert error_class(comm.Get_attr, key) == MPI.ERR_OTHER
    assert error_class(MPI.Comm.Free_keyval, key) == MPI.ERR_OTHER
    assert error_class(comm.Set_attr, key + 1, 1) == MPI.ERR_OTHER
    assert comm.Get_attr(key + 1) is None       # another kind's key
    MPI.Datatype.Free_keyval(key + 1)
    key = MPI.Comm.Create_keyval()
    assert error_class(comm.Delete_attr, key) == MPI.ERR_OTHER
    with pytest.raises(TypeError):
        comm.Get_attr('key')
    MPI.Comm.Free_keyval(key)
    comm.Free()
