"""What a spawned command runs (simulator.engine.program): the program a
Python command line names, and the commands the simulator cannot run as
ranks. In-process only: this is the simulator's own loader, which has no
counterpart under mpiexec (there the operating system runs the command).
"""
import os
import sys

import pytest

from simulator.engine.program import (ForeignCommand, check_command,
                                      python_program, spawned_program)


def test_python_command_lines_name_a_script_module_or_code(tmp_path):
    script = tmp_path / 'job.py'
    script.write_text('x = 1\n')
    program = python_program(['-u', '-X', 'dev', '-Wignore', str(script),
                              'a', '-c'])
    assert program.argv == [str(script), 'a', '-c']
    assert program.path == str(tmp_path)
    assert program.base['__file__'] == str(script)
    program = python_program(['-B', '-c', 'y = 2', 'b'])
    assert program.argv == ['-c', 'b'] and program.path == ''
    namespace = {}
    exec(program.code, namespace)
    assert namespace['y'] == 2
    program = python_program(['-m', 'json.tool', 'c'])
    assert program.argv[0].endswith(os.path.join('json', 'tool.py'))
    assert program.argv[1:] == ['c']


def test_interpreter_options_that_would_change_sys_flags_are_named(
        tmp_path):
    script = tmp_path / 'job.py'
    script.write_text('x = 1\n')
    program = python_program(['-u', '-OO', '-X', 'dev', '-W', 'error',
                              '-Xutf8', str(script)])
    assert program.options == ['-u', '-OO', '-X', 'dev', '-W', 'error',
                               '-Xutf8']
    said = program.unapplied_options()
    for word, name in (('-OO', 'optimize'), ('-Xdev', 'dev_mode'),
                       ('-Xutf8', 'utf8_mode')):
        if getattr(sys.flags, name) < (2 if word == '-OO' else 1):
            assert any(s.startswith(word + ' (sys.flags.' + name)
                       for s in said), said
    assert not python_program(['-u', str(script)]).unapplied_options()


@pytest.mark.parametrize('args, text', [
    ([], 'interactive'), (['-'], 'standard input'),
    (['-c'], 'argument expected'), (['-m', 'no_such_mod_xyz'], 'no module'),
])
def test_what_cannot_run_as_a_rank_says_why(args, text):
    with pytest.raises(ValueError, match=text):
        python_program(args)


def test_commands_python_scripts_and_foreign_executables(tmp_path):
    assert check_command(sys.executable) == []
    script = tmp_path / 'tool'
    script.write_text('#!{} -u\nimport sys\n'.format(sys.executable))
    script.chmod(0o755)
    assert check_command(str(script)) == ['-u', str(script)]
    script.write_text('#!/usr/bin/env python3\nimport sys\n')
    assert check_command(str(script)) == [str(script)]
    program = spawned_program(str(script), ['z'])
    assert program.argv == [str(script), 'z']
    with pytest.raises(ForeignCommand, match="'/bin/sh' is not a Python"):
        check_command('/bin/sh')
    plain = tmp_path / 'data.py'
    plain.write_text('x = 1\n')     # not executable: mpiexec cannot run it
    with pytest.raises(FileNotFoundError, match='data.py'):
        check_command(str(plain))
    with pytest.raises(FileNotFoundError, match='no_such_command_xyz'):
        check_command('no_such_command_xyz')
