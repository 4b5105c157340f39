"""Data-parallel training benchmark: throughput and double buffering.

Run (it launches ``mpiexec -n 2`` itself)::

    python benchmarks/bench_training.py [--quick]

(1) Samples per second of examples/mnist/train_mnist.py's training (its
MLP, Adam, batch 100 per rank, the example's data and scatter, a
``StandardUpdater``; no extensions): one process vs chainermn_lite's
``naive`` communicator under ``mpiexec -n 2`` vs ChainerMN 7.8.1's own
``naive`` communicator and optimizer under ``mpiexec -n 2``. Target:
ours >= ChainerMN's.

(2) ``double_buffering=True`` on the ResNet-50-shaped model (161 arrays,
25.6 M float32, ``_models.resnet50_link``), 2 ranks, on the simulator and
under ``mpiexec -n 2``. A step is a synthetic compute (a float32 matmul
loop sized to take about as long as the allreduce, then every gradient is
written) plus the optimizer's update (SGD). ``compute`` is that step on
one rank without communication; ``allreduce`` is a blocking
``multi_node_mean_grad`` (``flat``); target: a double-buffered step <=
1.2 x max(compute, allreduce). A second pair of rows replaces the matmul
loop by a sleep of the same length (device-like compute that leaves the
CPU free): with 2 ranks on 2 cores a CPU-bound compute leaves no core for
the reduction, the sleep rows show what the overlap itself achieves.

(3) ``overlap=True`` on the same shapes, as a real Chainer graph: one
layer per parameter whose backward sleeps its share (by size) of a
device-like backward as long as the allreduce, then returns a fresh
gradient. ``backward`` is forward + backward + SGD update on one rank
without communication; ``allreduce`` a blocking ``multi_node_mean_grad``
(``flat``); ``plain step`` the multi-node optimizer without overlap;
``overlap step`` the same with ``overlap=True``. Target: overlap step
<= 1.15 x max(backward, allreduce).

Every worker runs with one BLAS thread, so one process and two ranks
compare on the same per-process footing. Each figure is the median of
``--reps`` repetitions, the slowest rank's.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'examples', 'mnist'))

from simulator.tools.mpiexec_env import mpiexec_environment  # noqa: E402

RESULT = 'BENCH_RESULT '
BATCH = 100
UNITS = 1000
STEP_TARGET = 1.2
OVERLAP_TARGET = 1.15


# -- workers (run inside mpiexec, the simulator, or one process) ----------
def _world():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _slowest(mpi_comm, seconds):
    return max(mpi_comm.allgather(seconds)) if mpi_comm else seconds


def _timed(mpi_comm, fn, reps):
    """Median over reps of the slowest rank's seconds for ``fn()``."""
    samples = []
    for _ in range(reps):
        if mpi_comm:
            mpi_comm.Barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(_slowest(mpi_comm, time.perf_counter() - t0))
    return statistics.median(samples)


def train_worker(impl, steps, reps):
    """Samples/s of the MNIST example's training with ``impl``: 'single',
    'ours' or 'chainermn' (ChainerMN 7.8.1)."""
    import chainer
    import chainer.links as L
    import numpy as np

    import train_mnist
    mpi_comm = None if impl == 'single' else _world()
    if impl == 'chainermn':
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            import chainermn as lib
    else:
        import chainermn_lite as lib
    comm = None
    if mpi_comm is not None:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            comm = lib.create_communicator('naive', mpi_comm=mpi_comm)
    rank = comm.rank if comm else 0
    size = comm.size if comm else 1
    train = train_mnist.load_data('auto')[0] if rank == 0 else None
    n_in = mpi_comm.bcast(train[0][0].size if rank == 0 else None) \
        if comm else train[0][0].size
    model = L.Classifier(train_mnist.MLP(n_in, UNITS, 10))
    train_mnist.seed_params(model, 0)
    optimizer = chainer.optimizers.Adam()
    if comm:
        optimizer = lib.create_multi_node_optimizer(optimizer, comm)
        train = lib.scatter_dataset(train, comm, shuffle=True, seed=0)
    optimizer.setup(model)
    order = chainer.iterators.ShuffleOrderSampler(
        np.random.RandomState(rank))
    iterator = chainer.iterators.SerialIterator(train, BATCH,
                                                order_sampler=order)
    updater = chainer.training.StandardUpdater(iterator, optimizer)
    for _ in range(5):  # the broadcast step and warm-up
        updater.update()

    def run():
        for _ in range(steps):
            updater.update()
    seconds = _timed(mpi_comm, run, reps)
    return {'samples_per_s': steps * BATCH * size / seconds,
            'size': size, 'inputs': n_in}


