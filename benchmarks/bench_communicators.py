"""Communicator benchmarks: ours vs raw mpi4py vs ChainerMN 7.8.1.

Run:  mpiexec -n 2 python benchmarks/bench_communicators.py [--quick]
      python benchmarks/bench_communicators.py --simulator-only [--quick]

Prints one table of medians (each row's time is the slowest rank's median)
with the ratio to the raw mpi4py limit, the target and PASS/FAIL, then the
simulator row (4 simulated ranks vs four memcpys of the same bytes).
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import _models

import chainermn_lite

CHUNK = 4 * 1024 * 1024
WORLD = MPI.COMM_WORLD


def timed_together(fns, reps, warmup=2):
    """Slowest rank's median seconds of each of ``fns``, run in turns
    (a, b, c, a, b, c, ...) so that a shared machine's changing load hits
    every variant alike and their ratios stay meaningful."""
    samples = [[] for _ in fns]
    turns = list(zip(fns, samples))
    for rep in range(warmup + reps):
        # Each repetition starts one variant later: whichever runs right
        # after another (and finds the cache full of its data) changes.
        shift = rep % len(turns)
        for fn, got in turns[shift:] + turns[:shift]:
            WORLD.Barrier()
            t0 = time.perf_counter()
            fn()
            if rep >= warmup:
                got.append(time.perf_counter() - t0)
    return [WORLD.allreduce(statistics.median(got), op=MPI.MAX)
            for got in samples]


def raw_chunked_allreduce(buf):
    """The practical limit: in-place Allreduce of a packed buffer in 4 MiB
    pieces (no packing, no scaling)."""
    step = CHUNK // buf.itemsize

    def run():
        for s in range(0, buf.size, step):
            WORLD.Allreduce(MPI.IN_PLACE, buf[s:s + step], op=MPI.SUM)
    return run


def raw_chunked_mean(buf):
    """The floor of a *mean* on top of raw_chunked_allreduce: each 4 MiB
    piece also scaled by 1/size just before its Allreduce (the pass no
    mean avoids, where it is cheapest: see _strategies)."""
    step = CHUNK // buf.itemsize
    inv = buf.dtype.type(1.0 / WORLD.Get_size())

    def run():
        for s in range(0, buf.size, step):
            piece = buf[s:s + step]
            np.multiply(piece, inv, out=piece)
            WORLD.Allreduce(MPI.IN_PLACE, piece, op=MPI.SUM)
    return run


def pingpong(send, recv):
    """A round trip rank 0 -> 1 -> 0 (other ranks idle)."""
    rank = WORLD.Get_rank()

    def run():
        if rank == 0:
            send(1)
            recv(1)
        elif rank == 1:
            recv(0)
            send(0)
    return run


def pingpongs(pairs, reps):
    """One-way latency of each (send, recv): half the median round trip,
    batches of 20 round trips taken in turns."""
    batch = 20
    runs = [pingpong(s, r) for s, r in pairs]

    def batched(run):
        def go():
            for _ in range(batch):
                run()
        return go
    times = timed_together([batched(r) for r in runs],
                           max(1, reps // batch), warmup=1)
    return [t / batch / 2 for t in times]


def chainermn_comm(name):
    try:
        import chainermn
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return chainermn.create_communicator(name, mpi_comm=WORLD)


class Table:
    def __init__(self):
        self.rows = []

    def add(self, what, ours, raw, chainermn, target, unit='ms'):
        self.rows.append((what, ours, raw, chainermn, target, unit))

    def show(self):
        scale = {'ms': 1e3, 'us': 1e6}
        print('{:<38} {:>10} {:>10} {:>11} {:>7} {:>7}  {}'.format(
            'benchmark (median, slowest rank)', 'ours', 'raw mpi4py',
            'ChainerMN', 'ratio', 'target', 'verdict'))
        for what, ours, raw, cmn, target, unit in self.rows:
            s = scale[unit]
            ratio = ours / raw
            if target is None:      # a reference row: no verdict
                ok, tgt = None, '-'
            elif target[0] == 'x':
                ok = ratio <= float(target[1:])
                tgt = '<=' + target[1:] + 'x'
            else:
                ok = ours * s <= float(target[1:])
                tgt = '<={}{}'.format(target[1:], unit)
            print('{:<38} {:>8.2f}{} {:>8.2f}{} {:>9}{} {:>6.2f}x {:>7}  '
                  '{}'.format(what, ours * s, unit, raw * s, unit,
                              '-' if cmn is None else
                              '{:.2f}'.format(cmn * s), unit, ratio, tgt,
                              '' if ok is None else
                              'PASS' if ok else 'FAIL'))


def fresh_grads_mean(comm, link_fn):
    """``comm.multi_node_mean_grad`` as a training loop sees it: Chainer's
    ``cleargrads`` + backward hand over new grad arrays at every step, so
    the grads are never the previous call's (two preallocated sets given
    to the params in turns stand for them: no allocation is timed)."""
    model = link_fn()
    params = list(model.params())
    sets = [[p.grad.copy() for p in params] for _ in range(2)]

    def run():
        sets.reverse()
        for p, g in zip(params, sets[0]):
            p.grad = g
        comm.multi_node_mean_grad(model)
    return run


def bench_mean_grad(table, link_fn, label, target, reps):
    ours = chainermn_lite.create_communicator('flat', mpi_comm=WORLD)
    naive = chainermn_lite.create_communicator('naive', mpi_comm=WORLD)
    model = link_fn()
    packed = np.concatenate([p.grad.reshape(-1) for p in model.params()])
    cmn = chainermn_comm('naive')
    fns = [raw_chunked_allreduce(packed),
           lambda: ours.multi_node_mean_grad(model),
           lambda: naive.multi_node_mean_grad(model),
           raw_chunked_mean(packed.copy()),
           fresh_grads_mean(ours, link_fn)]
    if cmn is not None:
        fns.append(lambda: cmn.multi_node_mean_grad(model))
    raw, t_flat, t_naive, t_floor, t_fresh, *rest = timed_together(
        fns, reps)
    t_cmn = rest[0] if rest else None
    table.add('mean_grad {} flat'.format(label), t_flat, raw, t_cmn, target)
    # What a training loop gets (the row above: grads that persist).
    table.add('  flat, new grad arrays every step', t_fresh, raw, t_cmn,
              target)
    table.add('mean_grad {} naive'.format(label), t_naive, raw, t_cmn,
              target)
    table.add('  (raw + 1/size scale: a mean\'s floor)', t_floor, raw, None,
              None)
    return ours


def bench_bcast_data(table, reps):
    ours = chainermn_lite.create_communicator('flat', mpi_comm=WORLD)
    model = _models.resnet50_link()
    packed = np.concatenate([p.data.reshape(-1) for p in model.params()])
    cmn = chainermn_comm('naive')
    fns = [lambda: WORLD.Bcast(packed, root=0),
           lambda: ours.bcast_data(model)]
    if cmn is not None:
        fns.append(lambda: cmn.bcast_data(model))
    raw, t_ours, *rest = timed_together(fns, reps)
    t_cmn = rest[0] if rest else None
    table.add('bcast_data ResNet-50 shapes', t_ours, raw, t_cmn, 'x1.10')


def bench_sendrecv(table, nbytes, reps, target, unit, watchdog=None):
    ours = chainermn_lite.create_communicator('flat', mpi_comm=WORLD,
                                              watchdog=watchdog)
    x = np.ones(nbytes // 8, dtype=np.float64)
    raw_buf = np.empty_like(x)
    pairs = [(lambda peer: WORLD.Send(x, dest=peer, tag=1),
              lambda peer: WORLD.Recv(raw_buf, source=peer, tag=1)),
             (lambda peer: ours.send(x, peer, 1),
              lambda peer: ours.recv(peer, 1))]
    cmn = None if watchdog else chainermn_comm('naive')
    if cmn is not None:
        pairs.append((lambda peer: cmn.send(x, peer, 1),
                      lambda peer: cmn.recv(peer, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        raw, t_ours, *rest = pingpongs(pairs, reps)
    t_cmn = rest[0] if rest else None
    label = '8 B' if nbytes < 1024 else '{} MiB'.format(nbytes >> 20)
    if watchdog:
        label += ', watchdog on'
    table.add('send/recv one-way {}'.format(label), t_ours, raw, t_cmn,
              target, unit)


def bench_simulator(reps):
    """4 simulated ranks' multi_node_mean_grad vs four 102 MB memcpys,
    measured in turns in the same world (rank 0 copies while the other
    ranks wait in a Barrier), so that load changes hit both alike."""
    import simulator

    models = [_models.resnet50_link(seed=r) for r in range(4)]
    src = np.concatenate([p.grad.reshape(-1) for p in models[0].params()])
    dst = np.empty_like(src)

    def memcpys():
        for _ in range(4):
            np.copyto(dst, src)

    def body(comm):
        c = chainermn_lite.create_communicator('flat', mpi_comm=comm)
        model = models[comm.Get_rank()]
        times, copies = [], []
        for _ in range(reps + 1):
            comm.Barrier()
            t0 = time.perf_counter()
            c.multi_node_mean_grad(model)
            comm.Barrier()
            times.append(time.perf_counter() - t0)
            if comm.Get_rank() == 0:
                t0 = time.perf_counter()
                memcpys()
                copies.append(time.perf_counter() - t0)
        return statistics.median(times[1:]), copies[1:]

    results = simulator.run(body, 4)
    sim = max(t for t, _ in results)
    copy = statistics.median(results[0][1])
    ratio = sim / copy
    print('{:<38} {:>8.2f}ms {:>8.2f}ms {:>11} {:>6.2f}x {:>7}  {}'.format(
        'simulator: 4-rank mean_grad ResNet-50', sim * 1e3, copy * 1e3,
        '(4 memcpy)', ratio, '<=2x', 'PASS' if ratio <= 2 else 'FAIL'))
    return ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--no-simulator', action='store_true')
    parser.add_argument('--simulator-only', action='store_true',
                        help='only the simulator row (no mpiexec needed)')
    parser.add_argument('--only', choices=('mean_grad', 'bcast_data', 'p2p'),
                        help='run just these rows (no simulator)')
    parser.add_argument('--reps', type=int, default=None)
    args = parser.parse_args()
    reps = args.reps or (5 if args.quick else 15)
    if args.simulator_only:
        bench_simulator(reps)
        return
    table = Table()
    if args.only in (None, 'mean_grad'):
        bench_mean_grad(table, _models.resnet50_link, 'ResNet-50', 'x1.05',
                        reps)
        bench_mean_grad(table, _models.mlp_link, 'MLP 784-1000-1000-10',
                        'x1.2', reps * 4)
    if args.only in (None, 'bcast_data'):
        bench_bcast_data(table, reps)
    if args.only not in (None, 'p2p'):
        if WORLD.Get_rank() == 0:
            table.show()
        return
    # issue 18: the floor of an 8 B send is one raw Send/Recv
    bench_sendrecv(table, 8, 400 if args.quick else 3000, 'x1.5', 'us')
    # The watchdog's cost per call: compare with the row above.
    bench_sendrecv(table, 8, 400 if args.quick else 3000, 'x1.5', 'us',
                   watchdog=600)
    bench_sendrecv(table, 64 << 20, reps, 'x1.3', 'ms')
    rank = WORLD.Get_rank()
    if rank == 0:
        print('mpiexec -n {} ranks, {}'.format(WORLD.Get_size(),
                                               MPI.Get_library_version()
                                               .splitlines()[0]))
        table.show()
    if not args.no_simulator and args.only is None:
        # One rank runs the simulated world; the other sleeps (not spinning
        # in a Barrier, which would steal its core).
        done = WORLD.Ibarrier() if rank != 0 else None
        if rank == 0:
            bench_simulator(reps)
            WORLD.Ibarrier().Wait()
        else:
            while not done.Test():
                time.sleep(0.01)
    sys.stdout.flush()


if __name__ == '__main__':
    main()
