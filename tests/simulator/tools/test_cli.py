"""simulator.tools.cli: rank-prefixed output and exit codes of python -m
simulator (the launcher tests in test_launcher_scripts.py compare with
mpiexec; these cover the CLI's own rules)."""
import io
import os
import subprocess
import sys

import pytest

import simulator
from simulator.tools.launch import RankStream

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _launch(tmp_path, source, *options):
    script = tmp_path / 'prog.py'
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, '-m', 'simulator'] + list(options) + [str(script),
                                                              'a1'],
        cwd=str(tmp_path), env=env, capture_output=True, text=True,
        timeout=120)


def test_rank_stream_prefixes_whole_lines_per_rank():
    sink = io.StringIO()
    stream = RankStream(sink)

    def body(comm):
        stream.write('part-{}'.format(comm.Get_rank()))
        comm.Barrier()
        stream.write(' end\nsecond')
        comm.Barrier()
        stream.flush_rank(comm.Get_rank())
    simulator.run(body, 2)
    lines = sorted(sink.getvalue().splitlines())
    assert lines == ['[0] part-0 end', '[0] second', '[1] part-1 end',
                     '[1] second']
    stream.write('outside\n')
    assert sink.getvalue().endswith('outside\n')


def test_script_runs_as_main_with_argv_and_fresh_namespace(tmp_path):
    result = _launch(tmp_path, (
        'import sys\n'
        'from mpi4py import MPI\n'
        'counter = globals().setdefault("counter", 0) + 1\n'
        'if __name__ == "__main__":\n'
        '    c = MPI.COMM_WORLD\n'
        '    print("OUT", c.Get_rank(), c.Get_size(), sys.argv[1:], '
        'counter, c.allreduce(1))\n'), '-n', '3')
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "[{0}] OUT {0} 3 ['a1'] 1 3".format(r) for r in range(3)]


def test_dash_c_runs_the_program_given_as_python_c_would(tmp_path):
    # mpiexec -n 2 python -c CODE a1 prints the same (checked by hand; no
    # mpiexec here: these are the CLI's own rules): argv ['-c', ...],
    # sys.path[0] '', the launch variables naming -c.
    code = ('import os, sys\n'
            'from mpi4py import MPI\n'
            'c = MPI.COMM_WORLD\n'
            'print("OUT", c.rank, sys.argv, repr(sys.path[0]), __name__, '
            'os.environ["OMPI_ARGV"].split()[0], c.allreduce(1))\n')
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, '-m', 'simulator', '-n', '2', '-c', code, 'a1'],
        cwd=str(tmp_path), env=env, capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "[{0}] OUT {0} ['-c', 'a1'] '' __main__ -c 2".format(r)
        for r in range(2)]
    both = subprocess.run(
        [sys.executable, '-m', 'simulator', '-m', '-c', 'pass'], env=env,
        capture_output=True, text=True, timeout=120)
    assert both.returncode == 2 and 'not allowed with' in both.stderr


@pytest.mark.parametrize('body,code,text', [
    ('import sys\nsys.exit(0)\n', 0, ''),
    ('import sys\nfrom mpi4py import MPI\n'
     'sys.exit(3 if MPI.COMM_WORLD.Get_rank() == 1 else 0)\n', 3, ''),
    ('from mpi4py import MPI\nMPI.COMM_WORLD.Abort(5)\n', 5, 'Abort(5)'),
    ('raise SystemExit("needs 4 ranks")\n', 1, 'needs 4 ranks'),
])
def test_exit_status(tmp_path, body, code, text):
    result = _launch(tmp_path, body, '-n', '2')
    assert result.returncode == code, result.stderr
    assert text in result.stderr


def test_rendezvous_deadlock_exits_nonzero_with_report(tmp_path):
    result = _launch(tmp_path, (
        'import numpy as np\n'
        'from mpi4py import MPI\n'
        'c = MPI.COMM_WORLD\n'
        'c.Send(np.zeros(3), dest=1 - c.Get_rank())\n'
        'c.Recv(np.zeros(3), source=1 - c.Get_rank())\n'),
        '-n', '2', '--send-mode', 'rendezvous')
    assert result.returncode != 0
    assert 'DeadlockError' in result.stderr
    assert 'Send(peer=1, tag=0' in result.stderr
    assert 'prog.py:4' in result.stderr


