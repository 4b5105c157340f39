"""functions.send / recv round trip: ours vs ChainerMN 7.8.1 vs raw MPI.

One round trip is the model-parallel MLP's pattern on a (128, 1000)
float32 Variable: rank 0 sends x and receives y (forward), rank 1 receives
and sends it back; then backward sends both gradients the other way. That
is four messages, which the "raw" row sends with bare ``Send`` / ``Recv``
on preallocated buffers (the practical limit)::

    mpiexec -n 2 python benchmarks/bench_functions.py [--iters 200]

Under ``python -m simulator -n 2`` the same script times the simulator
(the ChainerMN row is skipped there: it reaches into mpi4py internals).
Figures are per round trip, median of ``--reps`` timed loops taken in
turns (raw, ours, raw, ours...), so that load from other jobs hits both;
the ratio is the median of the per-turn ratios. The messages column counts
the ``Send`` calls of both ranks in one round trip after the first.
"""
import argparse
import statistics
import time
import warnings

import chainer
import numpy as np

import chainermn_lite
from chainermn_lite.testing import counting

SHAPE = (128, 1000)
TARGET_RATIO = 2.0          # issue 18: <= 2x the raw four messages


def _in_turns(fns, iters, reps, comm):
    """Per-round-trip ms of each of ``fns`` ([median], [per turn]), timed
    in turns."""
    for fn in fns:
        for _ in range(max(5, iters // 10)):
            fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, got in zip(fns, times):
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(iters):
                fn()
            got.append((time.perf_counter() - start) / iters * 1e3)
    return times


def _messages(functions, make_comm, mpi_comm):
    """Sends of both ranks in the second round trip of ``functions``."""
    counted = counting(mpi_comm)
    trip = _functions_round_trip(functions, make_comm(counted))
    trip()
    before = len(counted.sends)
    trip()
    return mpi_comm.allreduce(len(counted.sends) - before)


def _functions_round_trip(functions, comm):
    """One forward+backward through send/recv of ``functions``."""
    x = chainer.Variable(np.ones(SHAPE, np.float32))
    grad = np.ones(SHAPE, np.float32)

    def rank0():
        phi = functions.send(x, comm, rank=1)
        y = functions.recv(comm, rank=1, delegate_variable=phi)
        y.grad = grad
        y.backward()

    def rank1():
        h = functions.recv(comm, rank=0)
        functions.send(h, comm, rank=0).backward()

    return rank0 if comm.rank == 0 else rank1


def _raw_round_trip(mpi_comm):
    buf = np.ones(SHAPE, np.float32)
    out = np.empty_like(buf)
    rank = mpi_comm.Get_rank()

    def run():
        for step in range(2):       # forward, then backward
            if rank == 0:
                mpi_comm.Send(buf, dest=1, tag=step)
                mpi_comm.Recv(out, source=1, tag=step)
            else:
                mpi_comm.Recv(out, source=0, tag=step)
                mpi_comm.Send(buf, dest=0, tag=step)
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--iters', type=int, default=200)
    parser.add_argument('--reps', type=int, default=5)
    args = parser.parse_args(argv)
    from mpi4py import MPI
    mpi_comm = MPI.COMM_WORLD
    if mpi_comm.Get_size() != 2:
        raise SystemExit('run with 2 ranks')
    simulated = type(mpi_comm).__module__.startswith('simulator.')
    def make_ours(comm):
        return chainermn_lite.create_communicator('naive', mpi_comm=comm)

    raw, ours = _in_turns(
        [_raw_round_trip(mpi_comm),
         _functions_round_trip(chainermn_lite.functions,
                               make_ours(mpi_comm))],
        args.iters, args.reps, mpi_comm)
    rows = [('raw Send/Recv, 4 messages', raw, 4),
            ('chainermn_lite.functions', ours,
             _messages(chainermn_lite.functions, make_ours, mpi_comm))]
    if simulated:
        rows.append(('ChainerMN 7.8.1 functions', None, None))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            import chainermn

            def make_theirs(comm):
                return chainermn.create_communicator('naive', mpi_comm=comm)
            theirs = _in_turns(
                [_functions_round_trip(chainermn.functions,
                                       make_theirs(mpi_comm))],
                max(20, args.iters // 5), args.reps, mpi_comm)[0]
            rows.append(('ChainerMN 7.8.1 functions', theirs, None))
    if mpi_comm.Get_rank() == 0:
        world = 'simulator' if simulated else 'mpiexec -n 2'
        print('send/recv forward+backward round trip, {} float32, {}'.format(
            SHAPE, world))
        print('  {:28s} {:>10s} {:>9s} {:>9s}'.format(
            'row', 'median', 'vs raw', 'messages'))
        for name, ms, messages in rows:
            if ms is None:
                print('  {:28s} {:>10s}'.format(name, 'n/a'))
                continue
            print('  {:28s} {:7.3f} ms {:8.2f}x {:>9s}'.format(
                name, statistics.median(ms),
                statistics.median(ms) / statistics.median(raw),
                '-' if messages is None else str(messages)))
        ratio = statistics.median(o / r for o, r in zip(ours, raw))
        print('target: chainermn_lite <= {}x raw (median of per-turn '
              'ratios {:.2f}x): {}'.format(
                  TARGET_RATIO, ratio,
                  'PASS' if ratio <= TARGET_RATIO else 'MISS'))


if __name__ == '__main__':
    main()
