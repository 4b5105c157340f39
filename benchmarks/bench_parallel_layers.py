"""Partitioned layers vs one process on the same total work.

    mpiexec -n 2 python benchmarks/bench_parallel_layers.py

(also runs under ``python -m simulator -n 2``, where the ranks are threads
of one process and the timings mean little). For each layer it times
forward + backward on the ranks together, then the plain Chainer layer on
the whole batch in rank 0 alone (the other ranks sleep meanwhile, so the
single process has a core to itself), and prints the speed-up. It also
counts the bytes each rank sends for halo exchange beside the analytic
halo volume, and the collectives a stack of two VecparLinear layers does.
One BLAS thread per rank: run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
(``scripts/env.sh`` sets them).
"""
import argparse
import time

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np

from chainermn_lite.functions import halo
from chainermn_lite.functions import vecpar
from chainermn_lite.links import HaloConvolution2D
from chainermn_lite.links import VecparLinear
from chainermn_lite.parallel import buffer_collectives
from chainermn_lite.parallel.grid import tile_bounds


def world():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def best_time(step, repeat):
    """Fastest of ``repeat`` runs of ``step()``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)


def wait_quietly(comm):
    """Meet the other ranks without spinning on a core."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(0.002)


def timed_both_ways(comm, dist_step, full_step, repeat):
    """(distributed seconds, one-process seconds) of one step."""
    dist_step()  # warm up (allocations, first-touch)
    wait_quietly(comm)
    dist = best_time(dist_step, repeat)
    wait_quietly(comm)
    full = None
    if comm.Get_rank() == 0:
        full_step()
        full = best_time(full_step, repeat)
    wait_quietly(comm)
    return comm.bcast(max(comm.allgather(dist))), comm.bcast(full)


def fwd_bwd(link, x):
    """One forward + backward, the input's gradient included (as for a
    layer inside a network: halo gradients go back to their owners)."""
    def step():
        y = link(chainer.Variable(x))
        y.grad = np.ones_like(y.array)
        link.cleargrads()
        y.backward()
    return step


def bench_halo(comm, args, rows):
    size = comm.Get_size()
    grid = (1, size)
    batch, channels, hw, k = 8, 64, 128, 3
    rs = np.random.RandomState(0)
    x = rs.randn(batch, channels, hw, hw).astype(np.float32)
    W = (rs.randn(channels, channels, k, k) * 0.05).astype(np.float32)
    (h0, h1), (w0, w1) = tile_bounds((hw, hw), grid, comm.Get_rank())
    tile = np.ascontiguousarray(x[:, :, h0:h1, w0:w1])
    dist = HaloConvolution2D(comm, grid, channels, channels, k, pad=1,
                             initialW=W)
    full = L.Convolution2D(channels, channels, k, pad=1, initialW=W)
    sent = count_halo_bytes(fwd_bwd(dist, tile))
    # Analytic: a 3x3 'same' convolution needs k // 2 columns from each
    # neighbour; every rank but the two at the ends has two neighbours.
    neighbours = 1 if size == 2 else 2
    analytic = 2 * neighbours * batch * channels * hw * (k // 2) * 4
    t_dist, t_full = timed_both_ways(comm, fwd_bwd(dist, tile),
                                     fwd_bwd(full, x), args.repeat)
    rows.append(('HaloConvolution2D 8x64x128x128 3x3 grid 1x{}'.format(
        size), t_full, t_dist))
    max_sent = max(comm.allgather(sent))
    return ('halo exchange bytes sent per rank per step (fwd + bwd): '
            'measured {:,} (max over ranks), analytic {:,}'.format(
                max_sent, analytic))


def count_halo_bytes(step):
    """Bytes this rank sends in halo messages during ``step()``."""
    sent = [0]
    exchange = halo._exchange

    def counting(mpi_comm, tag, outgoing, incoming):
        sent[0] += sum(buf.nbytes for _, buf in outgoing)
        return exchange(mpi_comm, tag, outgoing, incoming)

    halo._exchange = counting
    try:
        step()
    finally:
        halo._exchange = exchange
    return sent[0]


def count_collectives(step):
    """{name: calls} of vecpar's collectives during ``step()``."""
    calls = {}
    originals = {name: getattr(buffer_collectives, name) for name in
                 ('reduce_scatter_rows', 'allgatherv_rows',
                  'allreduce_sum')}

    def wrap(name, fn):
        def counted(*a, **k):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)
        return counted

    for name, fn in originals.items():
        setattr(vecpar.buffer_collectives, name, wrap(name, fn))
    try:
        step()
    finally:
        for name, fn in originals.items():
            setattr(vecpar.buffer_collectives, name, fn)
    return calls


def bench_vecpar(comm, args, rows):
    batch, n = 256, args.features
    rs = np.random.RandomState(1)
    W = (rs.randn(n, n) / np.sqrt(n)).astype(np.float32)
    x = rs.randn(batch, n).astype(np.float32)
    dist = VecparLinear(comm, n, n, initialW=W)
    i0, i1 = dist.in_bounds
    x_mine = np.ascontiguousarray(x[:, i0:i1])
    full = L.Linear(n, n, initialW=W)
    t_dist, t_full = timed_both_ways(comm, fwd_bwd(dist, x_mine),
                                     fwd_bwd(full, x), args.repeat)
    rows.append(('VecparLinear batch {} {}->{}'.format(batch, n, n),
                 t_full, t_dist))
    del dist, full, W
    small = chainer.ChainList(VecparLinear(comm, 64, 64),
                              VecparLinear(comm, 64, 64))

    def stack_step():
        y = small[1](F.relu(small[0](x_mine[:, :small[0].W.shape[1]])))
        y.grad = np.ones_like(y.array)
        y.backward()

    calls = count_collectives(stack_step)
    return ('two stacked VecparLinear, one forward + backward: {} '
            'reduce-scatter (forward), {} allgather (backward), {} other'
            .format(calls.get('reduce_scatter_rows', 0),
                    calls.get('allgatherv_rows', 0),
                    calls.get('allreduce_sum', 0)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--features', type=int, default=8192)
    args = parser.parse_args()
    comm = world()
    rows, notes = [], []
    notes.append(bench_halo(comm, args, rows))
    notes.append(bench_vecpar(comm, args, rows))
    if comm.Get_rank() != 0:
        return
    print('{} ranks, forward + backward, best of {}'.format(
        comm.Get_size(), args.repeat))
    print('{:<46} {:>10} {:>10} {:>8}'.format('layer', '1 proc s',
                                             'ranks s', 'speedup'))
    for name, full, dist in rows:
        print('{:<46} {:>10.3f} {:>10.3f} {:>7.2f}x'.format(
            name, full, dist, full / dist))
    for note in notes:
        print(note)


if __name__ == '__main__':
    main()
