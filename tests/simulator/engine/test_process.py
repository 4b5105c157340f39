"""A rank is a process: sys.argv, sys.path, the standard streams,
os.environ, the global generators and Chainer's global_config are private
per rank (simulator.engine.process, simulator.engine.rank_sys).
The mpi-marked tests run the same body on the simulator and under
mpiexec, where each rank is a real process."""
import importlib
import io
import os
import random
import signal
import multiprocessing.util
import subprocess
import warnings
import sys
import types
import threading
import time
import traceback

import chainer
import numpy as np
import pytest

import simulator
from simulator.engine import process
from simulator.engine.process import local_rank_order
from simulator.engine.world import host_slots

_ENV = 'SIMULATOR_TEST_PROCESS_RANK'


@pytest.mark.mpi(sizes=(1, 3))
def test_seeded_global_generators_draw_the_same_numbers_on_every_rank(
        mpi_comm):
    np.random.seed(1234)
    drawn = np.random.rand(3).tolist()
    random.seed(99)
    python_drawn = random.random()
    everyone = mpi_comm.allgather((drawn, python_drawn))
    assert everyone == [(np.random.RandomState(1234).rand(3).tolist(),
                         random.Random(99).random())] * mpi_comm.size


@pytest.mark.mpi(sizes=(1, 3))
def test_argv_edited_by_one_rank_changes_only_that_rank(mpi_comm):
    saved = list(sys.argv)
    try:
        if mpi_comm.rank == 0:
            sys.argv.append('--rank-0-only')
        else:
            sys.argv = sys.argv + ['--rank-{}'.format(mpi_comm.rank)]
        mpi_comm.Barrier()
        seen = mpi_comm.allgather(sys.argv[len(saved):])
        assert seen == [['--rank-{}{}'.format(r, '-only' if r == 0 else '')]
                        for r in range(mpi_comm.size)]
    finally:
        sys.argv[:] = saved


@pytest.mark.mpi(sizes=(1, 3))
def test_streams_replaced_by_one_rank_stay_in_that_rank(mpi_comm):
    # The even ranks capture their output (as mpi4py's test_attributes
    # captures a callback's traceback), the odd ones keep their streams;
    # all write at once, through print() and traceback.print_exc() with no
    # file (which read sys.stdout/sys.stderr from C), and sys.stderr.
    rank = mpi_comm.rank
    saved = sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    capturing = rank % 2 == 0
    try:
        if capturing:
            sys.stdout, sys.stderr = out, err
        mpi_comm.Barrier()      # every rank's streams set before any writes
        kept = (sys.stdout, sys.stderr) == saved
        print('out of rank', rank)
        try:
            raise ValueError('raised in rank {}'.format(rank))
        except ValueError:
            traceback.print_exc()
        sys.stderr.write('err of rank {}\n'.format(rank))
        mpi_comm.Barrier()      # every rank's lines written
    finally:
        sys.stdout, sys.stderr = saved
    assert kept != capturing
    assert (sys.stdout, sys.stderr) == saved
    if capturing:
        assert out.getvalue() == 'out of rank {}\n'.format(rank)
        lines = err.getvalue().splitlines()
        assert lines[0] == 'Traceback (most recent call last):'
        assert [line for line in lines if line.startswith((
            'Traceback', 'ValueError', 'err of'))] == [
                'Traceback (most recent call last):',
                'ValueError: raised in rank {}'.format(rank),
                'err of rank {}'.format(rank)]


@pytest.mark.mpi(sizes=(1, 3))
def test_sys_path_changed_by_one_rank_stays_there_and_imports_by_it(
        mpi_comm, tmp_path):
    # Each rank puts a folder of its own on its path (rank 1 reassigns
    # sys.path, the others insert): the import system finds the rank's
    # module there and not the other ranks'.
    rank, size = mpi_comm.rank, mpi_comm.size
    names = ['simulator_test_path_probe_{}'.format(r) for r in range(size)]
    folder = tmp_path / 'rank{}'.format(rank)
    folder.mkdir()
    (folder / (names[rank] + '.py')).write_text('RANK = {}\n'.format(rank))
    saved = list(sys.path)
    try:
        if rank == 1:
            sys.path = [str(folder)] + sys.path
        else:
            sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
        mpi_comm.Barrier()      # every rank's path changed
        others = [importlib.util.find_spec(n) for n in names if
                  n != names[rank]]
        mpi_comm.Barrier()      # no rank has imported its module yet
        module = importlib.import_module(names[rank])
        path = list(sys.path)
    finally:
        sys.path = saved
        sys.modules.pop(names[rank], None)
    assert others == [None] * (size - 1)
    assert module.RANK == rank
    assert path == [str(folder)] + saved