def _sleep_workload(mpi_comm, target_s):
    """Device-like compute: the host waits ``target_s`` (as for a GPU
    kernel), leaving the CPU free, then writes every gradient."""
    def compute(model):
        time.sleep(target_s)
        for p in model.params():
            p.grad.fill(1e-3)
    return compute


def _matmul_workload(mpi_comm, target_s):
    """A matmul loop of about ``target_s`` seconds (the same length on
    every rank) that then writes every gradient, as a backward would."""
    import numpy as np
    a = np.random.RandomState(0).standard_normal((384, 384)).astype(
        np.float32)
    out = np.empty_like(a)
    t0 = time.perf_counter()
    for _ in range(10):
        np.matmul(a, a, out=out)
    one = (time.perf_counter() - t0) / 10
    loops = max(1, int(round(target_s / one)))
    if mpi_comm:
        loops = mpi_comm.bcast(loops, root=0)

    def compute(model):
        for _ in range(loops):
            np.matmul(a, a, out=out)
        for p in model.params():
            p.grad.fill(1e-3)
    return compute


WORKLOADS = {'matmul': _matmul_workload, 'sleep': _sleep_workload}


def double_buffering_body(mpi_comm, reps, steps, workload):
    """(compute, allreduce, double-buffered step) seconds on mpi_comm."""
    import chainer

    import _models
    import chainermn_lite
    comm = chainermn_lite.create_communicator('flat', mpi_comm=mpi_comm)
    model = _models.resnet50_link(seed=comm.rank)
    allreduce = _timed(mpi_comm, lambda: comm.multi_node_mean_grad(model),
                       reps)
    # Leave room for the optimizer's own update inside "compute".
    compute_fn = WORKLOADS[workload](mpi_comm, allreduce * 0.8)
    plain = chainer.optimizers.SGD(lr=0).setup(model)

    def local_step():
        compute_fn(model)
        plain.update()
    compute = _timed(mpi_comm, local_step, reps)

    db = chainermn_lite.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0), comm, double_buffering=True)
    db.setup(model)
    db.update()  # the broadcast step

    def db_steps():
        for _ in range(steps):
            compute_fn(model)
            db.update()
    db_steps()  # warm-up; the first reduction starts here
    step = _timed(mpi_comm, db_steps, reps) / steps

    def updates_alone():
        for _ in range(steps):
            db.update()
    # The double-buffered update without compute to hide behind: what
    # a step costs beyond the compute when nothing overlaps.
    update = _timed(mpi_comm, updates_alone, reps) / steps
    db.wait()
    return {'compute': compute, 'allreduce': allreduce, 'step': step,
            'update': update}


def _sleepy_model(total_s):
    """(model, lossfun): ResNet-50's shapes as a chain of layers, each
    sleeping its share of ``total_s`` in backward (a device's kernels,
    the CPU left free) and returning a new gradient array for its param
    (one of two sets, in turns)."""
    import chainer
    import numpy as np

    import _models
    model = _models.resnet50_link()
    params = list(model.params())
    total = sum(p.size for p in params)

    # A device's backward hands over new gradient arrays without the CPU
    # writing them: two preallocated sets in turns stand for them (new
    # arrays at every step, as the mean sees them, and no 100 MB fill).
    grad_sets = [[np.full(p.shape, 1e-3, p.dtype) for p in params]
                 for _ in range(2)]

    class Layer(chainer.FunctionNode):
        def __init__(self, seconds, grad):
            self.seconds = seconds
            self.grad = grad

        def forward(self, inputs):
            return inputs[0].copy(),

        def backward(self, indexes, grad_outputs):
            time.sleep(self.seconds)
            gh, = grad_outputs
            return gh, chainer.Variable(self.grad)

    def lossfun():
        grad_sets.reverse()
        h = chainer.Variable(np.zeros(1, np.float32))
        for p, grad in zip(params, grad_sets[0]):
            h, = Layer(total_s * p.size / total, grad).apply((h, p))
        return chainer.functions.sum(h)
    return model, lossfun


