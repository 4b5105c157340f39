"""pytest plugin: one multi-rank test body, two worlds.

A test that takes the ``mpi_comm`` fixture and carries the ``mpi`` marker::

    @pytest.mark.mpi(sizes=(1, 2, 3, 4, 8), nodes=1, send_mode='openmpi',
                     explore=None)
    def test_ring(mpi_comm):
        ...

runs

- in-process (plain ``pytest``): once per size, every rank a simulator thread,
  ``mpi_comm`` being that rank's ``simulator.mpi`` communicator;
- under ``mpiexec -n N python -m pytest -m mpi``: once per size <= N, on a
  communicator split from ``MPI.COMM_WORLD`` holding ranks ``0..size-1`` (the
  other ranks skip). Every rank runs the same tests in the same order.
  Tests without the marker run once per process as they would without this
  plugin; ``-m mpi`` leaves them out.

In-process, the user's function-scoped fixtures that the test takes (those
of its module and conftest files, not pytest's own) are built again on each
rank thread, as each process builds its own under mpiexec: a ``model``
fixture gives every rank its own model.

``nodes`` and ``send_mode`` only shape the simulated world; under mpiexec the
real topology and Open MPI's own protocol apply. ``explore=K`` (or
``'all'``) runs the simulated test under K schedules (see
:mod:`simulator.tools.explore`) and fails with the one that replays it
(``--sim-schedule SEED`` runs every simulated test under that one).
Tests that cannot run under real MPI (a deliberate deadlock, say) use
``@pytest.mark.simulator_only(why)`` and are deselected there.

Under mpiexec a failing rank must not leave its peers blocked: after each
test every rank meets the others in a non-blocking barrier; a rank that
failed waits for it at most ``--mpi-grace`` seconds and then aborts the job
(after printing its traceback), and ``--mpi-timeout`` bounds every test.
"""
import contextlib
import faulthandler
import importlib
import inspect
import os
import sys
import time
import traceback

import pytest

__all__ = ['WorldSpec', 'under_mpiexec']

DEFAULT_SIZES = (1, 2, 3, 4, 8)

_MPI_ENV_VARS = ('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_RANK',
                 'MPI_LOCALNRANKS')


def under_mpiexec():
    """True when this process was started by mpiexec (any common launcher)."""
    return any(v in os.environ for v in _MPI_ENV_VARS)


class WorldSpec:
    """The simulated world a test asks for (size, nodes, send mode)."""

    def __init__(self, size, nodes=1, send_mode='openmpi', explore=None):
        self.size = size
        self.nodes = nodes
        self.send_mode = send_mode
        self.explore = explore

    def __repr__(self):
        return 'WorldSpec(size={}, nodes={}, send_mode={!r})'.format(
            self.size, self.nodes, self.send_mode)


def pytest_addoption(parser):
    group = parser.getgroup('simulator')
    group.addoption('--mpi', action='store_true', default=None,
                    help='run the mpi-marked tests on real MPI (implied '
                         'when started by mpiexec)')
    group.addoption('--mpi-timeout', type=float, default=300.0,
                    help='under mpiexec: seconds one test may take before '
                         'every stack is dumped and the job aborted')
    group.addoption('--mpi-grace', type=float, default=20.0,
                    help='under mpiexec: seconds a failed rank waits for '
                         'its peers before aborting the job')
    group.addoption('--sim-timeout', type=float, default=120.0,
                    help='simulator backstop timeout per multi-rank test')
    group.addoption('--sim-schedule', default=None, metavar='SEED',
                    help='run simulated tests under this one schedule '
                         '(SEED or choices:I,J,..), e.g. to replay what '
                         'explore= found')


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'mpi(sizes=(1, 2, 3, 4, 8), nodes=1, send_mode="openmpi", '
        'explore=None): '
        'a multi-rank test that takes the mpi_comm fixture and runs on the '
        'simulator and under mpiexec')
    config.addinivalue_line(
        'markers', 'simulator_only(reason): a multi-rank test that cannot '
        'run under real MPI; the reason says why')
    if config.getoption('--mpi') is None:
        config.option.mpi = under_mpiexec()