@pytest.mark.mpi(sizes=(1, 3))
def test_excepthook_set_by_each_rank_is_its_own(mpi_comm):
    # An MPI abort hook asks "is my hook still sys.excepthook?" before it
    # acts: each rank must see the one it installed, not the last rank's.
    rank = mpi_comm.rank
    saved = sys.excepthook

    def hook(*args):
        return rank
    try:
        sys.excepthook = hook
        mpi_comm.Barrier()      # every rank has installed its own
        mine = sys.excepthook is hook
        answer = sys.excepthook()
        mpi_comm.Barrier()
    finally:
        sys.excepthook = saved
    assert mine and answer == rank
    assert sys.excepthook is saved


@pytest.mark.mpi(sizes=(1, 3))
def test_environ_writes_stay_in_the_rank_and_reach_its_children(mpi_comm):
    os.environ[_ENV] = str(mpi_comm.rank)
    try:
        mpi_comm.Barrier()
        child = subprocess.run(
            [sys.executable, '-c',
             'import os; print(os.environ[{!r}])'.format(_ENV)],
            capture_output=True, text=True, check=True).stdout.strip()
        seen = mpi_comm.allgather((os.environ[_ENV], os.getenv(_ENV), child))
        assert seen == [(str(r),) * 3 for r in range(mpi_comm.size)]
    finally:
        del os.environ[_ENV]


@pytest.mark.mpi(sizes=(1, 3))
def test_environb_is_the_ranks_environment_in_bytes(mpi_comm):
    key, mine = _ENV.encode(), str(mpi_comm.rank).encode()
    os.environb[key] = mine
    try:
        mpi_comm.Barrier()
        seen = (os.environb[key], os.getenvb(key), os.environ[_ENV],
                key in list(os.environb))
        assert mpi_comm.allgather(seen) == [
            (str(r).encode(), str(r).encode(), str(r), True)
            for r in range(mpi_comm.size)]
        with pytest.raises(TypeError, match='bytes expected, not str'):
            os.environb[_ENV] = mine
    finally:
        del os.environb[key]
    assert _ENV not in os.environ


@pytest.mark.mpi(sizes=(1, 3))
def test_a_child_given_env_none_inherits_the_ranks_environment(mpi_comm):
    os.environ[_ENV] = str(mpi_comm.rank)
    try:
        child = subprocess.run(['sh', '-c', 'echo "${}"'.format(_ENV)],
                               env=None, capture_output=True, text=True,
                               check=True).stdout.strip()
        assert child == str(mpi_comm.rank)
    finally:
        del os.environ[_ENV]


@pytest.mark.mpi(sizes=(1, 3))
def test_children_inherit_the_ranks_environment_unread(mpi_comm, MPI):
    # The rank never reads os.environ before starting its children: they
    # still get its launcher variables, through subprocess and os.system.
    rank = str(MPI.COMM_WORLD.rank)
    child = subprocess.run(
        ['sh', '-c', 'echo "$OMPI_COMM_WORLD_RANK"'],
        capture_output=True, text=True, check=True).stdout.strip()
    status = os.system('test "$OMPI_COMM_WORLD_RANK" = {}'.format(rank))
    assert (child, status) == (rank, 0)
    # multiprocessing's 'spawn' start execs its children this way
    pid = multiprocessing.util.spawnv_passfds(
        b'/bin/sh', ['sh', '-c', 'exit "$OMPI_COMM_WORLD_RANK"'], ())
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == int(rank)


@pytest.mark.simulator_only('under mpiexec the child joins the job as its '
                            "parent's rank; no launcher runs here for it")
