"""Differential fuzzer: random mpi4py programs, simulator vs real MPI.

Usage (from the repository root, after ``. scripts/env.sh``)::

    python -m simulator.fuzz --seed 1 --ranks 1,2,3,4 --count 20
    python -m simulator.fuzz --seed 7 --ranks 3 --count 1 --keep /tmp/fz
    python -m simulator.fuzz --seed 7 --ranks 3 --show      # print program
    python -m simulator.fuzz --families icoll,persist --ranks 2-4

For each seed in ``seed .. seed+count-1`` and each rank count, it
generates a valid program (:mod:`simulator.fuzz.gen`: matched,
deadlock-free, deterministic results), runs it with
``python -m simulator -n N prog.py LOGDIR`` and with
``mpiexec -n N python prog.py LOGDIR``, and compares every rank's log
(one line per observed value: arrays bit-exact, objects by repr,
statuses, communicator ranks/sizes) line by line. On a difference it
prints the seed, the rank, the first differing operation (its title and
both values) and where the program was kept, and exits 1. ``--keep DIR``
keeps every program (and both runs' logs) under DIR; programs that
differ are always kept. ``--sim-only`` runs the simulator alone, twice,
and checks that it agrees with itself (no mpiexec needed);
``--send-mode rendezvous`` runs the simulator with synchronous sends,
which also proves a program needs no message buffering. ``--families``
draws only from some operation families (:data:`simulator.fuzz.gen.
FAMILIES`; communicator management always).

Results are compared exactly. Generated values avoid what Open MPI 5.0
leaves to the CPU's vector unit (op/avx): NaN or signed-zero ties in
MAX/MIN and overflowing 8/16-bit integer SUMs (saturated in vector
lanes, wrapped in the scalar tail).

To reproduce a kept program by hand::

    python -m simulator -n 3 DIR/seed7_n3.py /tmp/sim && \\
    mpiexec -n 3 python DIR/seed7_n3.py /tmp/mpi && \\
    diff /tmp/sim/rank0.log /tmp/mpi/rank0.log

``mpiexec`` must be on PATH (``scripts/env.sh`` also sets the Open MPI
variables for root and oversubscription; the runner sets them too when
they are missing).
"""
import argparse
import builtins
import os
import re
import shutil
import subprocess
import sys
import tempfile

from simulator.fuzz.gen import FAMILIES, generate, parse_families
from simulator.tools import launch
from simulator.tools.mpiexec_env import mpiexec_environment

__all__ = ['Run', 'run_simulator', 'run_mpiexec', 'run_in_process',
           'compare', 'fuzz_one', 'main']

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class Run:
    """One execution of a program: exit status, output, per-rank logs."""

    def __init__(self, how, returncode, output, logs):
        self.how = how
        self.returncode = returncode
        self.output = output
        self.logs = logs        # world rank -> list of lines

    @property
    def ok(self):
        return self.returncode == 0


def _env():
    return mpiexec_environment([_ROOT], keep=True)


def _read_logs(logdir, size):
    logs = {}
    for rank in range(size):
        path = os.path.join(logdir, 'rank{}.log'.format(rank))
        if os.path.exists(path):
            with open(path) as f:
                logs[rank] = f.read().splitlines()
        else:
            logs[rank] = []
    return logs


def _execute(how, command, logdir, size, timeout):
    # A kept directory may hold an earlier run's MPI-IO files.
    shutil.rmtree(os.path.join(logdir, 'io'), ignore_errors=True)
    os.makedirs(logdir, exist_ok=True)
    try:
        done = subprocess.run(command + [logdir], capture_output=True,
                              text=True, timeout=timeout, env=_env(),
                              cwd=_ROOT)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        code = 'timeout after {}s'.format(timeout)
        output = ''.join(x if isinstance(x, str) else
                         (x or b'').decode(errors='replace')
                         for x in (expired.stdout, expired.stderr))
    return Run(how, code, output, _read_logs(logdir, size))


def run_simulator(path, size, logdir, timeout=60, send_mode='openmpi'):
    """``python -m simulator -n size --send-mode M path logdir``."""
    return _execute('simulator', [sys.executable, '-m', 'simulator', '-n',
                                  str(size), '--send-mode', send_mode,
                                  path], logdir, size, timeout)


def run_mpiexec(path, size, logdir, timeout=60):
    """``mpiexec -n size python path logdir``; once more when the launch
    itself failed (no rank recorded anything: an overloaded machine
    sometimes fails to start Open MPI's PMIx server)."""
    command = ['mpiexec', '-n', str(size), sys.executable, path]
    run = _execute('mpiexec', command, logdir, size, timeout)
    if not run.ok and not any(run.logs.values()):
        run = _execute('mpiexec', command, logdir, size, timeout)
    return run


def run_in_process(source, size, timeout=60):
    """Run a program's source on simulated ranks in this process; return
    each rank's recorded lines (no files, no subprocess)."""
    code = compile(source, '<fuzz program>', 'exec')

    def rank_main(comm):
        namespace = {'__name__': '__fuzz__', '__builtins__': builtins}
        exec(code, namespace)
        return list(namespace['_FUZZ_LINES'])

    saved_argv = sys.argv
    # A LOGDIR of its own: the program's logs and MPI-IO files go there.
    logdir = tempfile.mkdtemp(prefix='simulator-fuzz-')
    sys.argv = ['<fuzz program>', logdir]
    try:
        with launch.simulated_mpi4py():
            results = launch.run(rank_main, size, timeout=timeout)
    finally:
        sys.argv = saved_argv
        shutil.rmtree(logdir, ignore_errors=True)
    return dict(enumerate(results))