def overlap_body(mpi_comm, reps, steps):
    """(backward, allreduce, plain step, overlap step) seconds, the four
    measured in turns (A B C D, B C D A, ...) so that a shared machine's
    changing load hits them alike."""
    import chainer

    import chainermn_lite
    comm = chainermn_lite.create_communicator('flat', mpi_comm=mpi_comm)
    grads_model, _ = _sleepy_model(0)
    params = list(grads_model.params())
    # Two sets of grads in turns: a backward makes new grad arrays every
    # step, so the steps' mean never takes the one-buffer path (GradArena)
    # that grads persisting between calls would; neither may this row.
    grad_sets = [[p.array * 0 + 1e-3 for p in params] for _ in range(2)]

    def allreduce():
        grad_sets.reverse()
        for p, g in zip(params, grad_sets[0]):
            p.grad = g
        comm.multi_node_mean_grad(grads_model)
    # The backward sleeps as long as one allreduce: sized first.
    model, lossfun = _sleepy_model(_timed(mpi_comm, allreduce, reps))
    local = chainer.optimizers.SGD(lr=0).setup(model)
    runs = {'backward': lambda: local.update(lossfun),
            'allreduce': allreduce}
    for name, overlap in (('plain', False), ('overlap', True)):
        # Every optimizer is SGD(lr=0): whichever set the params' update
        # rules last, an update costs the same.
        opt = chainermn_lite.create_multi_node_optimizer(
            chainer.optimizers.SGD(lr=0), comm, overlap=overlap)
        opt.setup(model)
        opt.update()  # the broadcast step

        def run(opt=opt):
            for _ in range(steps):
                opt.update(lossfun)
        run()  # warm-up
        runs[name] = run
    names = list(runs)
    samples = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            if mpi_comm:
                mpi_comm.Barrier()
            t0 = time.perf_counter()
            runs[name]()
            samples[name].append(
                _slowest(mpi_comm, time.perf_counter() - t0))
    out = {name: statistics.median(got) for name, got in samples.items()}
    out['plain'] /= steps
    out['overlap'] /= steps
    return out


def _emit(payload):
    print(RESULT + json.dumps(payload), flush=True)


def worker_main(args):
    if args.worker == 'train':
        result = train_worker(args.impl, args.steps, args.reps)
        rank = 0 if args.impl == 'single' else _world().Get_rank()
    elif args.worker == 'ov-mpi':
        result = overlap_body(_world(), args.reps, args.db_steps)
        rank = _world().Get_rank()
    elif args.worker == 'ov-sim':
        import simulator
        result = simulator.run(
            lambda c: overlap_body(c, args.reps, args.db_steps), 2)[0]
        rank = 0
    elif args.worker == 'db-mpi':
        result = double_buffering_body(_world(), args.reps, args.db_steps,
                                       args.compute)
        rank = _world().Get_rank()
    else:
        import simulator
        results = simulator.run(
            lambda c: double_buffering_body(c, args.reps, args.db_steps,
                                            args.compute), 2)
        result, rank = results[0], 0
    if rank == 0:
        _emit(result)


# -- launcher -------------------------------------------------------------
def _env():
    env = mpiexec_environment([ROOT])
    env['MKL_NUM_THREADS'] = '1'
    return env


def _mpiexec():
    found = (shutil.which('mpiexec', path=os.path.dirname(sys.executable))
             or shutil.which('mpiexec'))
    if found is None:
        raise SystemExit('mpiexec not found (run . scripts/env.sh first)')
    return [found, '--oversubscribe', '-n', '2']


def _launch(args, extra, mpi):
    cmd = [sys.executable, os.path.abspath(__file__), '--steps',
           str(args.steps), '--reps', str(args.reps), '--db-steps',
           str(args.db_steps)] + extra
    if mpi:
        cmd = _mpiexec() + cmd
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True,
                          timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise RuntimeError('{} failed (exit {}):\n{}{}'.format(
        ' '.join(cmd), done.returncode, done.stdout[-2000:],
        done.stderr[-4000:]))


def _verdict(ok):
    return 'PASS' if ok else 'FAIL'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='fewer steps and repetitions')
    parser.add_argument('--steps', type=int, default=None,
                        help='training steps per repetition')
    parser.add_argument('--reps', type=int, default=None)
    parser.add_argument('--db-steps', type=int, default=None,
                        help='double-buffered steps per repetition')
    parser.add_argument('--rounds', type=int, default=None,
                        help='interleaved rounds of the three runs of (1)')
    parser.add_argument('--worker', choices=('train', 'db-mpi', 'db-sim',
                                             'ov-mpi', 'ov-sim'))
    parser.add_argument('--only', choices=('1', '2', '3'),
                        help='run one part of the table')
    parser.add_argument('--impl', choices=('single', 'ours', 'chainermn'))
    parser.add_argument('--compute', choices=sorted(WORKLOADS),
                        default='matmul')
    args = parser.parse_args(argv)
    args.steps = args.steps or (20 if args.quick else 60)
    args.reps = args.reps or (3 if args.quick else 5)
    args.db_steps = args.db_steps or (3 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 3)
    if args.worker:
        return worker_main(args)

    failed = False
    if args.only in (None, '1'):
        failed = _part_training(args) or failed
    if args.only in (None, '2'):
        failed = _part_double_buffering(args) or failed
    if args.only in (None, '3'):
        failed = _part_overlap(args) or failed
    return 1 if failed else 0


