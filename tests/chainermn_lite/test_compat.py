"""chainermn_lite.compat and ChainerMN's module paths mirrored here."""
import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap

import chainer
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite import compat
from chainermn_lite.communicators import _communication_utility as cu
from chainermn_lite.communicators.dummy_communicator import \
    DummyCommunicator
from chainermn_lite.communicators.flat_communicator import FlatCommunicator
from chainermn_lite.communicators.hierarchical_communicator import \
    HierarchicalCommunicator
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase
from chainermn_lite.communicators.naive_communicator import \
    NaiveCommunicator
from chainermn_lite.communicators.non_cuda_aware_communicator import \
    NonCudaAwareCommunicator
from chainermn_lite.communicators.pure_nccl_communicator import \
    PureNcclCommunicator
from simulator.tools.mpiexec_env import mpiexec_environment, run_mpiexec

MEAN_CLASSES = (NaiveCommunicator, FlatCommunicator, NonCudaAwareCommunicator,
                HierarchicalCommunicator)


@pytest.fixture
def installed():
    compat.install()
    try:
        yield
    finally:
        compat.uninstall()


def test_import_chainermn_gives_chainermn_lite(installed):
    import chainermn
    from chainermn.communicators.naive_communicator import \
        NaiveCommunicator as Aliased
    from chainermn.extensions import _multi_node_snapshot
    assert chainermn is chainermn_lite
    assert Aliased is NaiveCommunicator
    assert chainermn.create_communicator is \
        chainermn_lite.create_communicator
    assert _multi_node_snapshot is sys.modules[
        'chainermn_lite.extensions._multi_node_snapshot']
    assert compat.is_installed()
    # The modules keep their own identity (importlib.reload, find_spec).
    assert chainermn_lite.__spec__.name == 'chainermn_lite'
    assert _multi_node_snapshot.__spec__.name == \
        'chainermn_lite.extensions._multi_node_snapshot'
    assert importlib.util.find_spec('chainermn_lite').origin == \
        chainermn_lite.__file__


def test_uninstall_gives_the_real_chainermn_back(installed):
    importlib.import_module('chainermn.communicators')
    compat.uninstall()
    real = importlib.import_module('chainermn')
    assert real is not chainermn_lite
    assert 'site-packages' in real.__file__
    assert not compat.is_installed()
    compat.install()
    assert importlib.import_module('chainermn') is chainermn_lite


def test_a_path_chainermn_lite_lacks_is_an_error_naming_both(installed):
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module('chainermn.no_such_module')
    assert 'chainermn_lite.no_such_module' in str(info.value)
    assert "'chainermn.no_such_module'" in str(info.value)


def test_install_twice_adds_one_finder(installed):
    compat.install()
    assert sum(isinstance(f, compat._AliasFinder)
               for f in sys.meta_path) == 1


