"""The pytest plugin: how one multi-rank test body is run in either world.

These tests drive pytest itself (pytester), so they run in-process only:
what they check is how the plugin expands and reports tests, which needs
no second MPI process. The ``--mpi`` case starts a one-process Open MPI
singleton to see how sizes larger than the world are reported.
"""
import pytest

pytest_plugins = ['pytester']

_MULTI_RANK_TESTS = """
import pytest

@pytest.mark.mpi(sizes=(1, 2, 3))
def test_sum(mpi_comm):
    assert mpi_comm.allreduce(1) == mpi_comm.Get_size()

@pytest.mark.mpi(sizes=(2,), nodes=2)
def test_two_nodes(mpi_comm, MPI):
    names = mpi_comm.allgather(MPI.Get_processor_name())
    assert len(set(names)) == 2

@pytest.mark.mpi(sizes=(2,))
@pytest.mark.simulator_only(reason='deliberate deadlock')
def test_simulated_only(mpi_comm):
    pass

def test_plain():
    pass
"""


def test_in_process_one_item_per_size(pytester):
    pytester.makepyfile(_MULTI_RANK_TESTS)
    result = pytester.runpytest('-p', 'no:xdist', '-v')
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines([
        '*test_sum?np1? PASSED*', '*test_sum?np2? PASSED*',
        '*test_sum?np3? PASSED*', '*test_two_nodes?np2x2nodes? PASSED*'])


def test_in_process_failure_names_the_rank(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.mpi(sizes=(3,))
        def test_rank_two_fails(mpi_comm):
            if mpi_comm.Get_rank() == 2:
                raise ValueError('bad value on this rank')
            mpi_comm.Barrier()
    """)
    result = pytester.runpytest('-p', 'no:xdist')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*bad value on this rank*'])
    result.stdout.re_match_lines([r'.*rank 2.*'])


def test_unknown_marker_argument_is_refused(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.mpi(size=2)
        def test_typo(mpi_comm):
            pass
    """)
    result = pytester.runpytest('-p', 'no:xdist')
    result.stdout.re_match_lines(
        [r".*unknown mpi marker arguments: \['size'\]"])
    assert result.ret != 0


def test_real_mode_skips_sizes_beyond_the_world(pytester):
    pytest.importorskip('mpi4py')
    pytester.makepyfile(_MULTI_RANK_TESTS)
    # A subprocess: MPI may be initialised only once per process.
    result = pytester.runpytest_subprocess('-p', 'no:xdist', '--mpi', '-rs')
    # Under one real process the size-1 case runs; larger sizes are
    # reported as skips, the simulator-only test is deselected, and the
    # unmarked test runs as it would without the plugin.
    result.assert_outcomes(passed=2, skipped=3, deselected=1)
    result.stdout.fnmatch_lines(['*needs 2 ranks; mpiexec started 1*',
                                 '*needs 3 ranks; mpiexec started 1*'])


def test_real_mode_with_marker_selection_runs_only_multi_rank_tests(
        pytester):
    pytest.importorskip('mpi4py')
    pytester.makepyfile(_MULTI_RANK_TESTS)
    result = pytester.runpytest_subprocess('-p', 'no:xdist', '--mpi',
                                           '-m', 'mpi')
    result.assert_outcomes(passed=1, skipped=3, deselected=2)


def test_user_fixtures_are_built_once_per_rank(pytester):
    pytester.makeconftest("""
        import pytest

        TORN_DOWN = []

        @pytest.fixture
        def box():
            return []

        @pytest.fixture
        def labelled(box, tmp_path):
            box.append('made')
            yield box
            TORN_DOWN.append(len(box))
        """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.mpi(sizes=(3,))
        def test_own_box(mpi_comm, labelled, box, tmp_path):
            assert labelled is box and box == ['made']
            box.append(mpi_comm.Get_rank())
            mpi_comm.Barrier()          # every rank has appended to its box
            assert box == ['made', mpi_comm.Get_rank()]
            # pytest's own fixtures stay one object, as a shared folder
            paths = mpi_comm.allgather(str(tmp_path))
            assert len(set(paths)) == 1

        def test_teardown_ran_per_rank():
            import conftest
            assert sorted(conftest.TORN_DOWN) == [1, 2, 2, 2]
        """)
    result = pytester.runpytest('-p', 'no:xdist', '-p', 'no:randomly')
    result.assert_outcomes(passed=2)