@pytest.mark.mpi(sizes=(2,))
def test_a_ranks_child_that_starts_mpi_runs_it_alone(mpi_comm):
    child = subprocess.run(
        [sys.executable, '-c', 'from mpi4py import MPI; '
         'print(MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank())'],
        capture_output=True, text=True, timeout=120)
    assert (child.returncode, child.stdout.split()) == (0, ['1', '0']), \
        child.stderr[-2000:]


@pytest.mark.mpi(sizes=(2, 3))
def test_thread_pools_are_numbered_by_the_rank_alone(mpi_comm):
    # ThreadPoolExecutor-N_0: N counts the process's executors, which the
    # other ranks' do not advance.
    import concurrent.futures
    import threading
    names = []
    for _ in range(2):
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            names.append(pool.submit(
                lambda: threading.current_thread().name).result())
        mpi_comm.Barrier()      # every rank makes one in between
    first, second = [int(n.split('-')[1].split('_')[0]) for n in names]
    assert mpi_comm.allgather(second - first) == [1] * mpi_comm.size


@pytest.mark.mpi(sizes=(1, 3))
def test_os_system_answers_a_wait_status(mpi_comm):
    assert os.system('exit {}'.format(mpi_comm.rank + 3)) == \
        (mpi_comm.rank + 3) << 8
    assert os.system('kill -TERM $$') == signal.SIGTERM


@pytest.mark.mpi(sizes=(1, 3))
def test_each_rank_has_the_launchers_variables(mpi_comm, MPI, simulated):
    # What mpiexec puts in each process's environment (programs pick their
    # GPU by the local rank); under mpiexec a test of fewer ranks than
    # the job runs on a part of COMM_WORLD, so read COMM_WORLD.
    world = MPI.COMM_WORLD
    env = os.environ
    size = str(world.size)
    assert (env['OMPI_COMM_WORLD_RANK'], env['OMPI_COMM_WORLD_SIZE']) == (
        str(world.rank), size)
    assert env['OMPI_COMM_WORLD_LOCAL_SIZE'] == env['OMPI_WORLD_SIZE'] == \
        env['OMPI_WORLD_LOCAL_SIZE'] == size
    assert env['OMPI_COMM_WORLD_NODE_RANK'] == \
        env['OMPI_COMM_WORLD_LOCAL_RANK']
    # A slot per core, however many ranks run (Open MPI oversubscribes).
    assert env['OMPI_UNIVERSE_SIZE'] == str(
        world.Get_attr(MPI.UNIVERSE_SIZE)) == str(host_slots())
    # Open MPI numbers an oversubscribed node's ranks core by core (3
    # ranks on 2 cores: 0, 2, 1), and so does the simulator.
    local = mpi_comm.allgather(int(env['OMPI_COMM_WORLD_LOCAL_RANK']))
    order = local_rank_order(world.size, host_slots())
    assert local == [order.index(r) for r in range(mpi_comm.size)]


@pytest.mark.mpi(sizes=(4,), nodes=2)
@pytest.mark.simulator_only('places ranks on two simulated nodes')
def test_local_ranks_count_within_each_node(mpi_comm):
    env = os.environ
    seen = mpi_comm.allgather((env['OMPI_COMM_WORLD_LOCAL_RANK'],
                               env['OMPI_COMM_WORLD_LOCAL_SIZE']))
    # two ranks per node, each node counting from 0
    assert seen == [('0', '2'), ('1', '2')] * 2
    # three ranks on two nodes: 2 then 1
    assert [process.launcher_environ([0, 0, 1], r, 4)[
        'OMPI_COMM_WORLD_LOCAL_SIZE'] for r in range(3)] == ['2', '2', '1']
    assert process.launcher_environ([0, 0, 1], 2, 4)[
        'OMPI_COMM_WORLD_LOCAL_RANK'] == '0'


@pytest.mark.mpi(sizes=(1, 3))
def test_numpy_print_options_set_by_one_rank_stay_there(mpi_comm):
    before = np.get_printoptions()
    unchanged = str(np.array([1 / 3]))
    try:
        if mpi_comm.rank == 0:
            np.set_printoptions(precision=2)
        mpi_comm.Barrier()
        seen = mpi_comm.allgather((np.get_printoptions()['precision'],
                                   str(np.array([1 / 3]))))
        assert seen == [(2, '[0.33]')] + [
            (before['precision'], unchanged)] * (mpi_comm.size - 1)
        with np.printoptions(precision=4):
            assert str(np.array([1 / 3])) == '[0.3333]'
    finally:
        mpi_comm.Barrier()
        np.set_printoptions(**before)