@pytest.mark.parametrize('as_module', [False, True])
def test_command_line_runs_script_and_module(tmp_path, as_module):
    (tmp_path / 'uses_chainermn.py').write_text(textwrap.dedent('''
        import sys
        import mpi4py
        import chainermn
        from chainermn.communicators import naive_communicator
        print(chainermn.__name__, naive_communicator.__name__, sys.argv[1:])
        # Importing ChainerMN imports mpi4py.MPI; ChainerMN's own tests
        # use it after a bare ``import mpi4py``.
        print(mpi4py.MPI.COMM_WORLD.Get_size())
        '''))
    target = ['-m', 'uses_chainermn'] if as_module else \
        [str(tmp_path / 'uses_chainermn.py')]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + sys.path))
    done = subprocess.run(
        [sys.executable, '-m', 'chainermn_lite.compat'] + target +
        ['--flag', 'x'], capture_output=True, text=True, env=env,
        timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split('\n')[:2] == [
        "chainermn_lite chainermn_lite.communicators.naive_communicator "
        "['--flag', 'x']", '1']


def test_pytest_under_compat_with_warnings_as_errors(tmp_path):
    # Chainer's setup.cfg turns every warning into an error; pytest warns
    # that chainermn_lite (imported by compat before pytest starts, and
    # marked for rewriting as the package of the simulator's plugin) cannot
    # be rewritten, which failed ChainerMN's whole suite before a test ran.
    (tmp_path / 'setup.cfg').write_text(
        '[tool:pytest]\nfilterwarnings =\n    error\n')
    # As Chainer's tests/conftest.py does, Chainer is imported before the
    # filters apply: its own import-time warnings (no cuDNN beside CuPy,
    # setuptools' pkg_resources notice) stay warnings, as in its suite.
    (tmp_path / 'conftest.py').write_text('import chainer  # noqa\n')
    (tmp_path / 'test_uses_chainermn.py').write_text(textwrap.dedent('''
        import chainermn

        def test_create():
            assert chainermn.create_communicator('naive').size == 1
        '''))
    # A run of its own, not an xdist worker: with PYTEST_XDIST_WORKER
    # inherited, pytest-benchmark (where installed) warned that xdist was
    # active, an error here (GPU machine, 2026-11-27).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('PYTEST_')}
    env['PYTHONPATH'] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, '-m', 'chainermn_lite.compat', '-m', 'pytest',
         '-p', 'no:cacheprovider', '-p', 'no:xdist', '-q',
         str(tmp_path / 'test_uses_chainermn.py')],
        capture_output=True, text=True, env=env, cwd=str(tmp_path),
        timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '1 passed' in done.stdout


