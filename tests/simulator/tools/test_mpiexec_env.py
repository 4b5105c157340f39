"""simulator.tools.mpiexec_env: the environment mpiexec starts in, and a
job that mpiexec could not start run once more (in-process only: it is
about launching mpiexec, which a fake command stands for)."""
import os
import subprocess
import sys

from simulator.tools.mpiexec_env import (MPIEXEC_ENV, did_not_start,
                                         mpiexec_environment, run_mpiexec)

_UNSTARTED = ("The PMIx server's listener thread failed to start. We "
              "cannot\ncontinue.\n")


def _done(code, stderr='', stdout=''):
    return subprocess.CompletedProcess(['mpiexec'], code, stdout, stderr)


def test_a_job_that_did_not_start_is_told_from_one_that_failed():
    assert did_not_start(_done(213, _UNSTARTED))
    assert not did_not_start(_done(0, _UNSTARTED))     # the program's words
    assert not did_not_start(_done(1, 'Traceback ...'))
    assert not did_not_start(_done(1, None, None))


def test_run_mpiexec_runs_an_unstarted_job_once_more(tmp_path):
    # A stand-in for mpiexec that fails to start the first N times.
    marker = tmp_path / 'tries'
    fake = ('import pathlib, sys\n'
            'p = pathlib.Path({!r})\n'
            'n = int(p.read_text()) if p.exists() else 0\n'
            'p.write_text(str(n + 1))\n'
            'if n < int(sys.argv[1]):\n'
            '    sys.stderr.write({!r}); sys.exit(213)\n'
            'print("ran", n)\n').format(str(marker), _UNSTARTED)
    command = [sys.executable, '-c', fake]
    done = run_mpiexec(command + ['1'], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, 'ran 1\n')
    marker.unlink()
    done = run_mpiexec(command + ['2'], capture_output=True, text=True)
    assert done.returncode == 213 and did_not_start(done)
    assert marker.read_text() == '2'        # tried twice, not more


def test_run_mpiexec_runs_a_lost_job_once_more_when_asked(tmp_path):
    # mpiexec dying of a signal itself: again with lost=True only.
    marker = tmp_path / 'tries'
    fake = ('import os, pathlib, signal\n'
            'p = pathlib.Path({!r})\n'
            'n = int(p.read_text()) if p.exists() else 0\n'
            'p.write_text(str(n + 1))\n'
            'if n == 0:\n'
            '    os.kill(os.getpid(), signal.SIGTERM)\n'
            'print("ran", n)\n').format(str(marker))
    command = [sys.executable, '-c', fake]
    done = run_mpiexec(command, capture_output=True, text=True)
    assert done.returncode < 0
    marker.unlink()
    done = run_mpiexec(command, lost=True, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, 'ran 1\n')


def test_the_environment_is_env_sh_s_without_an_enclosing_job():
    env = mpiexec_environment(['/x'], base={'PMIX_RANK': '3',
                                            'PYTHONPATH': '/y',
                                            'OMP_NUM_THREADS': '4'},
                              keep=True)
    assert 'PMIX_RANK' not in env
    assert env['PYTHONPATH'] == '/x' + os.pathsep + '/y'
    assert env['OMP_NUM_THREADS'] == '4'
    assert env['OMPI_MCA_btl'] == MPIEXEC_ENV['OMPI_MCA_btl']
