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


@pytest.mark.mpi(sizes=SIZES)
def test_session_psets_groups_and_create_from_group(mpi_comm, MPI):
    if mpi_comm.Get_size() != MPI.COMM_WORLD.Get_size():
        pytest.skip('process sets describe the whole world')
    session = MPI.Session.Init()
    try:
        names = [session.Get_nth_pset(i)
                 for i in range(session.Get_num_psets())]
        assert names[:2] == ['mpi://WORLD', 'mpi://SELF']
        info = session.Get_pset_info('mpi://WORLD')
        assert info.Get('mpi_size') == str(mpi_comm.Get_size())
        for bad in (lambda: session.Get_nth_pset(-1),
                    lambda: session.Get_pset_info('@nope'),
                    lambda: session.Create_group('@nope')):
            with pytest.raises(MPI.Exception) as err:
                bad()
            assert err.value.Get_error_class() == MPI.ERR_ARG
        group = session.Create_group('mpi://WORLD')
        comm = MPI.Intracomm.Create_from_group(group, 'test.session')
        try:
            # (Open MPI refuses to Compare it with a world-model one.)
            assert comm.Get_size() == mpi_comm.Get_size()
            assert comm.Get_rank() == MPI.COMM_WORLD.Get_rank()
            assert comm.allreduce(1) == mpi_comm.Get_size()
        finally:
            comm.Free()
            group.Free()
        self_group = MPI.Group.Create_from_session_pset(session,
                                                        'mpi://SELF')
        assert self_group.Get_size() == 1
        self_group.Free()
        # Session(s) is another handle to s; MPI 4.1's session buffers
        # are not in Open MPI 5.0
        other = MPI.Session(session)
        assert other == session and other != MPI.SESSION_NULL
        with pytest.raises(NotImplementedError):
            session.Attach_buffer(bytearray(64))
    finally:
        session.Finalize()
    assert not session and session == MPI.SESSION_NULL and other != session
    assert session == MPI.SESSION_NULL
    with pytest.raises(MPI.Exception) as err:
        MPI.SESSION_NULL.Get_num_psets()
    assert err.value.Get_error_class() == MPI.ERR_SESSION


@pytest.mark.mpi(sizes=SIZES)
def test_abi_queries_answer_from_the_datatypes(mpi_comm, MPI):
    # Open MPI 5.0 has no standard ABI; the Info objects list type sizes
    assert MPI.Get_abi_version() == (-1, -1)
    info = MPI.Get_abi_info()
    assert [info.Get('mpi_{}_size'.format(name)) for name in
            ('aint', 'count', 'offset')] == ['8', '8', '8']
    info.Free()
    fortran = MPI.Get_abi_fortran_info()
    assert fortran.Get('mpi_integer_size') == str(MPI.INTEGER.Get_size())
    assert fortran.Get('mpi_integer8_supported') == 'true'
    assert fortran.Get('mpi_integer16_supported') == 'false'
    assert fortran.Get('mpi_complex32_supported') == 'false'
    fortran.Free()
