"""Simulator benchmarks, each measured beside its reference in one run.

    python benchmarks/bench_simulator.py [--quick] [--skip-mpiexec]
                                         [--only ROW]

Rows (issue 3, section 5): p2p hand-off latency (8 B object, 8 B buffer)
vs a bare threading.Condition ping-pong; Allreduce of 100 MB float32 on 4
ranks vs 4 single-threaded 100 MB copies; world start-up for 8 ranks (vs
``mpiexec -n 8 python -c pass``); the same with every rank importing a
20-module user package (executed once per rank); a 4,096-rank world
running Split + allreduce + Barrier; deadlock detection at 1,024 ranks
(from the last rank blocking to the report). Issue 15: 100 seeded
schedules of a 3-rank, 10-message wildcard program (vs 100 default
runs), and a ``--schedule`` run of the main job
(examples/mnist/train_mnist.py, 4 ranks) vs its default run, both in
this process. Every figure is the median of several repetitions.
"""
import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import simulator
from simulator.errors import DeadlockError
from simulator.tools import cli
from simulator.tools.mpiexec_env import mpiexec_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

__all__ = ['main']


def _median(fn, repeats):
    return statistics.median(fn() for _ in range(repeats))


# --- references -----------------------------------------------------------

def bare_handoff_one_way(round_trips):
    """One-way latency of a Condition ping-pong between two threads."""
    cond = threading.Condition()
    state = {'turn': 0}

    def player(me, other, result):
        start = time.perf_counter()
        for _ in range(round_trips):
            with cond:
                while state['turn'] != me:
                    cond.wait()
                state['turn'] = other
                cond.notify()
        result.append(time.perf_counter() - start)

    results = []
    threads = [threading.Thread(target=player, args=(0, 1, results)),
               threading.Thread(target=player, args=(1, 0, results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(results) / (2 * round_trips)


def four_copies(nbytes):
    """Seconds for 4 single-threaded copies of ``nbytes``."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)     # touch the pages before timing
    start = time.perf_counter()
    for _ in range(4):
        np.copyto(dst, src)
    return time.perf_counter() - start


def bare_threads_barrier(count):
    """Start ``count`` threads, meet at a barrier, join them."""
    barrier = threading.Barrier(count)
    old = threading.stack_size(256 * 1024)
    try:
        start = time.perf_counter()
        threads = [threading.Thread(target=barrier.wait)
                   for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - start
    finally:
        threading.stack_size(old)


def mpiexec_startup(size):
    """Seconds for ``mpiexec -n size python -c pass`` (None if absent)."""
    mpiexec = (shutil.which('mpiexec', path=os.path.dirname(sys.executable))
               or shutil.which('mpiexec'))
    if mpiexec is None:
        return None
    env = mpiexec_environment()
    start = time.perf_counter()
    subprocess.run([mpiexec, '-n', str(size), sys.executable, '-c', 'pass'],
                   env=env, check=True, capture_output=True, timeout=300)
    return time.perf_counter() - start


# --- simulator ------------------------------------------------------------

def sim_handoff_one_way(round_trips, kind):
    """One-way latency of an 8-byte ping-pong between 2 simulated ranks."""
    def ping_pong(comm):
        rank = comm.Get_rank()
        other = 1 - rank
        if kind == 'object':
            message = b'8 bytes!'

            def send():
                comm.send(message, dest=other, tag=0)

            def recv():
                comm.recv(source=other, tag=0)
        else:
            buf = np.zeros(1, dtype=np.float64)

            def send():
                comm.Send(buf, dest=other, tag=0)

            def recv():
                comm.Recv(buf, source=other, tag=0)
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(round_trips):
            if rank == 0:
                send()
                recv()
            else:
                recv()
                send()
        return time.perf_counter() - start

    return max(simulator.run(ping_pong, 2)) / (2 * round_trips)


def sim_allreduce(nbytes, ranks=4):
    """Seconds for one Allreduce(SUM) of ``nbytes`` float32 per rank."""
    def allreduce(comm):
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        comm.Allreduce(src, dst)            # warm up pages and code paths
        comm.Barrier()
        start = time.perf_counter()
        comm.Allreduce(src, dst)
        comm.Barrier()
        elapsed = time.perf_counter() - start
        assert dst[0] == comm.Get_size() and dst[-1] == comm.Get_size()
        return elapsed

    return max(simulator.run(allreduce, ranks))


def sim_startup(size):
    """Seconds for ``simulator.run`` of an empty program on ``size`` ranks."""
    start = time.perf_counter()
    simulator.run(lambda comm: None, size)
    return time.perf_counter() - start


def make_user_package(folder, modules=20):
    """Write a package of ``modules`` small modules (each with module-level
    state and a class) under ``folder``; returns its name."""
    name = 'bench_user_pkg'
    package = os.path.join(folder, name)
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, '__init__.py'), 'w') as f:
        f.write(''.join('from {} import m{}\n'.format(name, i)
                        for i in range(modules)))
    for i in range(modules):
        with open(os.path.join(package, 'm{}.py'.format(i)), 'w') as f:
            f.write('import numpy\nCOUNT = 0\nTABLE = list(range(100))\n'
                    'class Thing{0}:\n    def value(self):\n'
                    '        return {0}\n'.format(i))
    return name


def sim_startup_with_package(size, folder, name):
    """Seconds for ``size`` ranks that each import a user package (its
    modules are executed once per rank, see simulator.engine.modules)."""
    def program(comm):
        module = __import__(name)
        return module.m0.COUNT
    start = time.perf_counter()
    simulator.run(program, size)
    elapsed = time.perf_counter() - start
    sys.modules.pop(name, None)
    for key in [k for k in sys.modules if k.startswith(name + '.')]:
        del sys.modules[key]
    return elapsed


def sim_large_world(size):
    """Seconds for a ``size``-rank Split + allreduce + Barrier run."""
    def program(comm):
        rank = comm.Get_rank()
        half = comm.Split(rank % 2, rank)
        total = half.allreduce(1)
        comm.Barrier()
        half.Free()
        return total

    start = time.perf_counter()
    totals = simulator.run(program, size, timeout=60)
    elapsed = time.perf_counter() - start
    assert totals[0] == (size + 1) // 2
    return elapsed


def sim_deadlock_detection(size):
    """Seconds from the last rank blocking in a recv cycle to the report.

    That moment is when the deadlock becomes certain; thread start-up
    before it is the world's start-up, measured by other rows.
    """
    blocked_at = [None] * size

    def program(comm):
        rank = comm.Get_rank()
        blocked_at[rank] = time.perf_counter()
        comm.recv(source=(rank + 1) % size, tag=0)

    try:
        simulator.run(program, size, timeout=60)
    except DeadlockError:
        return time.perf_counter() - max(blocked_at)
    raise AssertionError('the {}-rank cycle was not reported'.format(size))


def _ten_messages(comm):
    """Ranks 1 and 2 send 5 messages each; rank 0 takes them from
    ANY_SOURCE (a choice at every receive) and sums them."""
    rank = comm.Get_rank()
    if rank == 0:
        return sum(comm.recv(source=simulator.mpi.ANY_SOURCE)
                   for _ in range(10))
    for i in range(5):
        comm.send(rank * 10 + i, dest=0)
    return None


def sim_runs(count, schedules):
    """Seconds for ``count`` runs of the 10-message program: seeded
    schedules (one exploration) or default runs."""
    start = time.perf_counter()
    if schedules:
        report = simulator.explore(_ten_messages, 3, count)
        assert report.ok and report.runs == count, report
    else:
        for _ in range(count):
            simulator.run(_ten_messages, 3)
    return time.perf_counter() - start


def sim_main_job(schedule, out_dir, sink):
    """Seconds for the main job (train_mnist.py, 4 ranks, 2 epochs) run
    in this process, by default or under ``--schedule``; its output goes
    to ``sink``, the same file every run (Chainer keeps the first
    sys.stdout it saw)."""
    argv = ['-n', '4'] + (['--schedule', str(schedule)]
                          if schedule is not None else []) + [
        os.path.join(ROOT, 'examples', 'mnist', 'train_mnist.py'), '-e',
        '2', '-u', '100', '--no-progress', '-o', out_dir]
    saved = sys.argv[:], sys.path[:]
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sink):
            status = cli.main(argv)
    finally:
        sys.argv[:], sys.path[:] = saved
    assert status == 0, 'train_mnist.py exited {}'.format(status)
    return time.perf_counter() - start


# --- table ----------------------------------------------------------------

def _fmt(seconds):
    if seconds is None:
        return 'n/a'
    if seconds < 1e-3:
        return '{:.1f} us'.format(seconds * 1e6)
    if seconds < 1.0:
        return '{:.1f} ms'.format(seconds * 1e3)
    return '{:.2f} s'.format(seconds)


def _row(name, measured, reference, ref_name, target_text, ok):
    ratio = ('{:.2f}x'.format(measured / reference)
             if reference else 'n/a')
    return (name, _fmt(measured), '{} ({})'.format(_fmt(reference),
                                                     ref_name),
            ratio, target_text, 'PASS' if ok else 'FAIL')


def _guarded(name, measure):
    """Run one row's measurement; a failure becomes a FAIL row."""
    try:
        return measure()
    except Exception as error:  # reported in the table
        headline = str(error).split('\n')[0][:60]
        return (name, 'error', '{}: {}'.format(type(error).__name__,
                                               headline),
                'n/a', '', 'FAIL')


def run_all(quick=False, skip_mpiexec=False, on_row=None, only=None):
    """Measure every row (or those whose name contains ``only``, case
    ignored); return the table rows (``on_row`` sees each)."""
    repeats = 3 if quick else 5
    trips = 500 if quick else 2000
    mb100 = 100 * 1000 * 1000
    rows = []

    def add(name, measure):
        if only is not None and only.lower() not in name.lower():
            return
        row = _guarded(name, measure)
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for kind in ('object', 'buffer'):
        def handoff(kind=kind):
            # In turns (bare, simulated, bare, ...), like the Allreduce row.
            pairs = [(bare_handoff_one_way(trips),
                      sim_handoff_one_way(trips, kind))
                     for _ in range(repeats)]
            bare = statistics.median(p[0] for p in pairs)
            sim = statistics.median(p[1] for p in pairs)
            return _row('p2p hand-off, 8 B {}'.format(kind), sim, bare,
                        'bare Condition', '<= 2x', sim <= 2 * bare)
        add('p2p hand-off, 8 B {}'.format(kind), handoff)

    def allreduce(name='Allreduce 100 MB f32, 4 ranks'):
        # In turns (copy, simulate, copy, ...): load changes on a shared
        # machine hit both alike.
        pairs = [(four_copies(mb100), sim_allreduce(mb100))
                 for _ in range(repeats)]
        copies = statistics.median(p[0] for p in pairs)
        took = statistics.median(p[1] for p in pairs)
        return _row(name, took, copies, '4 x 100 MB copy', '<= 1.5x',
                    took <= 1.5 * copies)
    add('Allreduce 100 MB f32, 4 ranks', allreduce)

    def startup(name='world start-up, 8 ranks'):
        took = _median(lambda: sim_startup(8), repeats)
        reference = None if skip_mpiexec else mpiexec_startup(8)
        return _row(name, took, reference, 'mpiexec -n 8', '<= 0.1 s',
                    took <= 0.1)
    add('world start-up, 8 ranks', startup)

    def startup_package(name='world start-up, 8 ranks, 20-module package'):
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            package = make_user_package(folder)
            sys.path.insert(0, folder)
            try:
                took = _median(lambda: sim_startup_with_package(
                    8, folder, package), repeats)
            finally:
                sys.path.remove(folder)
        reference = _median(lambda: sim_startup(8), repeats)
        return _row(name, took, reference, 'empty 8-rank world', '<= 0.5 s',
                    took <= 0.5)
    add('world start-up, 8 ranks, 20-module package', startup_package)

    def large(name='4,096 ranks Split+allreduce+Barrier'):
        reference = bare_threads_barrier(4096)
        took = sim_large_world(4096)
        return _row(name, took, reference, '4,096 bare threads', '<= 30 s',
                    took <= 30.0)
    add('4,096 ranks Split+allreduce+Barrier', large)

    def deadlock(name='deadlock report after last block, 1,024'):
        reference = _median(lambda: bare_threads_barrier(1024), repeats)
        took = _median(lambda: sim_deadlock_detection(1024),
                       2 if quick else 3)
        return _row(name, took, reference, '1,024 bare threads', '<= 2 s',
                    took <= 2.0)
    add('deadlock report after last block, 1,024', deadlock)

    def schedules(name='100 schedules, 3 ranks x 10 messages'):
        reference = sim_runs(100, False)
        took = sim_runs(100, True)
        return _row(name, took, reference, '100 default runs', '<= 10 s',
                    took <= 10.0)
    add('100 schedules, 3 ranks x 10 messages', schedules)

    def main_job(name='main job under --schedule, 4 ranks'):
        out_dir = os.path.join(ROOT, 'result_bench_schedule')
        try:
            with open(os.devnull, 'w') as sink:
                sim_main_job(None, out_dir, sink)   # warm-up: imports
                pairs = [(sim_main_job(None, out_dir, sink),
                          sim_main_job(seed, out_dir, sink))
                         for seed in range(2 if quick else 3)]
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        reference = statistics.median(p[0] for p in pairs)
        took = statistics.median(p[1] for p in pairs)
        return _row(name, took, reference, 'default run', '<= 1.5x',
                    took <= 1.5 * reference)
    add('main job under --schedule, 4 ranks', main_job)
    return rows


def print_table(rows):
    """Print rows as an aligned text table."""
    header = ('benchmark', 'measured', 'reference', 'ratio', 'target',
              'result')
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    for line in [header, tuple('-' * w for w in widths)] + rows:
        print('  '.join(str(c).ljust(w) for c, w in zip(line, widths)))


def main(argv=None):
    """Command line entry: measure, print, exit 1 if a target failed."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='fewer repetitions and round trips')
    parser.add_argument('--skip-mpiexec', action='store_true',
                        help='do not time mpiexec start-up')
    parser.add_argument('--only', metavar='ROW',
                        help='only the rows whose name contains ROW '
                        '(case ignored), e.g. --only allreduce')
    args = parser.parse_args(argv)
    rows = run_all(quick=args.quick, skip_mpiexec=args.skip_mpiexec,
                   only=args.only,
                   on_row=lambda row: print('measured:', ' | '.join(row),
                                            flush=True))
    if not rows:
        parser.error('no row name contains {!r}'.format(args.only))
    print()
    print_table(rows)
    return 0 if all(r[-1] == 'PASS' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
