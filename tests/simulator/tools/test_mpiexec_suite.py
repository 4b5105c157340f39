"""simulator.tools.mpiexec_suite: a suite written for mpiexec, run on simulated
ranks. pytester runs pytest in a subprocess here, because the plugin
replaces mpi4py and NumPy's global RNG functions for its session."""
pytest_plugins = ['pytester']

_SUITE = """
import unittest

import numpy
import pytest
from mpi4py import MPI

world = MPI.COMM_WORLD          # resolved per rank when used


def test_module_level_world():
    assert world.allreduce(1) == 3
    assert world.Get_rank() in (0, 1, 2)


def test_seeded_global_rng_draws_alike_on_every_rank():
    numpy.random.seed(42)
    draws = world.allgather(numpy.random.normal(size=4))
    assert all((d == draws[0]).all() for d in draws)


class TestPerRankInstance(unittest.TestCase):

    def setUp(self):
        self.rank = world.Get_rank()

    def test_own_rank(self):
        assert world.allgather(self.rank) == [0, 1, 2]


class TestPlainClassInstancePerRank:

    def setup_method(self):
        self.started = True

    def test_state_on_self_is_the_ranks_own(self):
        assert self.started
        self.rank = world.Get_rank()
        world.Barrier()         # every rank has written self.rank
        assert world.allgather(self.rank) == [0, 1, 2]


def test_chainer_shuffle_takes_the_rank_random_state():
    numpy.random.seed(7)
    state = numpy.random.random.__self__
    assert isinstance(state, numpy.random.RandomState)
    assert state is not numpy.random.mtrand._rand
    order = state.permutation(10)
    orders = world.allgather(order)
    assert all((o == orders[0]).all() for o in orders)


def test_fails_on_rank_1():
    assert world.Get_rank() != 1


def test_skips_everywhere():
    if world.Get_size() > 1:
        pytest.skip('for one rank')
"""


def test_suite_runs_on_every_rank(pytester):
    pytester.makepyfile(_SUITE)
    result = pytester.runpytest_subprocess(
        '-p', 'no:xdist', '-p', 'simulator.tools.mpiexec_suite',
        '--sim-suite-np', '3', '-v')
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    result.stdout.fnmatch_lines(['*raised in rank 1 of 3*'])


def test_without_the_option_nothing_changes(pytester):
    pytester.makepyfile("""
        import sys
        import numpy

        def test_untouched():
            assert 'simulator' not in getattr(
                sys.modules.get('mpi4py.MPI'), '__name__', '')
            assert numpy.random.seed.__module__ == 'numpy.random.mtrand'
        """)
    result = pytester.runpytest_subprocess(
        '-p', 'no:xdist', '-p', 'simulator.tools.mpiexec_suite')
    result.assert_outcomes(passed=1)
