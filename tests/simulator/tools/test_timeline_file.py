"""simulator.tools.timeline and the virtual-time options of python -m
simulator: Trace Event files, the end-of-run line, the scaling table, the
SVG picture. (Not test_timeline.py: pytest imports test modules by
basename, and chainermn_lite's has that name.)"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RING = os.path.join(ROOT, 'tests', 'simulator', 'tools', 'scripts',
                    'hello_ring.py')
UNSAFE = 'virtual time and its timelines are the simulator\'s own'
pytestmark = pytest.mark.simulator_only(UNSAFE)


def _simulator(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, '-m', 'simulator'] + list(args),
                          env=env, capture_output=True, text=True,
                          timeout=120)


def check_trace(path, size):
    """A valid Trace Event file with one track per rank; returns it."""
    with open(path) as f:
        trace = json.load(f)
    events = trace['traceEvents']
    names = {e['tid']: e['args']['name'] for e in events
             if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert names == {r: 'rank {}'.format(r) for r in range(size)}
    flows = {}
    for e in events:
        assert e['ph'] in ('M', 'X', 's', 'f'), e
        assert isinstance(e['pid'], int) and e['tid'] in names, e
        if e['ph'] == 'X':
            assert e['ts'] >= 0 and e['dur'] >= 0 and e['name'], e
            assert e['cat'] in ('compute', 'mpi'), e
        if e['ph'] in ('s', 'f'):
            flows.setdefault(e['id'], []).append(e['ph'])
    assert {r for r in names} == {e['tid'] for e in events
                                  if e['ph'] == 'X'}
    for phases in flows.values():
        assert sorted(phases) == ['f', 's']
    return trace


def test_timeline_is_trace_event_json_with_a_track_per_rank(tmp_path):
    path = str(tmp_path / 'run.json')
    done = _simulator('-n', '3', '--timeline', path, RING)
    assert done.returncode == 0, done.stderr
    trace = check_trace(path, 3)
    ops = [e for e in trace['traceEvents'] if e['ph'] == 'X' and
           e['name'] == 'sendrecv']
    assert len(ops) == 3
    assert {e['args']['peer'] for e in ops} == {0, 1, 2}
    assert all(e['args']['bytes'] > 0 for e in ops)
    reduce = [e for e in trace['traceEvents'] if e['name'] == 'allreduce']
    # the shipped machine follows Open MPI's rules: over 3 ranks, ring
    # below 8 bytes, recursive doubling from there
    args = reduce[0]['args']
    assert args['algorithm'] == ('ring' if args['bytes'] < 8 else
                                 'recursive_doubling')
    assert len([e for e in trace['traceEvents'] if e['ph'] == 's']) == 3
    line = [x for x in done.stdout.splitlines()
            if x.startswith('virtual time:')]
    assert len(line) == 1 and '(compute ' in line[0], done.stdout


def test_sizes_prints_a_scaling_table():
    done = _simulator('--sizes', '1,2,4', '--machine', 'gpu_cluster',
                      RING)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ['ranks', 'time', 's', 'speed-up']
    assert [x.split()[0] for x in lines[1:4]] == ['1', '2', '4']
    assert lines[1].split()[2] == '1.00'
    assert 'OUT' not in done.stdout      # the ranks' output is not shown


def test_sizes_run_the_users_own_modules_only_in_ranks(tmp_path):
    # Each size is a new world in one process: the time functions are
    # patched again, and the user's per-rank modules left from the last
    # world must not be executed outside a rank on the way.
    log = tmp_path / 'runs.txt'
    (tmp_path / 'helper_vt.py').write_text(
        'import time\n'
        'with open({!r}, "a") as f:\n'
        '    f.write("run\\n")\n'
        'stamp = time.perf_counter\n'.format(str(log)))
    script = tmp_path / 'uses_helper.py'
    script.write_text('import helper_vt\nfrom mpi4py import MPI\n'
                      'MPI.COMM_WORLD.Barrier()\nhelper_vt.stamp()\n')
    done = _simulator('--sizes', '1,2', '--machine', 'gpu_cluster',
                      str(script))
    assert done.returncode == 0, done.stderr
    runs = log.read_text().split()
    # once per rank, 1 (warm-up) + 1 + 2, and never outside one
    assert len(runs) == 4, runs


def test_bad_options_name_the_value():
    done = _simulator('--sizes', '2,x', RING)
    assert done.returncode == 2 and "'2,x'" in done.stderr
    done = _simulator(RING)
    assert done.returncode == 2 and '-n N' in done.stderr
    done = _simulator('-n', '2', '--machine', 'nowhere', RING)
    assert done.returncode == 2 and "'nowhere'" in done.stderr
    done = _simulator('-n', '2', '--compute-estimate', 'mean', RING)
    assert done.returncode == 2 and "'mean'" in done.stderr


@pytest.mark.parametrize('estimate', ['raw', 'median'])
def test_compute_estimate_runs_in_virtual_time(estimate):
    done = _simulator('-n', '2', '--compute-estimate', estimate, RING)
    assert done.returncode == 0, done.stderr
    assert [x for x in done.stdout.splitlines()
            if x.startswith('virtual time:')], done.stdout


def test_svg_picture_of_a_trace(tmp_path):
    path = str(tmp_path / 'run.json')
    assert _simulator('-n', '3', '--timeline', path, RING).returncode == 0
    svg = str(tmp_path / 'run.svg')
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, '-m', 'simulator.tools.timeline',
                           path, '-o', svg], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = open(svg).read()
    assert text.startswith('<svg') and text.endswith('</svg>')
    assert [text.count('>rank {}<'.format(r)) for r in range(3)] == [1] * 3
    assert text.count('<line ') == 3             # one arrow per sendrecv
    assert '<title>sendrecv' in text