def _title(source, op_id):
    match = re.search(r'^# --- op {}: (.*)$'.format(re.escape(op_id)),
                      source, re.M)
    return match.group(1) if match else '(op {})'.format(op_id)


def _shorten(text, limit=400):
    return text if len(text) <= limit else text[:limit] + '...'


def compare(source, sim, real):
    """Lines describing the first difference between two runs (empty
    when they agree)."""
    for rank in sorted(set(sim.logs) | set(real.logs)):
        a, b = sim.logs.get(rank, []), real.logs.get(rank, [])
        for i in range(max(len(a), len(b))):
            left = a[i] if i < len(a) else None
            right = b[i] if i < len(b) else None
            if left == right:
                continue
            either = left or right
            op_id = either.split('\t', 1)[0]
            out = ['rank {} record {}: first difference in op {}: {}'
                   .format(rank, i, op_id, _title(source, op_id))]
            for run, line in ((sim, left), (real, right)):
                out.append('  {:9} {}'.format(run.how + ':', _shorten(
                    line.replace('\t', ' | ')) if line is not None else
                    '(no record; exit {})'.format(run.returncode)))
            return out
    if sim.ok != real.ok:
        return ['same records, but exit status differs: simulator {}, '
                'mpiexec {}'.format(sim.returncode, real.returncode)]
    return []


def _failure_text(run):
    tail = run.output.strip().splitlines()[-15:]
    return ['  {} exited {}; last output:'.format(run.how, run.returncode)
            ] + ['    ' + line for line in tail]


def fuzz_one(seed, size, workdir, ops=30, timeout=60, sim_only=False,
             send_mode='openmpi', families=None):
    """Generate, run both ways and compare one program; return
    (program path, list of difference lines)."""
    source = generate(seed, size, ops, families)
    path = os.path.join(workdir, 'seed{}_n{}.py'.format(seed, size))
    with open(path, 'w') as f:
        f.write(source)
    logs = os.path.join(workdir, 'seed{}_n{}'.format(seed, size))
    sim = run_simulator(path, size, os.path.join(logs, 'sim'), timeout,
                        send_mode)
    if sim_only:
        real = run_simulator(path, size, os.path.join(logs, 'sim2'),
                             timeout)
        real.how = 'simulator again'
    else:
        real = run_mpiexec(path, size, os.path.join(logs, 'mpi'), timeout)
    diff = compare(source, sim, real)
    for run in (sim, real):
        if not run.ok and diff:
            diff += _failure_text(run)
    if not diff and not (sim.ok and real.ok):
        diff = ['both runs failed'] + _failure_text(sim) + \
            _failure_text(real)
    return path, diff


def _parse_ranks(text):
    ranks = []
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        ranks += range(int(lo), int(hi or lo) + 1)
    return ranks


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m simulator.fuzz',
        description='Random mpi4py programs: simulator vs mpiexec.')
    parser.add_argument('--seed', type=int, default=0,
                        help='first seed (default 0)')
    parser.add_argument('--count', type=int, default=1,
                        help='number of seeds (default 1)')
    parser.add_argument('--ranks', default='2',
                        help='rank counts: 3, 1,2,4 or 1-4 (default 2)')
    parser.add_argument('--ops', type=int, default=30,
                        help='operations per program (default 30)')
    parser.add_argument('--keep', metavar='DIR',
                        help='keep every program and its logs here')
    parser.add_argument('--timeout', type=float, default=60,
                        help='seconds per run (default 60)')
    parser.add_argument('--sim-only', action='store_true',
                        help='compare the simulator with itself')
    parser.add_argument('--send-mode', choices=('openmpi', 'eager',
                                                'rendezvous'),
                        default='openmpi',
                        help='the simulator\'s send mode; rendezvous also '
                        'checks that programs need no buffering')
    parser.add_argument('--families', metavar='F,F',
                        help='operation families to draw from (default '
                        'all): ' + ', '.join(['comm'] + sorted(FAMILIES)) +
                        '; comm (Split, Dup, Free...) is always drawn')
    parser.add_argument('--show', action='store_true',
                        help='print the program(s) instead of running')
    return parser


def main(argv=None):
    """Entry point; returns the exit status (1 on any difference)."""
    parser = _parser()
    options = parser.parse_args(argv)
    families = None
    if options.families:
        try:
            families = parse_families(options.families)
        except ValueError as error:
            parser.error(str(error))
    ranks = _parse_ranks(options.ranks)
    seeds = range(options.seed, options.seed + options.count)
    if options.show:
        for seed in seeds:
            for size in ranks:
                print(generate(seed, size, options.ops, families))
        return 0
    if not options.sim_only and shutil.which('mpiexec') is None:
        print('simulator.fuzz: mpiexec is not on PATH (run . scripts/'
              'env.sh, or use --sim-only)', file=sys.stderr)
        return 2
    keep = options.keep
    if keep:
        os.makedirs(keep, exist_ok=True)
    workdir = keep or tempfile.mkdtemp(prefix='simulator-fuzz-')
    compared = differing = 0
    for seed in seeds:
        for size in ranks:
            path, diff = fuzz_one(seed, size, workdir, options.ops,
                                  options.timeout, options.sim_only,
                                  options.send_mode, families)
            compared += 1
            if not diff:
                print('seed {} ranks {}: same'.format(seed, size),
                      flush=True)
                continue
            differing += 1
            print('seed {} ranks {}: DIFFERENT (program kept: {})'.format(
                seed, size, path))
            print('\n'.join('  ' + line for line in diff), flush=True)
    print('{} program(s) compared, {} differ'.format(compared, differing))
    if not keep and not differing:
        shutil.rmtree(workdir, ignore_errors=True)
    elif not keep:
        print('programs and logs kept in {}'.format(workdir))
    return 1 if differing else 0

