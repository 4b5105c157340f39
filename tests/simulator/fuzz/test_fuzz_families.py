"""The fuzzer's operation families: each generates programs that run on
the simulator, and a small seed of each agrees with Open MPI."""
import shutil

import pytest

from simulator import fuzz
from simulator.fuzz.gen import FAMILIES, parse_families

NEW = ('icoll', 'loc', 'persist', 'groups')


@pytest.mark.parametrize('family', NEW)
@pytest.mark.parametrize('size', (1, 2, 4))
def test_family_programs_run_on_the_simulator(family, size):
    source = fuzz.generate(21, size, ops=12, families=[family])
    assert '# --- op' in source
    first = fuzz.run_in_process(source, size)
    assert first == fuzz.run_in_process(source, size)
    assert all(len(lines) > 1 for lines in first.values())


def test_families_are_checked():
    assert parse_families('icoll, comm') == ['icoll', 'comm']
    with pytest.raises(ValueError, match='unknown fuzz families'):
        parse_families('icol')
    assert set(NEW) <= set(FAMILIES)


def test_a_family_draws_only_its_operations():
    source = fuzz.generate(4, 3, ops=15, families=['icoll'])
    titles = [line for line in source.splitlines()
              if line.startswith('# --- op')]
    kinds = {t.split(': ', 1)[1].split()[0] for t in titles}
    assert kinds <= {'icollectives', 'Split', 'Dup', 'Clone', 'Split_type',
                     'Free', 'info', 'datatypes'}
    assert 'icollectives' in kinds


@pytest.mark.skipif(shutil.which('mpiexec') is None,
                    reason='comparing with real MPI needs mpiexec on PATH '
                           '(. scripts/env.sh puts Open MPI\'s there)')
@pytest.mark.parametrize('family', NEW)
def test_a_small_seed_agrees_with_mpiexec(tmp_path, family):
    path, diff = fuzz.fuzz_one(7, 3, str(tmp_path), ops=10, timeout=90,
                               families=[family])
    assert diff == [], '\n'.join(diff)


def test_no_alltoallw_on_one_rank():
    # Open MPI 5 scales Alltoallw's byte displacements by the type size
    # on a one-rank communicator: the generator must not go there.
    for seed in range(6):
        for size in (1, 2, 3):
            source = fuzz.generate(seed, size, ops=30,
                                   families=['coll', 'icoll'])
            for line in source.splitlines():
                if line.startswith('# --- op') and 'lltoallw' in line:
                    members = line.rsplit('[', 1)[1].rstrip(']')
                    assert ',' in members, line


def test_in_place_alltoallv_counts_are_symmetric_with_own_blocks():
    from simulator.fuzz.coll import in_place_matrix
    matrix = [[0, 3, 0], [1, 0, 0], [2, 5, 0]]
    in_place_matrix(matrix)
    assert all(matrix[i][j] == matrix[j][i] for i in range(3)
               for j in range(3))
    assert all(matrix[i][i] >= 1 for i in range(3))