def test_package_names_chainermns_modules_after_a_bare_import():
    # ChainerMN's documented opt-in, right after `import chainermn`,
    # before any communicator exists: a fresh interpreter, so that no
    # other test has imported the module already.
    program = textwrap.dedent("""
        import chainermn_lite as chainermn
        chainermn.global_except_hook.add_hook()
        chainermn.global_except_hook.remove_hook()
        print('ok')
        """)
    done = subprocess.run([sys.executable, '-c', program],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'ok'


def test_command_line_without_target_prints_usage():
    done = subprocess.run([sys.executable, '-m', 'chainermn_lite.compat'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert 'usage' in done.stderr


def test_chunked_bcast_obj_refuses_chainermns_bad_lengths():
    for bad in (-1, 0, cu.INT_MAX):
        with pytest.raises(AssertionError, match=str(bad)):
            cu.chunked_bcast_obj(1, None, bad)


def test_nccl_type_ids_and_bad_dtype():
    from chainermn_lite import nccl
    assert cu._get_nccl_type_id(np.float16) == nccl.NCCL_FLOAT16
    assert cu._get_nccl_type_id('float64') == nccl.NCCL_FLOAT64
    with pytest.raises(ValueError, match='int32'):
        cu._get_nccl_type_id(np.int32)


class _Model(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.a = L.Linear(3, 2)
            self.b = L.Linear(2, 1)


def _set_grads(model, rank):
    for i, p in enumerate(sorted(model.params(), key=lambda p: p.name)):
        p.grad = np.full(p.shape, rank + i, dtype=np.float32)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_compat_classes_average_gradients(mpi_comm):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    for cls in MEAN_CLASSES + (DummyCommunicator,):
        comm = cls(mpi_comm)
        assert isinstance(comm, MpiCommunicatorBase)
        assert (comm.rank, comm.size) == (rank, size)
        model = _Model()
        for p in model.params():
            p.data[...] = rank
        comm.bcast_data(model)
        assert all((p.data == 0).all() for p in model.params())
        _set_grads(model, rank)
        comm.multi_node_mean_grad(model)
        offset = 0.0 if cls is DummyCommunicator else \
            (size - 1) / 2.0 - rank
        for i, p in enumerate(sorted(model.params(), key=lambda p: p.name)):
            np.testing.assert_allclose(p.grad, rank + i + offset,
                                       err_msg='{} {}'.format(cls, p.name))
        comm.finalize()


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_create_communicator_returns_the_named_class(mpi_comm):
    for name, cls in (('naive', NaiveCommunicator), ('flat', FlatCommunicator),
                      ('dummy', DummyCommunicator)):
        comm = chainermn_lite.create_communicator(name, mpi_comm)
        assert type(comm) is cls
        assert comm.get_config('batched_copy')
        comm.finalize()


@pytest.mark.mpi(sizes=(1, 2, 4), nodes=2)
def test_init_ranks_matches_the_communicator(mpi_comm):
    comm = NaiveCommunicator(mpi_comm)
    assert cu.init_ranks(mpi_comm) == [comm.rank, comm.intra_rank,
                                       comm.intra_size, comm.inter_rank,
                                       comm.inter_size]
    data = np.arange(1000) if comm.rank == 0 else None
    np.testing.assert_array_equal(cu.chunked_bcast_obj(data, mpi_comm, 97),
                                  np.arange(1000))


@pytest.mark.mpi(sizes=(1, 2))
def test_base_class_without_strategy_names_itself(mpi_comm):

    class OwnCommunicator(MpiCommunicatorBase):
        pass

    comm = OwnCommunicator(mpi_comm)
    model = _Model()
    _set_grads(model, 0)
    with pytest.raises(NotImplementedError, match='OwnCommunicator'):
        comm.multi_node_mean_grad(model)


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_pure_nccl_class_takes_both_option_spellings(mpi_comm, simulated):
    gpus = None
    if not simulated:
        try:
            import cupy
        except ImportError:
            pytest.skip('pure_nccl needs CuPy with NCCL on real MPI')
        gpus = cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(mpi_comm.Get_rank() % gpus).use()
    comm = PureNcclCommunicator(mpi_comm, allreduce_grad_dtype=np.float16)
    assert comm.allreduce_grad_dtype == np.float16
    assert comm.nccl_comm is None
    comm.set_config('allreduce_grad_dtype', np.float32)
    assert comm.get_config('allreduce_grad_dtype') == np.float32
    with pytest.raises(ValueError, match='int32'):
        comm.set_config('allreduce_grad_dtype', np.int32)
    if gpus is not None and gpus < comm.size:
        # Real NCCL needs a GPU per rank.
        with pytest.raises(ValueError, match='a GPU per rank: ranks 0, '):
            comm._init_comms()
        return
    comm._init_comms()
    assert comm.nccl_comm is not None
    model = _Model()
    _set_grads(model, comm.rank)
    comm.multi_node_mean_grad(model)
    for i, p in enumerate(sorted(model.params(), key=lambda p: p.name)):
        np.testing.assert_allclose(p.grad, (comm.size - 1) / 2.0 + i)
    comm.finalize()
    assert comm.nccl_comm is None


@pytest.mark.mpi(sizes=(1, 2))
def test_checkpointer_file_names_and_stats(mpi_comm):
    comm = NaiveCommunicator(mpi_comm)
    checkpointer = chainermn_lite.create_multi_node_checkpointer(
        'run', comm, cp_interval=3, gc_interval=2)
    names = checkpointer._filenames([7, 12])
    assert names == ['run.{}.7.npz'.format(comm.rank),
                     'run.{}.12.npz'.format(comm.rank)]
    assert checkpointer._parse_filenames(names + ['other.0.1.npz']) == [
        ('run', comm.rank, 7), ('run', comm.rank, 12), None]
    assert checkpointer.get_stats() == 'no checkpoint taken yet'
    checkpointer.stats.start()
    checkpointer.stats.end()
    assert checkpointer.get_stats().startswith('1 checkpoints, mean ')


@pytest.mark.mpi(sizes=(1, 2))
def test_configs_are_attributes_and_config_scope_declares_them(mpi_comm):
    comm = NaiveCommunicator(mpi_comm)
    assert comm.batched_copy is True
    comm.set_config('batched_copy', False)
    assert comm.batched_copy is False
    assert comm.within_config_scope is False
    with comm.config_scope():
        assert comm.within_config_scope is True
        comm.own_option = 3
    assert comm.within_config_scope is False
    assert comm.get_config('own_option') == 3
    comm.plain = 4
    assert 'plain' not in comm.get_config()
    with pytest.raises(AttributeError, match='no_such_config'):
        assert comm.no_such_config is None
    with pytest.raises(ValueError, match='no_such_config'):
        comm.set_config('no_such_config')


@pytest.mark.mpi(sizes=(1, 2))
def test_debug_mode_reports_diverged_gradients(mpi_comm):
    comm = FlatCommunicator(mpi_comm)
    model = _Model()
    _set_grads(model, comm.rank)
    model.b.b.grad[...] = np.nan
    comm.multi_node_mean_grad(model)      # silent outside debug mode
    with chainer.using_config('debug', True):
        with pytest.raises(ValueError, match=r'diverged .*/b/b'):
            comm.multi_node_mean_grad(model)


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_observation_aggregator_reports_in_the_observed_form(mpi_comm):
    comm = NaiveCommunicator(mpi_comm)
    def variable(value):
        return chainer.Variable(np.asarray(value))

    for wrap in (variable, np.asarray, float):
        aggregator = chainermn_lite.extensions.ObservationAggregator(
            comm, 'x', 'mean')
        trainer = type('Trainer', (), {})()
        trainer.observation = {'x': wrap(np.float32(comm.rank))}
        trainer.updater = type('Updater', (), {'iteration': 1,
                                               'epoch_detail': 0.1})()
        aggregator.comm_trigger = lambda trainer: True
        aggregator(trainer)
        got = trainer.observation['mean']
        expected = (comm.size - 1) / 2.0
        if wrap is variable:
            assert isinstance(got, chainer.Variable)
            assert got.dtype == np.float32
            got = got.array
        np.testing.assert_allclose(got, expected)


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_observation_aggregator_gives_rank_0_every_ranks_history(mpi_comm):
    # ChainerMN's contract: the aggregator takes one list per rank of the
    # values observed since the last communication, runs on rank 0, and
    # every rank reports its result.
    comm = NaiveCommunicator(mpi_comm)
    calls = []

    def highest(histories):
        calls.append(histories)
        return max(max(history) for history in histories)
    fires = iter([False, True])
    aggregator = chainermn_lite.extensions.ObservationAggregator(
        comm, 'x', 'top', aggregator=highest)
    aggregator.comm_trigger = lambda trainer: next(fires)
    trainer = type('Trainer', (), {})()
    for step in (0, 1):
        trainer.observation = {'x': 10.0 * comm.rank + step}
        aggregator(trainer)
    assert trainer.observation == {'x': 10.0 * comm.rank + 1,
                                   'top': 10.0 * (comm.size - 1) + 1}
    if comm.rank == 0:
        assert calls == [[[10.0 * r, 10.0 * r + 1] for r in
                          range(comm.size)]]
    else:
        assert calls == []


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_every_rank_saves_the_multi_node_iterators_master_state(mpi_comm):
    comm = NaiveCommunicator(mpi_comm)
    dataset = np.arange(6, dtype=np.float32)
    it = chainermn_lite.iterators.create_multi_node_iterator(
        chainer.iterators.SerialIterator(dataset, 2), comm)
    first = it.next()
    saved = {}
    chainer.serializers.DictionarySerializer(saved).save(it)
    assert saved['current_position'] == 2 and saved['epoch'] == 0
    resumed = chainer.iterators.SerialIterator(dataset, 2)
    chainer.serializers.NpzDeserializer(saved).load(resumed)
    rest = resumed.next() + resumed.next()
    assert sorted(first + rest) == dataset.tolist()


def test_chainermns_private_scatter_index_spelling():
    from chainermn_lite.datasets import scatter
    assert list(scatter._scatter_index(10, 3, False)) == [
        (0, 0, 4), (1, 4, 7), (2, 7, 10)]
    assert [(b, e) for _, b, e in scatter._scatter_index(10, 3, True)] == \
        scatter.index_ranges(10, 3, True)


# -- python -m chainermn_lite.compat behaves like python (issue 14) ---------

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
_EXAMPLE = os.path.join(_ROOT, 'examples', 'process_state',
                        'train_chainermn_style.py')


def _env():
    return mpiexec_environment([_ROOT])


def _run(command, cwd):
    # (run_mpiexec runs an mpiexec job again if it did not start)
    run = run_mpiexec if os.path.basename(command[0]) == 'mpiexec' \
        else subprocess.run
    return run(command, cwd=str(cwd), env=_env(), capture_output=True,
               text=True, timeout=180)


def _payload(stdout):
    """Lines from 'OUT' on, whatever rank prefix a launcher put first."""
    return sorted(line[line.index('OUT'):] for line in stdout.splitlines()
                  if 'OUT' in line)


def _mpiexec():
    import shutil
    found = (shutil.which('mpiexec', path=os.path.dirname(sys.executable))
             or shutil.which('mpiexec'))
    if found is None:
        pytest.skip('no mpiexec')
    return found


_LIKE_PYTHON = '''
import pickle, sys
import sibling
class Local:
    pass
print('OUT path0', sys.path[0])
print('OUT file', __file__, __name__, sys.argv)
print('OUT sibling', sibling.__file__, sibling.hits())
print('OUT pickle', type(pickle.loads(pickle.dumps(Local()))) is Local)
'''


@pytest.mark.parametrize('as_module', [False, True])
def test_compat_runs_a_program_exactly_like_python(tmp_path, as_module):
    folder = tmp_path / 'prog'
    folder.mkdir()
    (folder / 'main.py').write_text(_LIKE_PYTHON)
    (folder / 'sibling.py').write_text(
        'count = 0\ndef hits():\n    global count\n    count += 1\n'
        '    return count\n')
    target = ['-m', 'main'] if as_module else ['prog/main.py']
    cwd = folder if as_module else tmp_path
    python = _run([sys.executable] + target + ['a', '-b'], cwd)
    compat = _run([sys.executable, '-m', 'chainermn_lite.compat'] + target +
                  ['a', '-b'], cwd)
    simulated = _run([sys.executable, '-m', 'simulator', '-n', '2', '-m',
                      'chainermn_lite.compat'] + target + ['a', '-b'], cwd)
    assert python.returncode == compat.returncode == 0, compat.stderr
    assert simulated.returncode == 0, simulated.stderr
    assert _payload(compat.stdout) == _payload(python.stdout)
    assert _payload(simulated.stdout) == sorted(_payload(python.stdout) * 2)


def test_process_state_example_prints_the_same_in_both_worlds(tmp_path):
    args = [_EXAMPLE, '--epoch', '1']
    real = _run([_mpiexec(), '-n', '3', sys.executable, '-m',
                 'chainermn_lite.compat'] + args, tmp_path)
    simulated = _run([sys.executable, '-m', 'simulator', '-n', '3', '-m',
                      'chainermn_lite.compat'] + args, tmp_path)
    assert real.returncode == 0, real.stderr
    assert simulated.returncode == 0, simulated.stderr
    assert len(_payload(real.stdout)) == 18
    assert _payload(simulated.stdout) == _payload(real.stdout)


@pytest.mark.parametrize('world', ['simulator', 'mpiexec'])
def test_sys_exit_in_one_rank_ends_the_job_with_its_status(tmp_path, world):
    import time
    args = [_EXAMPLE, '--epoch', '50', '--exit-rank', '2',
            '--exit-status', '3']
    if world == 'mpiexec':
        command = [_mpiexec(), '-n', '4', sys.executable]
    else:
        command = [sys.executable, '-m', 'simulator', '-n', '4']
    done = _run(command + ['-m', 'chainermn_lite.compat'] + args, tmp_path)
    ended = time.time()
    assert done.returncode == 3, done.stderr
    exits = [line for line in _payload(done.stdout) if 'exits at' in line]
    assert len(exits) == 1 and exits[0].startswith('OUT rank=2 ')
    # The others neither trained on nor waited out _run's limit: a slack
    # bound, as a loaded 2-core CI machine takes seconds to tear a job down.
    assert not [line for line in _payload(done.stdout)
                if 'trained steps=' in line]
    assert ended - float(exits[0].split()[-1]) < 60, done.stderr
    assert 'rank 2/4 exited with status 3' in done.stderr
