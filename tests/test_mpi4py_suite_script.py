"""scripts/mpi4py-suite reads each rank's ``unittest -v`` output right:
a test's outcome counts even when something is printed between its name
and its outcome (a warning, a library's message), as a test that writes
to stderr does under mpiexec too. In-process: no world runs."""
import os

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'scripts', 'mpi4py-suite')


@pytest.fixture(scope='module')
def parse():
    # The script is a shell wrapper around a Python program (a heredoc).
    text = open(SCRIPT).read()
    source = text.split("<<'PY'\n", 1)[1].rsplit('\nPY', 1)[0]
    namespace = {'__name__': 'mpi4py_suite'}
    exec(compile(source, SCRIPT, 'exec'), namespace)
    return namespace['parse']


def test_outcomes_on_the_tests_line(parse):
    assert parse(
        'testA (test_m.Case.testA) ... ok\n'
        'testB (test_m.Case.testB) ... skipped \'no MPI-IO\'\n'
        'testC (test_m.Case.testC) ... FAIL\n'
        'testD (test_m.Case.testD)\nWhat the docstring says ... ERROR\n'
        'testE (test_m.Case.testE) ... expected failure\n') == {
            'test_m.Case.testA': 'ok', 'test_m.Case.testB': 'skipped',
            'test_m.Case.testC': 'FAIL', 'test_m.Case.testD': 'ERROR',
            'test_m.Case.testE': 'expected failure'}


def test_a_warning_printed_before_the_outcome_leaves_both_tests(parse):
    # What mpi4py's test_attributes printed on the simulator: the outcome
    # on a line of its own, after the warning's two lines.
    assert parse(
        'testAttrDeleteException (test_attributes.TestCommAttrSelf.'
        'testAttrDeleteException) ... /x/mpitestutil.py:150: '
        'SharedStateWarning: rank 0 called sys.stderr = <StringIO>\n'
        '  sys.stderr = stream\n'
        'ok\n'
        'testAttrNoCopy (test_attributes.TestCommAttrSelf.testAttrNoCopy)'
        ' ... ok\n'
        'testAttrX (test_attributes.TestCommAttrSelf.testAttrX) ... '
        'Traceback (most recent call last):\n'
        'ValueError\n'
        'FAIL\n'
        '\n'
        '======\n'
        'FAIL: testAttrX (test_attributes.TestCommAttrSelf.testAttrX)\n'
        ) == {
            'test_attributes.TestCommAttrSelf.testAttrDeleteException': 'ok',
            'test_attributes.TestCommAttrSelf.testAttrNoCopy': 'ok',
            'test_attributes.TestCommAttrSelf.testAttrX': 'FAIL'}


def test_a_test_cut_off_has_no_outcome(parse):
    # A rank that died inside a test: its line has no outcome, the test
    # counts as missing (not as the next test's outcome).
    assert parse(
        'testA (test_m.Case.testA) ... partial output\n'
        'testB (test_m.Case.testB) ... ok\n') == {'test_m.Case.testB': 'ok'}


def test_open_mpis_messages_inside_a_tests_line_are_dropped(parse):
    assert parse(
        'testWin (test_m.Case.testWin) ... [vm:123] osc_ucx.c:1 Error: '
        'no ucx\n \nok\n') == {'test_m.Case.testWin': 'ok'}
