"""The differential fuzzer (simulator.fuzz): its programs run on the
simulator, deterministically, and agree with real MPI."""
import shutil

import pytest

from simulator import fuzz

SEEDS = (3, 11)


@pytest.mark.parametrize('seed', SEEDS)
@pytest.mark.parametrize('size', (1, 3, 4))
def test_programs_run_on_the_simulator_deterministically(seed, size):
    source = fuzz.generate(seed, size, ops=25)
    assert source == fuzz.generate(seed, size, ops=25)
    first = fuzz.run_in_process(source, size)
    second = fuzz.run_in_process(source, size)
    assert first == second
    assert sorted(first) == list(range(size))
    for lines in first.values():
        # rank/size line plus at least one observation per program
        assert lines[0].startswith('0\tworld\t')
        assert len(lines) > 1


def test_compare_names_the_first_differing_operation():
    source = '# --- op 2: Bcast int8 x1 root=0 on c0 [0]\n'
    a = fuzz.Run('simulator', 0, '', {0: ['0\tworld\tx', '2\tbuf\tA']})
    b = fuzz.Run('mpiexec', 0, '', {0: ['0\tworld\tx', '2\tbuf\tB']})
    diff = fuzz.compare(source, a, b)
    assert 'op 2: Bcast int8 x1 root=0' in diff[0]
    assert diff[1].split() == ['simulator:', '2', '|', 'buf', '|', 'A']
    assert fuzz.compare(source, a, a) == []


@pytest.mark.skipif(shutil.which('mpiexec') is None,
                    reason='comparing with real MPI needs mpiexec on PATH '
                           '(. scripts/env.sh puts Open MPI\'s there)')
def test_one_program_agrees_with_mpiexec(tmp_path):
    path, diff = fuzz.fuzz_one(5, 3, str(tmp_path), ops=20, timeout=60)
    assert diff == [], '\n'.join(diff)
