"""Conformance: what mpi4py's pure-Python ``mpi4py.util`` needs of the MPI
module behaves as in mpi4py (handle subclasses, communicator contexts).

Each test runs in-process on the simulator and under ``mpiexec`` on Open
MPI with the same assertions. ``mpi4py.util`` itself runs in scripts under
``python -m simulator`` (tests/simulator/tools/test_launcher_scripts.py),
where ``import mpi4py`` gives the stand-in package.
"""
import pytest

SIZES = (1, 2, 3)


@pytest.mark.mpi(sizes=SIZES)
def test_new_communicators_keep_the_handle_type(mpi_comm, MPI):
    class Mine(MPI.Intracomm):
        pass

    mine = Mine(mpi_comm)
    assert mine == mpi_comm and type(mine) is Mine
    dup = mine.Dup()
    split = mine.Split(0, 0)
    try:
        # mpi4py: Dup makes a handle of the same type, Split an Intracomm.
        assert type(dup) is Mine and type(split) is MPI.Intracomm
        assert dup.Get_size() == split.Get_size() == mpi_comm.Get_size()
    finally:
        dup.Free()
        split.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_commctx_gives_one_duplicate_and_fresh_tags(mpi_comm, MPI):
    first, tag1 = MPI._commctx_intra(mpi_comm)
    second, tag2 = MPI._commctx_intra(mpi_comm)
    assert first == second and first != mpi_comm
    assert tag2 == tag1 + 1
    assert MPI.Comm.Compare(first, mpi_comm) == MPI.CONGRUENT
    with MPI._comm_lock(mpi_comm, 'key'):
        assert MPI._comm_lock(mpi_comm, 'key') is \
            MPI._comm_lock(mpi_comm, 'key')
