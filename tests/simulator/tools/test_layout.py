"""simulator.tools.layout: in virtual time ``python -m simulator`` runs the
program with address-space randomisation off (a subprocess: it
re-executes itself), unless ``--no-fixed-layout``; nothing changes
without virtual time."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

from simulator.tools import layout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux'),
    reason='address-space randomisation is set on Linux')

# What a rank can see of the process it runs in, one JSON line.
_PROBE = (
    'import ctypes, json, os, sys\n'
    'persona = ctypes.CDLL(None).personality(0xffffffff)\n'
    'print("PROBE", json.dumps({\n'
    '    "fixed": bool(persona & 0x0040000), "argv": sys.argv,\n'
    '    "orig_argv": sys.orig_argv, "environ": dict(os.environ),\n'
    '    "cwd": os.getcwd(), "path0": sys.path[0],\n'
    '    "flags": list(sys.flags)}))\n')


def _randomised():
    """Whether this test's own process has a randomised layout (else
    no run can show the difference)."""
    if ctypes.CDLL(None).personality(0xffffffff) & 0x0040000:
        return False
    try:
        with open('/proc/sys/kernel/randomize_va_space') as f:
            return f.read().strip() != '0'
    except OSError:
        return True


def _run(tmp_path, command, *options, env=None):
    """The probes' facts (one dict per rank) and the run's stderr."""
    (tmp_path / 'probe.py').write_text(_PROBE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]),
               **(env or {}))
    done = subprocess.run(
        command + ['-n', '2'] + list(options), cwd=str(tmp_path), env=env,
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    facts = [json.loads(line.split('PROBE ', 1)[1])
             for line in sorted(done.stdout.splitlines()) if 'PROBE ' in line]
    assert len(facts) == 2, done.stdout
    return facts, done.stderr


_SIMULATOR = [sys.executable, '-m', 'simulator']


def test_virtual_time_runs_the_program_with_the_layout_fixed(tmp_path):
    # the default in virtual time, by any option that implies it
    for options in (['--virtual-time'], ['--fixed-layout'],
                    ['--compute-scale', '0.5'], ['--virtual-time',
                                                 '--fixed-layout']):
        facts, _ = _run(tmp_path, _SIMULATOR, *options, 'probe.py')
        assert [f['fixed'] for f in facts] == [True, True], options
    if _randomised():
        for options in (['--virtual-time', '--no-fixed-layout'], [],
                        ['--no-fixed-layout']):
            facts, _ = _run(tmp_path, _SIMULATOR, *options, 'probe.py')
            assert [f['fixed'] for f in facts] == [False, False], options


def test_the_re_execution_keeps_argv_environment_and_flags(tmp_path):
    # A rank sees the same process whether the simulator executed itself
    # again or not: its argv (the script's path as given, a module's
    # file), its environment (the re-execution's marker gone), the
    # interpreter's command line and flags, its directory;
    # for a script and for a module (-m), whose words may look like the
    # simulator's options.
    command = [sys.executable, '-X', 'utf8', '-m', 'simulator']
    extra = {'LAYOUT_TEST_VALUE': 'a b\tc'}
    probe = str(tmp_path / 'probe.py')
    for target, argv in (
            (['probe.py', 'x', '--virtual-time', '-n'],
             ['probe.py', 'x', '--virtual-time', '-n']),
            (['-m', 'probe', 'y'], [probe, 'y'])):
        fixed, _ = _run(tmp_path, command, '--virtual-time', *target,
                        env=extra)
        free, _ = _run(tmp_path, command, '--virtual-time',
                       '--no-fixed-layout', *target, env=extra)
        assert [f['fixed'] for f in fixed] == [True, True]
        for mine, other in zip(fixed, free):
            assert mine['argv'] == other['argv'] == argv
            # (but for the launch's name, which holds the launcher's pid
            # under mpiexec too)
            for facts in (mine, other):
                facts['environ'].pop('PMIX_NAMESPACE')
            assert mine['environ'] == other['environ']
            assert mine['environ']['LAYOUT_TEST_VALUE'] == 'a b\tc'
            assert layout._REEXECUTED not in mine['environ']
            # the program's own command line, as python would give it
            assert mine['orig_argv'] == other['orig_argv'] == [
                sys.executable, '-X', 'utf8'] + target
            for fact in ('cwd', 'path0', 'flags'):
                assert mine[fact] == other[fact], fact


def test_main_called_with_argv_does_not_re_execute(tmp_path):
    # A program that calls main(argv) has its own command line: virtual
    # time runs as it is, and asking for the fixed layout is an error.
    wrapper = ('import sys\n'
               'from simulator.tools.cli import main\n'
               'sys.exit(main(sys.argv[1:]))\n')
    (tmp_path / 'wrapper.py').write_text(wrapper)
    command = [sys.executable, 'wrapper.py']
    if _randomised():
        facts, _ = _run(tmp_path, command, '--virtual-time', 'probe.py')
        assert [f['fixed'] for f in facts] == [False, False]
    (tmp_path / 'probe.py').write_text(_PROBE)
    done = subprocess.run(
        command + ['-n', '2', '--fixed-layout', 'probe.py'],
        cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert '--fixed-layout works on the command line' in done.stderr


def test_a_system_that_cannot_fix_the_layout_runs_randomised(tmp_path):
    # The interpreter cannot be executed again (as in a sandbox): the run
    # goes on; only an explicit --fixed-layout is told why.
    wrapper = ('import os, sys\n'
               'def refuse(*args):\n'
               '    raise PermissionError("no exec here")\n'
               'os.execv = refuse\n'
               'from simulator.tools.cli import main\n'
               'sys.exit(main())\n')
    command = [sys.executable, '-c', wrapper]
    facts, err = _run(tmp_path, command, '--fixed-layout', 'probe.py')
    assert 'cannot turn address-space randomisation off' in err
    assert all(layout._REEXECUTED not in f['environ'] for f in facts)
    if _randomised():
        # and what it starts is randomised as it is itself
        assert [f['fixed'] for f in facts] == [False, False]
    _, err = _run(tmp_path, command, '--virtual-time', 'probe.py')
    assert 'randomisation' not in err


def test_fixed_layout_reports_what_it_can_do(monkeypatch):
    # Already fixed: no re-execution, True; the re-execution's marker set
    # (the kernel kept randomising after it): False, not a loop.
    calls = []
    monkeypatch.setattr(layout.os, 'execv',
                        lambda *args: calls.append(args))
    persona = ctypes.CDLL(None).personality(0xffffffff)
    if persona & 0x0040000 or not _randomised():
        assert layout.fixed_layout() is True
    else:
        monkeypatch.setenv(layout._REEXECUTED, '1')
        assert layout.fixed_layout() is False
        assert layout._REEXECUTED not in os.environ
    assert calls == []


def test_the_process_re_executes_before_importing_the_engine(tmp_path):
    # The first process only reads the options: the engine, the facade
    # and NumPy (~0.5 s) are imported once, after the re-execution.
    if not _randomised():
        pytest.skip('the layout is fixed already: nothing re-executes')
    wrapper = ('import os, sys\n'
               'real = os.execv\n'
               'def execv(path, args):\n'
               '    print("BEFORE", [m for m in sys.modules if m.startswith(\n'
               '        ("simulator.engine", "simulator.mpi", "numpy"))],\n'
               '        flush=True)\n'
               '    real(path, args)\n'
               'os.execv = execv\n'
               'from simulator.tools.cli import main\n'
               'sys.exit(main())\n')
    (tmp_path / 'probe.py').write_text(_PROBE)
    done = subprocess.run(
        [sys.executable, '-c', wrapper, '-n', '1', '--machine',
         'shared_memory', 'probe.py'], cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines()
            if line.startswith('BEFORE')] == ['BEFORE []']
    assert '[0] PROBE {"fixed": true' in done.stdout
