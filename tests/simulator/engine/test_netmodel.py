"""simulator.engine.netmodel: the cost arithmetic, worked by hand."""
import json

import pytest

from simulator.engine.netmodel import Link, Machine, Rate, load_machine

UNSAFE = 'checks the simulator\'s network model (no MPI program)'
pytestmark = pytest.mark.simulator_only(UNSAFE)

A, B = 1e-6, 1e9            # 1 us latency, 1 GB/s


def _machine(**collectives):
    return Machine('hand', Link('intra', A, B), Link('inter', 10 * A, B / 10),
                   collectives=collectives)


def test_one_message_is_latency_plus_size_over_bandwidth():
    assert Link('x', A, B).time(4000) == pytest.approx(1e-6 + 4e-6)


def test_ring_allreduce_of_n_bytes_over_p_ranks():
    # 2 (p - 1) steps of latency, each rank sends and receives
    # 2 (p - 1) / p of the data: p = 4, n = 1 MiB.
    m = _machine(allreduce='ring')
    seconds, algorithm = m.collective_time('Allreduce', 4, 1 << 20,
                                           m.links['intra'])
    assert algorithm == 'ring'
    assert seconds == pytest.approx(6 * 1e-6 + 1.5 * (1 << 20) / 1e9)


def test_recursive_doubling_allreduce_for_small_messages():
    m = _machine()      # auto: small messages take recursive doubling
    seconds, algorithm = m.collective_time('allreduce', 8, 8,
                                           m.links['intra'])
    assert algorithm == 'recursive_doubling'
    assert seconds == pytest.approx(3 * (1e-6 + 8e-9))


def test_large_allreduce_switches_to_ring_and_pays_the_reduction():
    m = Machine('hand', Link('intra', A, B), reduce_bandwidth=2e9)
    seconds, algorithm = m.collective_time('Allreduce', 2, 4 << 20,
                                           m.links['intra'])
    n = 4 << 20
    assert algorithm == 'ring'
    assert seconds == pytest.approx(2 * A + n / B + 0.5 * n / 2e9)


def test_binomial_bcast_and_dissemination_barrier():
    m = _machine()
    link = m.links['inter']
    assert m.collective_time('Bcast', 5, 100, link) == (
        pytest.approx(3 * (1e-5 + 100 / 1e8)), 'binomial')
    assert m.collective_time('Barrier', 16, 0, link) == (
        pytest.approx(4 * 1e-5), 'dissemination')


def test_one_rank_costs_nothing():
    m = _machine()
    assert m.collective_time('Allreduce', 1, 1 << 20,
                             m.links['intra'])[0] == 0.0


def test_links_by_node_and_nodes_per_job():
    m = Machine('hand', Link('intra', A, B), Link('inter', 2 * A, B),
                ranks_per_node=8)
    assert m.link(0, 0).name == 'intra' and m.link(0, 1).name == 'inter'
    assert [m.nodes_for(n) for n in (1, 8, 9, 32)] == [1, 1, 2, 4]


def test_shipped_descriptions_load():
    gpu = load_machine('gpu_cluster')
    assert gpu.ranks_per_node == 8
    assert gpu.links['intra'].bandwidth > gpu.links['inter'].bandwidth
    assert load_machine().links['intra'].latency > 0


def test_json_description_and_bad_values(tmp_path):
    path = tmp_path / 'm.json'
    path.write_text(json.dumps({'name': 'j', 'links': {'intra': {
        'latency': 2e-6, 'bandwidth': 5e9}}}))
    m = load_machine(str(path))
    assert m.links['inter'] is m.links['intra']
    path.write_text(json.dumps({'links': {'intra': {
        'latency': 2e-6, 'bandwidth': 0}}}))
    with pytest.raises(ValueError, match='bandwidth must be a positive'):
        load_machine(str(path))
    path.write_text(json.dumps({'linkz': {}}))
    with pytest.raises(ValueError, match=r"unknown keys \['linkz'\]"):
        load_machine(str(path))
    with pytest.raises(ValueError, match="no machine description 'nope'"):
        load_machine('nope')
    with pytest.raises(ValueError, match="allreduce cannot use algorithm "
                       "'tree'"):
        _machine(allreduce='tree')


def test_nccl_names_map_to_their_families():
    m = _machine(allreduce='ring')
    link = m.links['intra']
    assert m.collective_time('ncclAllReduce', 4, 1 << 20, link) == \
        m.collective_time('Allreduce', 4, 1 << 20, link)
    assert m.collective_time('ncclReduceScatter', 4, 1 << 20, link)[1] == \
        'ring'
    with pytest.raises(ValueError, match="no cost model for collective "
                       "'Frobnicate'"):
        m.collective_time('Frobnicate', 2, 0, link)


def _openmpi(**kw):
    return Machine('ompi', Link('intra', A, B), selection='openmpi', **kw)