@pytest.mark.mpi(sizes=(1, 3))
def test_process_time_counts_only_the_ranks_own_threads(mpi_comm):
    # The last rank keeps a thread of its own busy, the others sleep: a
    # process's CPU time is its threads', not its neighbours'.
    busy = mpi_comm.rank == mpi_comm.size - 1

    def spin(seconds=0.3):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    mpi_comm.Barrier()
    start = time.process_time()
    if busy:
        helper = threading.Thread(target=spin)
        helper.start()
        helper.join()
    else:
        time.sleep(0.3)
    spent = time.process_time() - start
    mpi_comm.Barrier()
    assert spent > 0.05 if busy else spent < 0.05, spent
    assert isinstance(time.process_time_ns(), int)


_ATEXIT = ('a process runs its atexit handlers when it exits, after '
           'pytest: only a simulated rank ends inside the test')


@pytest.mark.simulator_only(_ATEXIT)
def test_atexit_handlers_run_in_their_rank_when_its_program_ends(capsys):
    import atexit
    ran = []

    def body(comm):
        def total(tag):
            # in the rank, which may still communicate
            ran.append((comm.rank, tag, comm.allreduce(comm.rank)))
        atexit.register(total, 'first')
        atexit.register(lambda: 1 / 0)          # printed, then the next
        atexit.register(total, 'last')
        atexit.register(ran.append, 'dropped')
        atexit.unregister(ran.append)
        if comm.rank == 1:
            sys.exit(0)
    simulator.run(body, 2)
    assert sorted(ran) == [(0, 'first', 1), (0, 'last', 1),
                           (1, 'first', 1), (1, 'last', 1)]
    # last registered first, in each rank
    assert [tag for r, tag, _ in ran if r == 0] == ['last', 'first']
    err = capsys.readouterr().err
    assert err.count('Exception ignored in atexit callback') == 2
    assert 'ZeroDivisionError' in err


@pytest.mark.simulator_only(_ATEXIT)
def test_os_exit_skips_the_ranks_atexit_handlers():
    import atexit
    ran = []

    def body(comm):
        atexit.register(ran.append, comm.rank)
        # (os._exit skips mpi4py's finalizer too: without this, exiting
        # improperly, as test_launcher_scripts checks against mpiexec)
        simulator.mpi.Finalize()
        os._exit(0)
    simulator.run(body, 1)
    assert ran == []


@pytest.mark.mpi(sizes=(1, 3))
def test_chainer_global_config_set_by_one_rank_stays_there(mpi_comm):
    try:
        if mpi_comm.rank == 0:
            chainer.global_config.simulator_test_flag = 'rank 0'
        mpi_comm.Barrier()
        seen = mpi_comm.allgather(getattr(
            chainer.global_config, 'simulator_test_flag', None))
        assert seen == ['rank 0'] + [None] * (mpi_comm.size - 1)
        # chainer.config falls back to the rank's global config.
        assert chainer.config.train is True
    finally:
        if mpi_comm.rank == 0:
            del chainer.global_config.simulator_test_flag


@pytest.mark.mpi(sizes=(1, 3))
def test_warning_filters_set_by_one_rank_stay_there(mpi_comm):
    # Each rank's catch_warnings block keeps its own filter while the
    # others enter and leave theirs (a process each, as under mpiexec).
    import warnings
    action = 'error' if mpi_comm.rank % 2 == 0 else 'ignore'
    before = list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter(action)
        mpi_comm.Barrier()
        time.sleep(0.01 * mpi_comm.rank)
        try:
            warnings.warn('per-rank filter', UserWarning)
            raised = False
        except UserWarning:
            raised = True
        mpi_comm.Barrier()
    assert raised == (action == 'error')
    assert warnings.filters == before



