"""pytest plugin: a test suite written for ``mpiexec -n N`` on N simulated
ranks, in one process and unedited.

    python -m pytest -p simulator.tools.mpiexec_suite --sim-suite-np 2 DIR

Every collected test runs once per rank thread of a fresh simulated world,
as each process would run it under ``mpiexec``; a failure on any rank fails
the test, naming the rank, and a deadlock is reported instead of hanging.
What it arranges so that such a suite needs no change:

- ``mpi4py.MPI`` is ``simulator.mpi`` from the start of the session, so a
  module-level ``COMM_WORLD`` resolves to the calling rank's world;
- a test method gets one instance of its class per rank (a
  ``unittest.TestCase`` is built afresh and runs its own ``setUp``; a plain
  class's instance is copied after pytest's ``setup_method``), since tests
  store per-rank state on ``self``;
- every rank keeps its own process state (``sys.argv``, ``os.environ``,
  NumPy's and Python's global generators...: see
  :mod:`simulator.engine.process`), as separate processes do (tests seed
  NumPy and expect every rank to draw the same numbers).

``--sim-suite-nodes`` spreads the ranks over simulated hosts,
``--sim-suite-timeout`` bounds one test (seconds).
"""
import copy
import functools
import sys
import unittest

from simulator.tools import launch

__all__ = ['run_on_ranks']


def pytest_addoption(parser):
    group = parser.getgroup('simulator mpiexec suite')
    group.addoption('--sim-suite-np', type=int, default=None,
                    help='run every test on this many simulated ranks')
    group.addoption('--sim-suite-nodes', type=int, default=1,
                    help='simulated hosts the ranks are spread over')
    group.addoption('--sim-suite-timeout', type=float, default=300.0,
                    help='seconds one test may run (all ranks)')


_saved = {}


def pytest_configure(config):
    if config.getoption('sim_suite_np') is None:
        return
    _saved['modules'] = {name: sys.modules.get(name)
                         for name in ('mpi4py', 'mpi4py.MPI')}
    launch.install_mpi4py()


def pytest_unconfigure(config):
    for name, module in _saved.pop('modules', {}).items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def run_on_ranks(item, size, nodes=1, timeout=None):
    """Run the test ``item`` once per rank of a simulated world of
    ``size`` ranks; raises what the first failing rank raised."""
    testcase = getattr(item, '_testcase', None)
    if isinstance(testcase, unittest.TestCase):
        case_class, method = type(testcase), testcase._testMethodName

        def body(comm):
            # One instance per rank, like one per process; debug() runs
            # setUp/test/tearDown and lets the exception through.
            case_class(method).debug()
    elif getattr(item, 'instance', None) is not None:
        instance, name = item.instance, item.obj.__name__
        names = item._fixtureinfo.argnames

        def body(comm):
            # One instance per rank, like one per process: what one rank's
            # test stores on self must not be what another rank reads.
            method = getattr(copy.copy(instance), name)
            method(**{arg: item.funcargs[arg] for arg in names})
    else:
        original = item._sim_original_runtest

        def body(comm):
            original()
    launch.run(body, size, nodes=nodes, timeout=timeout)


def pytest_collection_modifyitems(config, items):
    size = config.getoption('sim_suite_np')
    if size is None:
        return
    nodes = config.getoption('sim_suite_nodes')
    timeout = config.getoption('sim_suite_timeout')
    for item in items:
        item._sim_original_runtest = item.runtest
        item.runtest = functools.partial(run_on_ranks, item, size, nodes,
                                         timeout)