def _real_mode(config):
    return bool(config.getoption('--mpi'))


def _world_comm():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def pytest_collection_modifyitems(config, items):
    if not _real_mode(config):
        return
    # Under mpiexec only what cannot run on real MPI is deselected; other
    # tests run once per rank, as they would without this plugin installed
    # (select the multi-rank ones with ``-m mpi``).
    keep, drop = [], []
    for item in items:
        wanted = item.get_closest_marker('simulator_only') is None
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_generate_tests(metafunc):
    if 'mpi_comm' not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker('mpi')
    kwargs = dict(marker.kwargs) if marker else {}
    sizes = tuple(kwargs.pop('sizes', DEFAULT_SIZES))
    nodes = kwargs.pop('nodes', 1)
    send_mode = kwargs.pop('send_mode', 'openmpi')
    explore = kwargs.pop('explore', None)
    if kwargs:
        raise TypeError('unknown mpi marker arguments: {}'.format(
            sorted(kwargs)))
    world_size = (_world_comm().Get_size() if _real_mode(metafunc.config)
                  else None)
    params = []
    for size in sizes:
        n = nodes if size >= nodes and size % nodes == 0 else 1
        spec = WorldSpec(size, n, send_mode, explore)
        marks = ()
        if world_size is not None and size > world_size:
            # Shown as a skip (not silently dropped or shrunk) so that a
            # 3-rank test under `mpiexec -n 2` says it did not run.
            marks = pytest.mark.skip(reason='needs {} ranks; mpiexec '
                                     'started {}'.format(size, world_size))
        params.append(pytest.param(
            spec, marks=marks,
            id='np{}{}'.format(size, 'x{}nodes'.format(n) if n > 1 else '')))
    metafunc.parametrize('mpi_comm', params, indirect=True)


@pytest.fixture
def mpi_comm(request):
    """This rank's mpi4py-like communicator (see the module docstring)."""
    spec = getattr(request, 'param', None) or WorldSpec(1)
    if not _real_mode(request.config):
        # The body runs in pytest_pyfunc_call, once per rank thread.
        yield spec
        return
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    member = world.Get_rank() < spec.size
    comm = world.Split(0 if member else MPI.UNDEFINED, world.Get_rank())
    if not member:
        pytest.skip('rank {} is outside this size-{} world'.format(
            world.Get_rank(), spec.size))
    try:
        yield comm
    finally:
        comm.Free()


@pytest.fixture
def MPI(request):  # named as the module tests use it as
    """The MPI module matching ``mpi_comm``: mpi4py.MPI, or the simulated
    one a program gets (simulator.mpi's public names)."""
    if _real_mode(request.config):
        from mpi4py import MPI
        return MPI
    # The module a simulated program gets from ``from mpi4py import MPI``
    # (mpi4py's names only, its __file__ too).
    from simulator.tools import launch
    with launch.simulated_mpi4py():
        return importlib.import_module('mpi4py.MPI')


@pytest.fixture
def simulated(request):
    """True when the test's ranks are simulator threads, False under
    mpiexec (for tests that check what only one world can show)."""
    return not _real_mode(request.config)


def _call_args(pyfuncitem):
    names = pyfuncitem._fixtureinfo.argnames
    return {name: pyfuncitem.funcargs[name] for name in names}


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    spec = pyfuncitem.funcargs.get('mpi_comm')
    if isinstance(spec, WorldSpec):
        return _run_simulated(pyfuncitem, spec)
    if _real_mode(pyfuncitem.config) and 'mpi_comm' in pyfuncitem.funcargs:
        return _run_real(pyfuncitem)
    return None