@pytest.mark.mpi(sizes=(2, 3))
def test_what_a_librarys_import_sets_is_every_ranks(mpi_comm, simulated):
    # A library's module code adds warning filters (NumPy, Chainer), sets
    # environment variables (scikit-learn) and configures its logger:
    # each process runs it at its own import. Here it runs once, in the
    # rank that imports it first; its effects are every rank's all the
    # same, and the filter set inside its catch_warnings block nobody's.
    import tempfile
    import uuid
    rank = mpi_comm.rank
    name, folder = mpi_comm.bcast(
        ('simtest_import_' + uuid.uuid4().hex, tempfile.mkdtemp())
        if rank == 0 else None)
    message = name + ' import-time filter'
    variable = name.upper()
    if rank == 0:
        with open(os.path.join(folder, name + '.py'), 'w') as f:
            f.write('import os, warnings\n'
                    'warnings.filterwarnings("ignore", message={0!r})\n'
                    'with warnings.catch_warnings():\n'
                    '    warnings.simplefilter("error")\n'
                    'os.environ.setdefault({1!r}, "library")\n'
                    'os.environ[{1!r} + "_SET"] = "set"\n'
                    'os.environ.pop({1!r} + "_GONE", None)\n'
                    'import logging\n'
                    'log = logging.getLogger({2!r})\n'
                    'log.addHandler(logging.NullHandler())\n'
                    'log.setLevel(logging.INFO)\n'
                    'log.propagate = False\n'
                    'import numpy\n'
                    'numpy.set_printoptions(precision=3)\n'
                    .format(message, variable, name))
        # a second library puts NumPy's precision back at its import
        with open(os.path.join(folder, name + '_undo.py'), 'w') as f:
            f.write('import numpy\n'
                    'numpy.set_printoptions(precision={})\n'.format(
                        np.get_printoptions()['precision']))
        if simulated:
            simulator.register_library(folder)
    # The last rank has its own value, which the library's setdefault
    # keeps there; every rank has a variable the library removes.
    last = rank == mpi_comm.size - 1
    if last:
        os.environ[variable] = 'mine'
    os.environ[variable + '_GONE'] = 'here'
    mpi_comm.Barrier()
    sys.path.insert(0, folder)
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(folder)
    first = warnings.filters[0]
    assert first[:3] == ('ignore', first[1], Warning)
    assert first[1].pattern == message
    assert not any(f[0] == 'error' for f in warnings.filters)
    assert os.environ[variable] == ('mine' if last else 'library')
    assert os.environ[variable + '_SET'] == 'set'
    assert variable + '_GONE' not in os.environ
    import logging
    log = logging.getLogger(name)
    assert [type(h) for h in log.handlers] == [logging.NullHandler]
    assert (log.level, log.propagate) == (logging.INFO, False)
    assert np.get_printoptions()['precision'] == 3
    # ... and what a rank then sets is its own.
    precision = np.get_printoptions()['precision']
    if rank == 0:
        log.setLevel(logging.DEBUG)
        np.set_printoptions(precision=5)
    mpi_comm.Barrier()
    assert log.level == (logging.DEBUG if rank == 0 else logging.INFO)
    assert np.get_printoptions()['precision'] == (5 if rank == 0 else 3)
    mpi_comm.Barrier()
    np.set_printoptions(precision=precision)
    sys.path.insert(0, folder)
    try:
        importlib.import_module(name + '_undo')
    finally:
        sys.path.remove(folder)


@pytest.mark.mpi(sizes=(2, 3))
def test_a_rank_posing_as_another_platform_does_so_alone(mpi_comm):
    # mpi4py's own tests set os.name, sys.platform and os.environ to pose
    # as Windows, then put them back: another process never sees it.
    name, platform, environ = os.name, sys.platform, os.environ
    if mpi_comm.rank == 1:
        os.name, sys.platform, os.environ = 'nt', 'win32', {'X': '1'}
    mpi_comm.Barrier()
    try:
        if mpi_comm.rank == 1:
            assert (os.name, sys.platform, os.environ) == (
                'nt', 'win32', {'X': '1'})
            # os's own functions read the module's environ, reassigned
            assert (os.getenv('X'), os.getenv('PATH')) == ('1', None)
        else:
            assert (os.name, sys.platform) == (name, platform)
            assert os.environ is environ
            assert os.getenv('PATH') == environ['PATH']
    finally:
        mpi_comm.Barrier()
        if mpi_comm.rank == 1:
            os.name, sys.platform, os.environ = name, platform, environ
    assert (os.name, sys.platform) == (name, platform)
    assert os.environ is environ


