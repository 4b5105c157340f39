"""simulator.engine.netmodel: the cost arithmetic, worked by hand."""
import json

import pytest

from simulator.engine.netmodel import Link, Machine, load_machine

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