def test_chainermn_reference_script_runs_unmodified(tmp_path):
    # ChainerMN 7.8.1 itself (not chainermn_lite) reads mpi4py internals
    # such as MPI._typedict: the stand-in must carry them.
    pytest.importorskip('chainermn')
    result = _launch(tmp_path, (
        'import numpy as np\n'
        'import chainer.links as L\n'
        'import chainermn\n'
        'comm = chainermn.create_communicator("naive")\n'
        'model = L.Linear(3, 2)\n'
        'model.W.array[...] = comm.rank\n'
        'comm.bcast_data(model)\n'
        'print("OUT", comm.rank, comm.intra_rank, comm.inter_rank,\n'
        '      comm.allreduce_obj(comm.rank), float(model.W.array.sum()))\n'
    ), '-n', '4', '--nodes', '2')
    assert result.returncode == 0, result.stderr
    lines = sorted(line for line in result.stdout.splitlines()
                   if 'OUT' in line)
    assert lines == ['[0] OUT 0 0 0 6 0.0', '[1] OUT 1 1 0 6 0.0',
                     '[2] OUT 2 0 1 6 0.0', '[3] OUT 3 1 1 6 0.0']


def test_objects_of_script_defined_classes_can_be_sent(tmp_path):
    result = _launch(tmp_path, (
        'import pickle\n'
        'from mpi4py import MPI\n'
        'class Point:\n'
        '    def __init__(self, x):\n'
        '        self.x = x\n'
        'c = MPI.COMM_WORLD\n'
        'r = c.Get_rank()\n'
        'got = c.sendrecv(Point(r), dest=1 - r, source=1 - r)\n'
        'raw = pickle.loads(pickle.dumps(Point(10 + r)))\n'
        'print("OUT", r, type(got) is Point, got.x, raw.x,\n'
        '      [p.x for p in c.allgather(Point(r))])\n'), '-n', '2')
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        '[0] OUT 0 True 1 10 [0, 1]', '[1] OUT 1 True 0 11 [0, 1]']


def test_streams_captured_before_the_run_are_rank_prefixed(tmp_path):
    # Chainer's PrintReport / ProgressBar take out=sys.stdout when
    # imported; a module global may hold it too.
    (tmp_path / 'captures.py').write_text(
        'import sys\n'
        'HELD = sys.stdout\n'
        'def report(text, out=sys.stdout):\n'
        '    out.write(text + "\\n")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    code = ('import sys, captures\n'
            'from simulator.tools.cli import main\n'
            'sys.exit(main(["-n", "2", "prog.py"]))\n')
    (tmp_path / 'prog.py').write_text(
        'import captures\n'
        'captures.report("by default")\n'
        'captures.HELD.write("held\\n")\n')
    result = subprocess.run([sys.executable, '-c', code], cwd=str(tmp_path),
                            env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        '[0] by default', '[0] held', '[1] by default', '[1] held']


@pytest.mark.parametrize('private', [True, False])
def test_private_module_option_runs_a_library_once_per_rank(tmp_path,
                                                            private):
    options = ['-n', '2'] + (['--private-module', 'colorsys']
                             if private else [])
    result = _launch(tmp_path, (
        'import colorsys\n'
        'from mpi4py import MPI\n'
        'c = MPI.COMM_WORLD\n'
        'c.Barrier()\n'
        'colorsys.mark = c.Get_rank()\n'
        'c.Barrier()\n'
        'print("mark", colorsys.mark == c.Get_rank())\n'), *options)
    assert result.returncode == 0, result.stderr
    marks = sorted(result.stdout.splitlines())
    if private:
        assert marks == ['[0] mark True', '[1] mark True']
    else:   # one shared module: the last writer wins for both
        assert marks.count('[0] mark True') + marks.count(
            '[1] mark True') == 1