def test_unseeded_draws_differ_between_ranks_and_follow_the_world_seed():
    def draw(comm):
        return np.random.rand(), random.random()
    first = simulator.run(draw, 3, seed=7)
    assert len(set(first)) == 3
    assert simulator.run(draw, 3, seed=7) == first
    assert simulator.run(draw, 3, seed=8) != first


def test_outside_a_run_everything_is_the_process_own():
    shared_rand = np.random.rand
    streams, path = (sys.stdin, sys.stdout, sys.stderr), sys.path

    def body(comm):
        np.random.seed(comm.rank)
        sys.stdout = sys.stderr = io.StringIO()
        sys.path = []
    simulator.run(body, 2)
    assert (sys.stdin, sys.stdout, sys.stderr) == streams
    assert sys.path is path
    assert [vars(sys)[n] for n in ('stdin', 'stdout', 'stderr')] == list(
        streams)
    assert np.random.rand is shared_rand
    assert type(sys) is type(os)
    import warnings
    assert type(warnings) is type(os)
    assert isinstance(os.environ, os._Environ)
    assert type(chainer.global_config) is chainer.configuration.GlobalConfig


def test_registered_mapping_is_private_per_rank():
    import types
    fake = types.ModuleType('simulator_test_fake_generators')
    fake.states = {}
    sys.modules[fake.__name__] = fake
    try:
        process.register_private_mapping(fake.__name__, 'states')

        def body(comm):
            fake.states[0] = comm.rank
            comm.Barrier()
            return dict(fake.states)
        assert simulator.run(body, 2) == [{0: 0}, {0: 1}]
        assert fake.states == {}
    finally:
        process._registry.pop(fake.__name__)
        del sys.modules[fake.__name__]


def test_library_picklers_still_pickle_modules_while_worlds_run():
    # cloudpickle and dill find their module reducer by exact type; while
    # worlds run a module's class is a stand-in (a library module's, the
    # rank's own sys...), which they pickled as "cannot pickle 'module'"
    # (seen with MPI.pickle.__init__(cloudpickle.dumps, ...)).
    import collections
    import copyreg
    import json
    import pickle
    import types
    fake = types.ModuleType('simulator_test_fake_pickler')

    def module_reduce(module):
        return importlib.import_module, (module.__name__,)

    class Pickler(pickle.Pickler):
        _dispatch_table = {types.ModuleType: module_reduce}
        dispatch_table = collections.ChainMap(_dispatch_table,
                                              copyreg.dispatch_table)
    fake.Pickler = Pickler
    sys.modules[fake.__name__] = fake
    try:
        process.register_module_dispatch(fake.__name__,
                                         'Pickler._dispatch_table')

        def dumps(obj):
            out = io.BytesIO()
            fake.Pickler(out).dump(obj)
            return out.getvalue()

        def body(comm):
            import builtins
            return [pickle.loads(dumps(module)) is module
                    for module in (json, np, sys, os, builtins)]
        assert simulator.run(body, 2) == [[True] * 5] * 2
        assert set(Pickler._dispatch_table) == {types.ModuleType}
    finally:
        process._registry.pop(fake.__name__)
        del sys.modules[fake.__name__]


def test_sys_exit_in_a_rank_ends_the_job_with_its_status():
    def body(comm):
        buf = np.ones(2)
        for step in range(100):
            if comm.rank == 2 and step == 3:
                sys.exit(3)
            comm.Allreduce(buf.copy(), buf)
    start = time.monotonic()
    with pytest.raises(SystemExit) as info:
        simulator.run(body, 4)
    assert info.value.code == 3
    assert 'rank 2' in str(info.value.__notes__)
    assert time.monotonic() - start < 5


def test_sys_exit_zero_ends_only_that_rank():
    def body(comm):
        if comm.rank == 1:
            sys.exit(0)
        return comm.rank
    assert simulator.run(body, 2) == [0, None]


