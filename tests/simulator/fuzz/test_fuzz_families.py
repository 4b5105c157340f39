"""The fuzzer's operation families: each generates programs that run on
the simulator, and a small seed of each agrees with Open MPI."""
import shutil

import pytest

from simulator import fuzz
from simulator.fuzz.gen import FAMILIES, parse_families

NEW = ('icoll', 'loc', 'persist', 'groups', 'rma', 'dtypes', 'topo', 'io',
       'inter', 'args')


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


def test_rma_programs_use_every_synchronisation_and_flavour():
    seen = set()
    for seed in range(12):
        source = fuzz.generate(seed, 3, ops=10, families=['rma'])
        for line in source.splitlines():
            if line.startswith('# --- op') and ': rma ' in line:
                words = line.split()
                seen.update((words[5], words[7]))
    assert {'fence', 'pscw', 'lock', 'lock_all', 'Create', 'Allocate',
            'Allocate_shared', 'Create_dynamic'} <= seen


def test_rma_avoids_what_open_mpi_gets_wrong():
    # Open MPI 5.0's remote atomics: 64-bit BAND/BOR/BXOR leave the
    # target unchanged or zero it; MAX/MIN compare 32- and 64-bit
    # unsigned integers as signed.
    from simulator.fuzz.rma import _ops_for
    for shared in (False, True):
        for dt in ('int64', 'uint64'):
            assert not {'BAND', 'BOR', 'BXOR'} & set(_ops_for(dt, shared))
        for dt in ('uint32', 'uint64'):
            assert not {'MAX', 'MIN'} & set(_ops_for(dt, shared))
        assert 'BXOR' in _ops_for('int32', shared)
        assert 'MAX' in _ops_for('uint16', shared)


def test_a_graph_index_means_the_nodes_the_title_says():
    # mpi4py reads an index that starts with 0 and ends with the edge
    # count as n + 1 CSR offsets: a first node without edges must be
    # written so, or [0, 3, 5] loses a node.
    import re
    checked = 0
    for seed in range(30):
        source = fuzz.generate(seed, 3, ops=8, families=['topo'])
        for m, index, edges in re.findall(
                r'graph m=(\d+) .*\n(?:.*\n){3}.*Create_graph\((\[.*?\]), '
                r'(\[.*?\])', source):
            index, edges = eval(index), eval(edges)
            csr = index[0] == 0 and index[-1] == len(edges)
            assert len(index) - csr == int(m)
            checked += 1
    assert checked > 10


def test_io_files_live_under_the_programs_logdir():
    # The simulated and the mpiexec run each get a LOGDIR of their own:
    # every file a program opens must be under it, or the runs collide.
    source = fuzz.generate(3, 2, ops=12, families=['io'])
    opens = [line for line in source.splitlines()
             if 'MPI.File.Open(' in line]
    assert opens
    paths = [line for line in source.splitlines()
             if line.strip().startswith('path = ') and '.dat' in line]
    assert paths and all('fuzz_io_dir()' in line for line in paths)


def test_io_writes_of_one_rank_never_overlap():
    # Open MPI 5.0 lands one rank's collective writes to the same bytes
    # in either order: each rank's writes must cover etypes of their own.
    import random
    from simulator.fuzz.io import _pick_writes
    rng = random.Random(5)
    for _ in range(200):
        writes = _pick_writes(rng, 3)
        for rank in range(3):
            spans = sorted((offsets[rank], counts[rank])
                           for _, counts, offsets in writes)
            for (o1, n1), (o2, _) in zip(spans, spans[1:]):
                assert o1 + n1 <= o2


def test_io_reads_that_ompio_mishandles_past_eof_are_kept_inside():
    # Non-blocking, split and collective reads past the end of a file
    # hang or miscount in Open MPI 5.0.11: the program grows the file
    # first.
    from simulator.fuzz.io import _never_ends_past_eof
    assert not _never_ends_past_eof('Read_at')
    assert not _never_ends_past_eof('Read')
    for name in ('Iread_at', 'Read_all', 'Read_at_all_begin', 'Iread_all'):
        assert _never_ends_past_eof(name)


def test_bad_argument_programs_record_error_classes_not_texts():
    source = fuzz.generate(2, 2, ops=10, families=['args'])
    assert 'fuzz_exception(exc)' in source
    lines = fuzz.run_in_process(source, 2)
    recorded = [x for rank in lines.values() for x in rank
                if '\targs' in x]
    assert recorded
    assert not any('MPI_ERR' in x for x in recorded)
