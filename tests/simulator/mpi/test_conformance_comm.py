"""Conformance: communicator management (Split, Split_type, Dup, Free,
COMM_SELF, COMM_NULL, names and clocks) as on real MPI (mpi4py)."""
import numpy as np
import pytest

SIZES = (1, 2, 3, 4, 8)


@pytest.mark.mpi(sizes=SIZES)
def test_rank_and_size_accessors(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    assert 0 <= rank < size
    assert (mpi_comm.rank, mpi_comm.size) == (rank, size)
    assert sorted(mpi_comm.allgather(rank)) == list(range(size))


@pytest.mark.mpi(sizes=SIZES)
def test_comm_world_contains_this_communicator(mpi_comm, MPI):
    world = MPI.COMM_WORLD
    assert world.Get_size() >= mpi_comm.Get_size()
    assert 0 <= world.Get_rank() < world.Get_size()
    # Every rank of mpi_comm is a distinct rank of the world.
    world_ranks = mpi_comm.allgather(world.Get_rank())
    assert len(set(world_ranks)) == mpi_comm.Get_size()


@pytest.mark.mpi(sizes=SIZES)
def test_split_orders_by_key_then_old_rank(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    color = rank % 2
    # Reverse order by key; ranks sharing a key keep their old order.
    key = -(rank // 2)
    sub = mpi_comm.Split(color, key)
    try:
        members = [r for r in range(size) if r % 2 == color]
        expected = sorted(members, key=lambda r: (-(r // 2), r))
        assert sub.Get_size() == len(members)
        assert sub.Get_rank() == expected.index(rank)
        assert sub.allgather(rank) == expected
    finally:
        sub.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_split_equal_keys_keep_parent_order(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    sub = mpi_comm.Split(0, 0)
    try:
        assert (sub.Get_rank(), sub.Get_size()) == (rank, size)
    finally:
        sub.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_split_undefined_gives_comm_null(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    color = MPI.UNDEFINED if rank % 3 == 1 else 7
    sub = mpi_comm.Split(color, rank)
    if color == MPI.UNDEFINED:
        assert sub == MPI.COMM_NULL
    else:
        try:
            assert sub != MPI.COMM_NULL
            expected = [r for r in range(size) if r % 3 != 1]
            assert sub.Get_size() == len(expected)
            assert sub.allgather(rank) == expected
        finally:
            sub.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_nested_split_communicators(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    halves = mpi_comm.Split(rank * 2 // size if size > 1 else 0, rank)
    quarters = halves.Split(halves.Get_rank() % 2, 0)
    try:
        total = quarters.allreduce(rank)
        members = quarters.allgather(rank)
        assert total == sum(members)
        assert rank in members
        # Both levels still carry independent messages.
        got = halves.allreduce(1)
        assert got == halves.Get_size()
    finally:
        quarters.Free()
        halves.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_split_type_shared_groups_same_processor_name(mpi_comm, MPI):
    name = MPI.Get_processor_name()
    assert isinstance(name, str) and name
    shared = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=0)
    try:
        names_in_node = shared.allgather(name)
        names_everywhere = mpi_comm.allgather(name)
        assert set(names_in_node) == {name}
        assert shared.Get_size() == names_everywhere.count(name)
        # Ranks on the node keep their parent order.
        parent_ranks = shared.allgather(mpi_comm.Get_rank())
        assert parent_ranks == sorted(parent_ranks)
    finally:
        shared.Free()


@pytest.mark.mpi(sizes=(2, 4, 8), nodes=2)
def test_split_type_shared_on_simulated_nodes(mpi_comm, MPI, simulated):
    shared = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        names = mpi_comm.allgather(MPI.Get_processor_name())
        assert shared.Get_size() == names.count(MPI.Get_processor_name())
        if simulated:
            # The simulated topology spreads ranks over two hosts.
            assert len(set(names)) == 2
            assert shared.Get_size() == mpi_comm.Get_size() // 2
    finally:
        shared.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_split_type_undefined_gives_comm_null(mpi_comm, MPI):
    sub = mpi_comm.Split_type(MPI.UNDEFINED)
    assert sub == MPI.COMM_NULL


@pytest.mark.mpi(sizes=SIZES)
def test_dup_is_independent_and_free_nulls_it(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    dup = mpi_comm.Dup()
    assert dup != MPI.COMM_NULL
    assert (dup.Get_rank(), dup.Get_size()) == (rank, size)
    assert dup.allgather(rank) == list(range(size))
    dup.Free()
    assert dup == MPI.COMM_NULL
    # The parent is unaffected by freeing its duplicate.
    assert mpi_comm.allreduce(1) == size



@pytest.mark.mpi(sizes=SIZES)
def test_compare_ident_congruent_similar_unequal(mpi_comm, MPI):
    # Found by simulator.fuzz: same members in another order is SIMILAR.
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    assert mpi_comm.Compare(mpi_comm) == MPI.IDENT
    dup = mpi_comm.Dup()
    reversed_ = mpi_comm.Split(0, size - rank)
    half = mpi_comm.Split(rank % 2, rank)
    try:
        assert mpi_comm.Compare(dup) == MPI.CONGRUENT
        assert reversed_.Compare(mpi_comm) == (
            MPI.SIMILAR if size > 1 else MPI.CONGRUENT)
        assert half.Compare(mpi_comm) == (
            MPI.UNEQUAL if size > 1 else MPI.CONGRUENT)
    finally:
        for comm in (dup, reversed_, half):
            comm.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_free_of_split_communicator(mpi_comm, MPI):
    sub = mpi_comm.Split(0, 0)
    sub.Free()
    assert sub == MPI.COMM_NULL


@pytest.mark.mpi(sizes=SIZES)
def test_comm_self(mpi_comm, MPI):
    me = MPI.COMM_SELF
    assert (me.Get_rank(), me.Get_size()) == (0, 1)
    assert me.allreduce(mpi_comm.Get_rank() + 5) == mpi_comm.Get_rank() + 5
    buf = np.array([3.0, 4.0])
    result = np.zeros(2)
    me.Allreduce(buf, result, op=MPI.SUM)
    np.testing.assert_array_equal(result, buf)
    request = me.isend('to myself', 0, tag=1)
    assert me.recv(source=0, tag=1) == 'to myself'
    request.wait()


@pytest.mark.mpi(sizes=SIZES)
def test_comm_null_calls_raise_mpi_exception(mpi_comm, MPI):
    assert MPI.COMM_NULL != mpi_comm
    with pytest.raises(MPI.Exception) as info:
        MPI.COMM_NULL.Get_size()
    assert info.value.Get_error_class() == MPI.ERR_COMM


@pytest.mark.mpi(sizes=SIZES)
def test_names_of_world_and_self(mpi_comm, MPI):
    assert MPI.COMM_WORLD.Get_name() == 'MPI_COMM_WORLD'
    assert MPI.COMM_SELF.Get_name() == 'MPI_COMM_SELF'
    assert isinstance(mpi_comm.Get_name(), str)


@pytest.mark.mpi(sizes=SIZES)
def test_split_and_dup_are_unnamed_until_set_name(mpi_comm, MPI):
    # Found by simulator.fuzz: Open MPI names them '', the simulator
    # returned its own labels ('MPI_COMM_WORLD.Dup#3').
    dup = mpi_comm.Dup()
    sub = mpi_comm.Split(0, 0)
    clone = MPI.COMM_SELF.Clone()
    try:
        assert (dup.Get_name(), sub.Get_name(), clone.Get_name()) == \
            ('', '', '')
        assert dup.Dup().Get_name() == ''
        sub.Set_name('mine')
        assert sub.Get_name() == sub.name == 'mine'
        assert sub.Dup().Get_name() == ''
    finally:
        for comm in (dup, sub, clone):
            comm.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_wtime_is_monotonic_seconds(mpi_comm, MPI):
    first = MPI.Wtime()
    mpi_comm.Barrier()
    second = MPI.Wtime()
    assert isinstance(first, float)
    assert second >= first


@pytest.mark.mpi(sizes=SIZES)
def test_constants_have_mpi4py_values(mpi_comm, MPI):
    # Programs compare against these numbers directly (e.g. status.source).
    assert MPI.ANY_SOURCE == -1
    assert MPI.ANY_TAG == -1
    assert MPI.PROC_NULL == -2
    assert MPI.UNDEFINED == -32766
    assert isinstance(MPI.Exception, type)
    assert issubclass(MPI.Exception, RuntimeError)


@pytest.mark.mpi(sizes=(1, 2))
def test_info_hints_are_the_ones_open_mpi_reports(mpi_comm, MPI):
    # Open MPI 5.0 answers Get_info with the MPI 4 assertions it knows,
    # its own two first on a Dup, Dup_with_info or Split_type; it drops
    # other hints and reads the values as booleans.
    base = [('mpi_assert_no_any_source', 'false'),
            ('mpi_assert_allow_overtaking', 'false')]
    dup = [('ompi_assert_lazy_barrier', 'false'),
           ('ompi_assert_active_poll', 'true')]
    hints = MPI.Info.Create()
    hints.Set('mpi_assert_no_any_source', 'Yes')
    hints.Set('mpi_assert_allow_overtaking', 'on')
    hints.Set('simulator_test_unknown', 'kept?')
    idup, request = mpi_comm.Idup()
    request.Wait()
    made = [mpi_comm.Dup(), mpi_comm.Split(0, 0),
            mpi_comm.Split_type(MPI.COMM_TYPE_SHARED), idup,
            mpi_comm.Dup_with_info(hints)]
    try:
        got = [list(c.Get_info().items()) for c in made]
    finally:
        hints.Free()
        for comm in made:
            comm.Free()
    assert got == [dup + base, base, dup + base, base,
                   dup + [('mpi_assert_no_any_source', 'true'),
                          ('mpi_assert_allow_overtaking', 'false')]]
    assert list(MPI.COMM_SELF.Get_info().items()) == base


@pytest.mark.mpi(sizes=(1, 2))
def test_info_env_describes_the_process_launch(mpi_comm, MPI):
    import os
    import platform
    env, world = MPI.INFO_ENV, MPI.COMM_WORLD
    size = str(world.Get_size())
    assert list(env.keys()) == [
        'command', 'argv', 'maxprocs', 'soft', 'host', 'arch', 'wdir',
        'thread_level', 'ompi_num_apps', 'ompi_first_rank', 'ompi_np',
        'ompi_positioned_file_dir']
    assert (env.Get('command'), env.Get('argv'), env.Get('wdir')) == (
        os.environ['OMPI_COMMAND'], os.environ['OMPI_ARGV'],
        os.environ['OMPI_MCA_initial_wdir'])
    assert env.Get('maxprocs') == env.Get('soft') == env.Get('ompi_np') == \
        size
    assert env.Get('host') == MPI.Get_processor_name()
    assert env.Get('arch') == platform.machine()
    assert env.Get('thread_level') == 'MPI_THREAD_MULTIPLE'
    assert env.Get('ompi_positioned_file_dir').endswith(
        '/{}'.format(world.Get_rank()))