def test_os_exit_in_a_helper_thread_ends_the_whole_rank():
    def body(comm):
        if comm.rank == 1:
            threading.Thread(target=os._exit, args=(7,)).start()
        comm.Barrier()
    with pytest.raises(SystemExit) as info:
        simulator.run(body, 2, timeout=30)
    assert info.value.code == 7


@pytest.mark.mpi(sizes=(1, 3))
def test_threading_excepthook_set_by_each_rank_reports_its_threads(mpi_comm):
    # A process's hook sees its own threads' exceptions only.
    rank = mpi_comm.rank
    saved = threading.excepthook
    seen = []

    def hook(args):
        seen.append((rank, str(args.exc_value)))
    try:
        threading.excepthook = hook
        mpi_comm.Barrier()      # every rank has set its own
        mine = threading.excepthook is hook

        def fail():
            raise ValueError('from rank {}'.format(rank))
        thread = threading.Thread(target=fail)
        thread.start()
        thread.join()
        mpi_comm.Barrier()
    finally:
        threading.excepthook = saved
    assert mine and seen == [(rank, 'from rank {}'.format(rank))]
    assert threading.excepthook is saved


@pytest.mark.mpi(sizes=(1, 3))
def test_working_directory_and_umask_set_by_a_rank_are_its_own(mpi_comm,
                                                              tmp_path):
    # A rank that works in its own folder (os.chdir) writes its relative
    # paths there, its threads too, as a process under mpiexec.
    import threading
    import simulator
    context = simulator.current()
    if context is not None and not context.own_directory:
        pytest.skip('no unshare(CLONE_FS) for rank threads here (a '
                    'container may forbid it): a rank\'s chdir is the '
                    'process\'s, and reported')
    rank = mpi_comm.rank
    start = os.getcwd()
    folder = tmp_path / 'rank{}'.format(rank)
    folder.mkdir()
    old_mask = os.umask(0o077 if rank else 0o022)
    try:
        os.chdir(str(folder))
        mpi_comm.Barrier()      # every rank has moved to its own
        with open('mine.txt', 'w') as f:
            f.write(str(rank))
        seen = []
        thread = threading.Thread(target=lambda: seen.append(os.getcwd()))
        thread.start()
        thread.join()
        mpi_comm.Barrier()
        here, mask = os.getcwd(), os.umask(0o022)
    finally:
        os.chdir(start)
        os.umask(old_mask)
    assert here == seen[0] == str(folder)
    assert (folder / 'mine.txt').read_text() == str(rank)
    assert mask == (0o077 if rank else 0o022)


def _warn_from_a_shared_module():
    # (this test module was imported before the world: one for all ranks)
    warnings.warn('simulator test: a shared module\'s warning', UserWarning)


@pytest.mark.mpi(sizes=(1, 3))
def test_a_shared_modules_warning_shows_once_in_each_rank(mpi_comm):
    # Which warnings were shown is each process's: rank 1's is not
    # silenced because rank 0 showed it, and an "error" filter of one
    # rank still raises.
    rank = mpi_comm.rank
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('default')
        mpi_comm.Barrier()      # every rank's filters are set
        for turn in range(mpi_comm.size):
            if turn == rank:
                _warn_from_a_shared_module()
                _warn_from_a_shared_module()    # the same location: not
            mpi_comm.Barrier()
        warnings.simplefilter('error')
        with pytest.raises(UserWarning):
            _warn_from_a_shared_module()
    assert [str(w.message) for w in caught] == [
        "simulator test: a shared module's warning"]


@pytest.mark.mpi(sizes=(1, 3))
def test_each_rank_has_its_own_process_id(mpi_comm):
    # Names and seeds made from os.getpid() differ between ranks; the id
    # is the same in the rank's threads.
    import threading
    pid = os.getpid()
    seen = []
    thread = threading.Thread(target=lambda: seen.append(os.getpid()))
    thread.start()
    thread.join()
    pids = mpi_comm.allgather(pid)
    assert seen == [pid]
    assert len(set(pids)) == mpi_comm.size
    os.kill(pid, 0)     # a real id: the signal 0 reaches a live process