def test_openmpi_selection_follows_its_fixed_decision_rules():
    # Open MPI 5.0's coll/tuned, commutative Allreduce, 2 and 6 ranks
    m = _openmpi()
    picks = [m.algorithm('allreduce', n, 2)
             for n in (4, 8, 4096, 8192, 16384, 65536, 4 << 20)]
    assert picks == ['ring', 'recursive_doubling', 'ring',
                     'recursive_doubling', 'ring', 'segmented_ring',
                     'rabenseifner']
    assert m.algorithm('allreduce', 8, 6) == 'ring'
    assert m.algorithm('allreduce', 16, 6) == 'recursive_doubling'
    assert m.algorithm('allreduce', 8192, 6) == 'rabenseifner'
    assert m.algorithm('allreduce', 1000, 200) == 'nonoverlapping'
    # families without rules keep the size threshold
    assert m.algorithm('bcast', 100, 2) == 'binomial'
    with pytest.raises(ValueError, match="unknown selection 'mvapich'"):
        Machine('x', Link('intra', A, B), selection='mvapich')


def test_rabenseifner_allreduce_by_hand():
    # 4 ranks, 1 MiB: halving then doubling, 2 lg 4 latencies, each rank
    # moves 2 * 3/4 of the data and reduces 3/4 of it.
    n, g = 1 << 20, 1 / 2e9
    m = _openmpi(reduce_bandwidth=2e9)
    seconds, algorithm = m.collective_time('Allreduce', 4, n,
                                           m.links['intra'])
    assert algorithm == 'rabenseifner'
    assert seconds == pytest.approx(4 * A + 1.5 * n / B + 0.75 * n * g)
    # 6 ranks: the same over 4, plus the 2 extra ranks' hand-in (a
    # message and a reduction) and hand-back (a message)
    seconds, _ = m.collective_time('Allreduce', 6, n, m.links['intra'])
    assert seconds == pytest.approx(4 * A + 1.5 * n / B + 0.75 * n * g +
                                    2 * A + 2 * n / B + n * g)


def test_nonoverlapping_and_linear_allreduce_by_hand():
    n = 1000
    m = Machine('hand', Link('intra', A, B), reduce_bandwidth=1e9,
                collectives={'allreduce': 'nonoverlapping'})
    # binomial Reduce then binomial Bcast over 8 ranks: 3 + 3 steps
    assert m.collective_time('Allreduce', 8, n, m.links['intra'])[0] == \
        pytest.approx(3 * (A + n / B + n / 1e9) + 3 * (A + n / B))
    m = Machine('hand', Link('intra', A, B),
                collectives={'allreduce': 'basic_linear'})
    assert m.collective_time('Allreduce', 3, n, m.links['intra'])[0] == \
        pytest.approx(2 * (2 * A + 2 * n / B))


def test_send_buffer_copies():
    m = _openmpi(copy_bandwidth=4e9)
    n = 4 << 20
    assert m.copy_time('rabenseifner', n, False) == pytest.approx(n / 4e9)
    assert m.copy_time('rabenseifner', n, True) == 0.0
    # recursive doubling works on a copy, in place or not
    assert m.copy_time('recursive_doubling', 800, True) == \
        pytest.approx(800 / 4e9)
    assert _openmpi().copy_time('ring', n, False) == 0.0
    with pytest.raises(ValueError, match='copy_bandwidth must be a '
                       'positive number of bytes/s or a list of .* got -1'):
        _openmpi(copy_bandwidth=-1)


def test_memory_rates_per_buffer_size():
    # Cache-resident below 1 MiB, memory-bound from 4 MiB: at 2 MiB the
    # rate is halfway on the logarithm of the size.
    rate = Rate('copy', [[1 << 20, 12e9], [4 << 20, 6e9]])
    assert rate.at(1000) == 12e9 and rate.at(1 << 20) == 12e9
    assert rate.at(2 << 20) == pytest.approx(9e9)
    assert rate.at(4 << 20) == 6e9 and rate.at(1 << 30) == 6e9
    assert Rate('copy', 5e9).at(1) == Rate('copy', 5e9).at(1 << 30) == 5e9


def test_allreduce_charges_the_rates_at_its_size():
    # 2 ranks, Open MPI's Rabenseifner: copy the send buffer, send half,
    # sum half, send half; the memory rates are those at 4 MiB.
    n = 4 << 20
    m = _openmpi(copy_bandwidth=[[1 << 20, 12e9], [4 << 20, 5e9]],
                 reduce_bandwidth=[[1 << 20, 10e9], [16 << 20, 4e9]])
    seconds, algorithm = m.collective_time('Allreduce', 2, n,
                                           m.links['intra'])
    assert algorithm == 'rabenseifner'
    assert seconds == pytest.approx(2 * A + n / B + (n / 2) / 7e9)
    assert m.copy_time(algorithm, n, False) == pytest.approx(n / 5e9)
    # a small buffer stays in the caches: the first point's rates
    assert m.copy_time('ring', 1 << 16, False) == pytest.approx(
        (1 << 16) / 12e9)


@pytest.mark.parametrize('bad, named', [
    ([[1 << 20, 5e9], [1 << 10, 6e9]], "sizes must increase, got "
                                       r"\[1048576, 1024\]"),
    ([[1 << 20, 0]], r"each point must be \[bytes, bytes/s\], two "
                     r"positive numbers, got \[1048576, 0\]"),
    ([[1 << 20]], r"got \[1048576\]"),
    ([], 'a list of'),
    ('fast', "got 'fast'"),
])
def test_bad_memory_rates_are_named(bad, named):
    with pytest.raises(ValueError, match='hand: reduce_bandwidth.*' + named):
        Machine('hand', Link('intra', A, B), reduce_bandwidth=bad)