def _part_overlap(args):
    print()
    print('(3) overlap=True, ResNet-50 shapes (25.6 M float32) as 161 '
          'layers with a sleeping backward, 2 ranks, {} steps x {} '
          'reps'.format(args.db_steps, args.reps))
    print('    {:<14} {:>10} {:>10} {:>11} {:>12} {:>9}  {:<8} {}'.format(
        'world', 'backward', 'allreduce', 'plain step', 'overlap step',
        'step/max', 'target', 'verdict'))
    failed = False
    for world, worker, mpi in (('simulator', 'ov-sim', False),
                               ('mpiexec -n 2', 'ov-mpi', True)):
        r = _launch(args, ['--worker', worker], mpi)
        ratio = r['overlap'] / max(r['backward'], r['allreduce'])
        ok = ratio <= OVERLAP_TARGET
        failed = failed or not ok
        print('    {:<14} {:>8.1f}ms {:>8.1f}ms {:>9.1f}ms {:>10.1f}ms '
              '{:>8.2f}x  {:<8} {}'.format(
                  world, r['backward'] * 1e3, r['allreduce'] * 1e3,
                  r['plain'] * 1e3, r['overlap'] * 1e3, ratio,
                  '<={}x'.format(OVERLAP_TARGET), _verdict(ok)))
    return failed


def _part_training(args):
    # Interleaved rounds, median per run: load from other jobs drifts
    # over minutes and would otherwise favour whichever ran last.
    launches = {'single': False, 'ours': True, 'chainermn': True}
    runs = {impl: [] for impl in launches}
    for _ in range(args.rounds):
        for impl, mpi in launches.items():
            runs[impl].append(_launch(
                args, ['--worker', 'train', '--impl', impl], mpi))
    single, ours, theirs = (
        dict(runs[impl][0], samples_per_s=statistics.median(
            r['samples_per_s'] for r in runs[impl])) for impl in launches)
    print('(1) MNIST example training, MLP {}-{}-{}-10, Adam, batch {} per '
          'rank, {} steps x {} reps, median of {} interleaved rounds'.format(
              single['inputs'], UNITS, UNITS, BATCH, args.steps, args.reps,
              args.rounds))
    print('    {:<38} {:>9} {:>9}  {:<19} {:<7} {}'.format(
        'run', 'samples/s', 'vs 1 proc', 'target', 'verdict', 'rounds'))
    base = single['samples_per_s']
    rows = [('one process', single, 'single', '', None),
            ('chainermn_lite naive, mpiexec -n 2', ours, 'ours',
             '>= ChainerMN 7.8.1',
             ours['samples_per_s'] >= theirs['samples_per_s']),
            ('ChainerMN 7.8.1 naive, mpiexec -n 2', theirs, 'chainermn',
             '', None)]
    for name, row, impl, target, ok in rows:
        print('    {:<38} {:>9.0f} {:>8.2f}x  {:<19} {:<7} {}'.format(
            name, row['samples_per_s'], row['samples_per_s'] / base,
            target, '' if ok is None else _verdict(ok),
            ' '.join('{:.0f}'.format(r['samples_per_s'])
                     for r in runs[impl])))

    return not rows[1][4]


def _part_double_buffering(args):
    print()
    print('(2) double_buffering=True, ResNet-50 shapes (25.6 M float32), 2 '
          'ranks, {} steps x {} reps'.format(args.db_steps, args.reps))
    print('    {:<24} {:>10} {:>10} {:>10} {:>10} {:>9}  {:<8} {}'.format(
        'world, compute', 'compute', 'allreduce', 'db update', 'db step',
        'step/max', 'target', 'verdict'))
    failed = False
    for world, worker, mpi, compute in (
            ('simulator', 'db-sim', False, 'matmul'),
            ('mpiexec -n 2', 'db-mpi', True, 'matmul'),
            ('simulator', 'db-sim', False, 'sleep'),
            ('mpiexec -n 2', 'db-mpi', True, 'sleep')):
        r = _launch(args, ['--worker', worker, '--compute', compute], mpi)
        ratio = r['step'] / max(r['compute'], r['allreduce'])
        ok = ratio <= STEP_TARGET
        failed = failed or not ok
        print('    {:<24} {:>8.1f}ms {:>8.1f}ms {:>8.1f}ms {:>8.1f}ms '
              '{:>8.2f}x  {:<8} {}'.format(
                  world + ', ' + compute, r['compute'] * 1e3,
                  r['allreduce'] * 1e3, r['update'] * 1e3, r['step'] * 1e3,
                  ratio, '<={}x'.format(STEP_TARGET), _verdict(ok)))
    return failed


if __name__ == '__main__':
    sys.exit(main())