def _run_simulated(pyfuncitem, spec):
    from simulator.tools import launch
    test = pyfuncitem.obj
    args = _call_args(pyfuncitem)
    rebuilt = _rank_fixtures(pyfuncitem)

    def body(comm):
        with _built_on_this_rank(pyfuncitem, rebuilt) as values:
            test(**dict(args, **{name: values[name] for name in args
                                 if name in values}, mpi_comm=comm))

    options = dict(nodes=spec.nodes, send_mode=spec.send_mode,
                   timeout=pyfuncitem.config.getoption('--sim-timeout'))
    from simulator.tools import explore
    replay = pyfuncitem.config.getoption('--sim-schedule')
    if replay is not None:
        launch.run(body, spec.size, schedule=explore.parse_schedule(replay),
                   **options)
        return True
    if spec.explore is None:
        launch.run(body, spec.size, **options)
        return True
    report = explore.explore(body, spec.size, spec.explore, **options)
    if report.failure is not None:
        error = report.failure[1]
        error.add_note('replay: pytest {!r} --sim-schedule {}'.format(
            pyfuncitem.nodeid, report.failure[0]))
        raise error
    return True


def _rank_fixtures(pyfuncitem):
    """The user's function-scoped fixtures this test uses, dependencies
    first: each rank thread builds its own, as each process does under
    mpiexec (pytest has built one already, in its own thread, which the
    ranks do not see). Library fixtures (pytest's ``tmp_path``,
    ``monkeypatch``...) and parametrized ones stay shared."""
    from simulator.engine.libraries import is_library_file
    defs = pyfuncitem._fixtureinfo.name2fixturedefs
    order = []

    def visit(name):
        if name in order or name not in defs:
            return
        fixturedef = defs[name][-1]
        code = getattr(fixturedef.func, '__code__', None)
        if (fixturedef.scope != 'function' or fixturedef.params is not None
                or code is None or is_library_file(code.co_filename)
                or '.' in fixturedef.func.__qualname__.replace(
                    '<locals>.', '')):     # a class's fixture: shared
            return
        for dependency in fixturedef.argnames:
            visit(dependency)
        order.append(name)

    for name in pyfuncitem._fixtureinfo.argnames:
        visit(name)
    return [(name, defs[name][-1]) for name in order]


@contextlib.contextmanager
def _built_on_this_rank(pyfuncitem, rebuilt):
    values = {}
    teardowns = []
    try:
        for name, fixturedef in rebuilt:
            kwargs = {}
            for arg in fixturedef.argnames:
                if arg in values:
                    kwargs[arg] = values[arg]
                elif arg == 'request':
                    kwargs[arg] = pyfuncitem._request
                else:
                    kwargs[arg] = pyfuncitem._request.getfixturevalue(arg)
            value = fixturedef.func(**kwargs)
            if inspect.isgenerator(value):
                teardowns.append(value)
                value = next(value)
            values[name] = value
        yield values
    finally:
        for generator in reversed(teardowns):
            for _ in generator:     # runs the code after its yield
                pass


def _run_real(pyfuncitem):
    comm = pyfuncitem.funcargs['mpi_comm']
    config = pyfuncitem.config
    faulthandler.dump_traceback_later(config.getoption('--mpi-timeout'),
                                      exit=True)
    try:
        error = None
        try:
            pyfuncitem.obj(**_call_args(pyfuncitem))
        except (pytest.skip.Exception, pytest.xfail.Exception):
            raise
        except BaseException as e:  # noqa: B902 -- reported, then re-raised
            error = e
        _meet_peers(comm, error, grace=config.getoption('--mpi-grace'),
                    nodeid=pyfuncitem.nodeid, config=config)
        if error is not None:
            raise error
    finally:
        faulthandler.cancel_dump_traceback_later()
    return True


def _meet_peers(comm, error, grace, nodeid, config):
    """Barrier after a test; a failed rank aborts if its peers never come."""
    request = comm.Ibarrier()
    deadline = None if error is None else time.monotonic() + grace
    while not request.Test():
        if deadline is not None and time.monotonic() > deadline:
            from mpi4py import MPI
            # Captured output would die with the job: write past pytest.
            capture = config.pluginmanager.getplugin('capturemanager')
            with capture.global_and_fixture_disabled():
                sys.stderr.write(
                    '\n[rank {}] {} failed and its peers did not finish '
                    'within {:.0f} s; aborting the job:\n{}'.format(
                        MPI.COMM_WORLD.Get_rank(), nodeid, grace,
                        ''.join(traceback.format_exception(error))))
                sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)
        time.sleep(0.0005 if deadline is None else 0.01)
