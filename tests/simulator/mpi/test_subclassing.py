"""Subclasses of the handle types behave as mpi4py's: the handle is set
in ``__new__`` (a subclass's ``__new__`` may pass another object than
the one ``__init__`` gets), results of Dup/Clone keep the subclass, and
Wait/Test do not call a subclass's lowercase overrides. Both ways."""
import pickle

import numpy as np
import pytest

SIZES = (1, 2, 3)


@pytest.mark.mpi(sizes=SIZES)
def test_comm_subclass_new_decides_the_handle(mpi_comm, MPI):
    class MyComm(MPI.Intracomm):
        def __new__(cls, comm=None):
            if comm is not None and comm != MPI.COMM_NULL:
                comm = comm.Clone()         # its own communicator
            return super().__new__(cls, comm)

    mine = MyComm(mpi_comm)
    assert type(mine) is MyComm
    assert mine.Compare(mpi_comm) == MPI.CONGRUENT    # a clone, not it
    clone = mine.Clone()
    assert type(clone) is MyComm and clone.Compare(mine) == MPI.CONGRUENT
    assert clone.allreduce(mpi_comm.rank) == sum(range(mpi_comm.size))
    for comm in (clone, mine):
        comm.Free()
        assert comm == MPI.COMM_NULL
    assert type(MyComm()) is MyComm and not MyComm()


@pytest.mark.mpi(sizes=SIZES)
def test_request_subclass_overrides_are_not_called_by_wait(mpi_comm, MPI):
    class MyRequest(MPI.Request):
        def __new__(cls, request=None):
            return super().__new__(cls, request)

        def wait(self):
            return super(type(self), self).Wait()

        def test(self):
            return super(type(self), self).Test()

    peer = (mpi_comm.rank + 1) % mpi_comm.size
    data = np.zeros(3)
    recv = MyRequest(mpi_comm.Irecv(data, source=MPI.ANY_SOURCE, tag=5))
    send = MyRequest(mpi_comm.Isend(np.full(3, mpi_comm.rank * 1.0), peer,
                                    tag=5))
    assert send.wait() is True and recv.wait() is True
    assert data.tolist() == [(mpi_comm.rank - 1) % mpi_comm.size * 1.0] * 3
    assert not recv and not send
    null = MyRequest(mpi_comm.Isend(np.zeros(1), MPI.PROC_NULL))
    assert null.test() is True and not null
    null = MPI.Prequest(MPI.REQUEST_NULL)
    assert not null and type(null) is MPI.Prequest
    assert not MPI.Grequest(MPI.REQUEST_NULL)


@pytest.mark.mpi(sizes=SIZES)
def test_info_and_win_subclasses(mpi_comm, MPI):
    class MyInfo(MPI.Info):
        def __new__(cls, info=None):
            return MPI.Info.__new__(cls, info)

    info = MyInfo(MPI.Info.Create({'a': '1'}))
    assert type(info.Dup()) is MyInfo and info.Dup().items() == [('a', '1')]
    assert type(MyInfo.Create()) is MyInfo
    globals()['MyInfo'] = MyInfo        # picklable by name
    MyInfo.__qualname__ = 'MyInfo'
    try:
        back = pickle.loads(pickle.dumps(info))
    finally:
        del globals()['MyInfo']
    assert type(back) is MyInfo and back.items() == [('a', '1')]
    win = MPI.Win.Create(MPI.BOTTOM, comm=MPI.COMM_SELF)
    other = MPI.Win(win)            # a second handle to the same window
    assert other == win and other.Get_attr(MPI.WIN_SIZE) == 0
    other.Free()
    assert not other
