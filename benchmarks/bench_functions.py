"""functions.send / recv round trip: ours vs ChainerMN 7.8.1 vs raw MPI.

One round trip is the model-parallel MLP's pattern on a (128, 1000)
float32 Variable: rank 0 sends x and receives y (forward), rank 1 receives
and sends it back; then backward sends both gradients the other way. That
is four messages, which the "raw" row sends with bare ``Send`` / ``Recv``
on preallocated buffers (the practical limit)::

    mpiexec -n 2 python benchmarks/bench_functions.py [--iters 200]

Under ``python -m simulator -n 2`` the same script times the simulator
(the ChainerMN row is skipped there: it reaches into mpi4py internals).
Figures are per round trip, median of ``--reps`` timed loops.
"""
import argparse
import statistics
import time
import warnings

import chainer
import numpy as np

import chainermn_lite

SHAPE = (128, 1000)
TARGET_MS = 0.5


def _loop(fn, iters, reps, comm):
    for _ in range(max(5, iters // 10)):
        fn()
    times = []
    for _ in range(reps):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - start) / iters)
    return statistics.median(times) * 1e3


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
    ours = chainermn_lite.create_communicator('naive', mpi_comm=mpi_comm)
    rows = [('raw Send/Recv, 4 messages',
             _loop(_raw_round_trip(mpi_comm), args.iters, args.reps,
                   mpi_comm)),
            ('chainermn_lite.functions',
             _loop(_functions_round_trip(chainermn_lite.functions, ours),
                   args.iters, args.reps, mpi_comm))]
    if simulated:
        rows.append(('ChainerMN 7.8.1 functions', None))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            import chainermn
            theirs = chainermn.create_communicator('naive',
                                                   mpi_comm=mpi_comm)
            rows.append(('ChainerMN 7.8.1 functions',
                         _loop(_functions_round_trip(chainermn.functions,
                                                     theirs),
                               max(20, args.iters // 5), args.reps,
                               mpi_comm)))
    if mpi_comm.Get_rank() == 0:
        world = 'simulator' if simulated else 'mpiexec -n 2'
        print('send/recv forward+backward round trip, {} float32, {}'.format(
            SHAPE, world))
        raw = rows[0][1]
        for name, ms in rows:
            if ms is None:
                print('  {:28s} {:>9s}'.format(name, 'n/a'))
                continue
            print('  {:28s} {:7.3f} ms  {:5.1f}x raw'.format(name, ms,
                                                            ms / raw))
        ok = rows[1][1] <= TARGET_MS
        print('target: chainermn_lite <= {} ms: {}'.format(
            TARGET_MS, 'PASS' if ok else 'MISS'))


if __name__ == '__main__':
    main()