@pytest.mark.simulator_only('checks what libraries get of the process id')
def _pids(_):
    import multiprocessing
    return os.getpid(), multiprocessing.current_process().pid


@pytest.mark.mpi(sizes=(1, 2))
def test_multiprocessing_and_forked_workers_have_process_ids_as_processes(
        mpi_comm):
    # current_process().pid is the program's own getpid; a worker a rank
    # forks is a process of its own, with the kernel's id.
    import multiprocessing
    mine = _pids(None)
    assert mine[0] == mine[1]
    with multiprocessing.get_context('fork').Pool(2) as pool:
        workers = pool.map(_pids, range(4), chunksize=1)
    assert all(pid == reported and pid != mine[0]
               for pid, reported in workers)
    assert len(set(mpi_comm.allgather(mine[0]))) == mpi_comm.size


@pytest.mark.mpi(sizes=(1, 3))
def test_each_rank_sets_its_own_multiprocessing_start_method(mpi_comm):
    # Once per process (a second call raises): ImageNet-style scripts set
    # it in every rank; here each rank picks a different one.
    import multiprocessing
    context = multiprocessing.context._default_context
    saved = context._actual_context
    context._actual_context = None      # as a fresh process has it
    try:
        method = ('fork', 'forkserver', 'spawn')[mpi_comm.rank % 3]
        multiprocessing.set_start_method(method)
        mpi_comm.Barrier()
        with pytest.raises(RuntimeError, match='already been set'):
            multiprocessing.set_start_method(method)
        assert mpi_comm.allgather(multiprocessing.get_start_method()) == [
            ('fork', 'forkserver', 'spawn')[r % 3]
            for r in range(mpi_comm.size)]
    finally:
        context._actual_context = saved


@pytest.mark.mpi(sizes=(1, 3))
def test_a_log_records_process_id_is_the_ranks(mpi_comm):
    # %(process)d in a log format tells the ranks' lines apart.
    import logging
    record = logging.LogRecord('probe', logging.INFO, __file__, 1, 'm',
                               None, None)
    assert record.process == os.getpid()
    assert len(set(mpi_comm.allgather(record.process))) == mpi_comm.size


@pytest.mark.mpi(sizes=(1, 3))
def test_the_program_a_rank_puts_in_sys_modules_is_its_own(mpi_comm):
    # runpy and mpi4py.futures' workers swap in the program a process
    # runs ('__main__', '__worker__'...); pickle finds its classes there.
    import pickle
    module = types.ModuleType('__worker__')
    exec('class Thing:\n    pass\n', vars(module))
    sys.modules['__worker__'] = module
    try:
        mpi_comm.Barrier()          # every rank has put its own
        assert sys.modules['__worker__'] is module
        assert '__worker__' in sys.modules
        thing = pickle.loads(pickle.dumps(module.Thing()))
        assert type(thing) is module.Thing
        mpi_comm.Barrier()
    finally:
        del sys.modules['__worker__']
    assert '__worker__' not in sys.modules
    assert sys.modules.get('__worker__') is None


@pytest.mark.mpi(sizes=(1, 2))
def test_sys_modules_answers_as_a_dict_with_the_ranks_own_entries(mpi_comm):
    module = types.ModuleType('__simulator_test_main__')
    assert sys.modules.setdefault('__simulator_test_main__', module) is module
    try:
        assert isinstance(sys.modules, dict)
        assert sys.modules.get('__simulator_test_main__') is module
        assert '__simulator_test_main__' in list(sys.modules)
        assert '__simulator_test_main__' in sys.modules.keys()
        assert dict(sys.modules)['__simulator_test_main__'] is module
        assert sys.modules.copy()['__simulator_test_main__'] is module
        assert len(sys.modules) == len(list(sys.modules))
        # any object may sit there (a class, here), under any name
        name = '_simulator_test_entry_{}'.format(mpi_comm.rank)
        odd = type('Odd', (), {})
        sys.modules[name] = odd
        assert name in sys.modules and sys.modules[name] is odd
        del sys.modules[name]
        assert name not in sys.modules
        mpi_comm.Barrier()
    finally:
        assert sys.modules.pop('__simulator_test_main__') is module
    assert sys.modules.pop('__simulator_test_main__', None) is None
