"""simulator.tools.explore: ``python -m simulator --explore`` reports the
first failing or diverging schedule with a command that replays it, byte
for byte; ``--explore all`` proves small correct programs clean."""
import os
import shlex
import subprocess
import sys

from simulator.tools.explore import _next_prefix, normalize

pytest_plugins = ['pytester']
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

# Rank 0 assumes rank 1 answers first; otherwise it waits for a message
# rank 1 never sends.
WILDCARD_BUG = '''
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if rank == 0:
    first = comm.recv(source=MPI.ANY_SOURCE, tag=0)
    print('first from', first)
    comm.recv(source=2 if first == 1 else 1, tag=0)
    if first == 2:
        comm.recv(source=1, tag=1)
else:
    comm.send(rank, dest=0, tag=0)
'''

# Correct, but prints a result that depends on the arrival order.
FOLD = '''
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    acc = 0.0
    for _ in range(2):
        acc = acc / 2 + comm.recv(source=MPI.ANY_SOURCE)
    print('result', acc)
else:
    comm.send(float(comm.Get_rank()), dest=0)
'''

# Correct and deterministic: a server answering whoever asks.
SERVER = '''
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if rank == 0:
    status = MPI.Status()
    for _ in range(comm.Get_size() - 1):
        n = comm.recv(source=MPI.ANY_SOURCE, status=status)
        comm.send(n + 1, dest=status.Get_source())
else:
    print('answer', comm.sendrecv(rank, dest=0, source=0))
'''


def _simulator(tmp_path, argv):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable] + argv, cwd=str(tmp_path),
                           env=env, capture_output=True, text=True,
                           timeout=120)


def _explore(tmp_path, source, *options):
    (tmp_path / 'prog.py').write_text(source)
    return _simulator(tmp_path, ['-m', 'simulator', '-n', '3'] +
                      list(options) + ['prog.py', 'a1'])


def _replay_commands(stdout):
    return [shlex.split(line.strip().partition('replay: ')[2] or
                        line.strip())
            for line in stdout.splitlines()
            if line.strip().startswith(('replay: ', 'python -m simulator'))]


def test_failing_schedule_is_reported_and_replays_byte_for_byte(tmp_path):
    result = _explore(tmp_path, WILDCARD_BUG, '--explore', '10')
    assert result.returncode != 0
    assert 'DeadlockError' in result.stdout
    assert "recv(peer=1, tag=1" in result.stdout
    (command,) = _replay_commands(result.stdout)
    assert command[:6] == ['python', '-m', 'simulator', '-n', '3',
                           '--schedule']
    assert command[7:] == ['prog.py', 'a1']
    runs = [_simulator(tmp_path, command[1:]) for _ in range(3)]
    assert all(r.returncode == result.returncode for r in runs)
    assert 'first from 2' in runs[0].stdout
    assert len({(r.stdout, r.stderr) for r in runs}) == 1


def test_diverging_output_names_two_schedules_and_their_lines(tmp_path):
    result = _explore(tmp_path, FOLD, '--explore', '10')
    assert result.returncode == 3, result.stdout + result.stderr
    assert 'nondeterministic' in result.stdout
    commands = _replay_commands(result.stdout)
    assert len(commands) == 2
    assert {'[0] result 2.5', '[0] result 2.0'} <= {
        line.split('line: ')[1] for line in result.stdout.splitlines()
        if 'first differing line' in line}


def test_systematic_search_proves_a_correct_program_clean(tmp_path):
    result = _explore(tmp_path, SERVER, '--explore', 'all')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'explored all 2 schedules (search complete)' in result.stdout
    cut = _explore(tmp_path, SERVER, '--explore', 'all', '--bound', '1')
    assert cut.returncode == 0
    assert 'bound reached, search incomplete' in cut.stdout


def test_depth_first_search_visits_each_branch_once():
    assert _next_prefix([(0, 2), (0, 3)]) == [0, 1]
    assert _next_prefix([(0, 2), (2, 3)]) == [1]
    assert _next_prefix([(1, 2), (2, 3)]) is None
    assert _next_prefix([]) is None


def test_wall_clock_columns_and_user_patterns_are_masked():
    lines = ['[0] epoch  main/loss  elapsed_time',
             '[0] 1      0.25       0.123',
             '[1] took 5 ms']
    other = ['[0] epoch  main/loss  elapsed_time',
             '[0] 1      0.25       0.987',
             '[1] took 7 ms']
    assert normalize(lines, [r'\d+ ms']) == normalize(other, [r'\d+ ms'])
    changed = ['[0] epoch  main/loss  elapsed_time',
               '[0] 1      0.26       0.123', '[1] took 5 ms']
    assert normalize(lines, [r'\d+ ms']) != normalize(changed,
                                                      [r'\d+ ms'])


def test_pytest_marker_explores_and_names_the_replay(pytester):
    pytester.makepyfile("""
import pytest

@pytest.mark.mpi(sizes=(3,), explore=10)
def test_first_is_one(mpi_comm, MPI):
    if mpi_comm.Get_rank() == 0:
        first = mpi_comm.recv(source=MPI.ANY_SOURCE)
        mpi_comm.recv(source=3 - first)
        assert first == 1
    else:
        mpi_comm.send(mpi_comm.Get_rank(), dest=0)
""")
    result = pytester.runpytest('-p', 'no:xdist')
    result.assert_outcomes(failed=1)
    line = next(x for x in result.stdout.lines if '--sim-schedule' in x)
    spec = line.split('--sim-schedule ')[1].strip()
    result.stdout.fnmatch_lines(['*assert 2 == 1*'])
    for _ in range(3):
        replay = pytester.runpytest('-p', 'no:xdist', '--sim-schedule', spec)
        replay.assert_outcomes(failed=1)
        replay.stdout.fnmatch_lines(['*assert 2 == 1*'])
