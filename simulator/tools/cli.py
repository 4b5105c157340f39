"""``python -m simulator -n N [--nodes K] [--send-mode M] script.py args``.

Runs an unmodified mpi4py script once per rank thread: ``simulator.mpi``
stands in for ``mpi4py.MPI`` in this process, each rank executes the
script in a fresh namespace with ``__name__ == '__main__'``, and every
line a rank prints is prefixed with ``[rank]``. The exit status is
non-zero when a rank failed or a check fired.

``--virtual-time`` (implied by ``--machine``, ``--compute-scale``,
``--timeline`` and ``--sizes``) runs it in virtual time on a described
machine (:mod:`simulator.engine.clock`) and prints where the time went;
``--sizes 2,4,8`` runs it at each size and prints a scaling table.
"""
import argparse
import builtins
import os
import sys
import traceback

from simulator.engine.actors import current
from simulator.engine.clock import VirtualTime
from simulator.engine.modules import register_private_module
from simulator.engine.netmodel import DEFAULT_MACHINE, load_machine
from simulator.tools.launch import (RankMainModule, RankStream,
                                    captured_streams,
                                    install_mpi4py, load_code, run)
from simulator.tools.timeline import scaling_table, write_timeline

__all__ = ['main']


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m simulator',
        description='Run an mpi4py script on simulated rank threads.')
    parser.add_argument('-n', '-np', '--np', dest='size', type=int,
                        help='number of ranks')
    parser.add_argument('--nodes', type=int, default=None,
                        help='simulated hosts (processor names node0..; '
                        'default 1, or as the --machine places ranks)')
    parser.add_argument('--send-mode', choices=('eager', 'rendezvous'),
                        default='eager')
    parser.add_argument('--timeout', type=float, default=None,
                        help='backstop seconds for the whole run')
    parser.add_argument('--seed', type=int, default=None,
                        help='base seed of the per-rank RandomState')
    parser.add_argument('--private-module', action='append', default=[],
                        metavar='PKG', help='execute this module or package '
                        'once per rank even if installed (repeatable)')
    time = parser.add_argument_group('virtual time')
    time.add_argument('--virtual-time', action='store_true',
                      help='run in virtual time; print where it went')
    time.add_argument('--machine', default=None, metavar='FILE',
                      help='machine description (TOML/JSON, or a shipped '
                      'name: shared_memory, gpu_cluster)')
    time.add_argument('--compute-scale', type=float, default=None,
                      metavar='X', help='factor on measured compute '
                      '(0.05: a device 20x faster than this CPU)')
    time.add_argument('--timeline', default=None, metavar='FILE.json',
                      help='write a Chrome trace (Perfetto) of the run')
    time.add_argument('--sizes', default=None, metavar='N,N,...',
                      help='run at each size; print a scaling table')
    parser.add_argument('-m', dest='module', action='store_true',
                        help='run a module (like python -m)')
    parser.add_argument('target', help='script path or module name')
    parser.add_argument('args', nargs=argparse.REMAINDER)
    return parser


def _clock(options):
    """A VirtualTime for one run, or None with virtual time off."""
    if not (options.virtual_time or options.machine or options.timeline
            or options.compute_scale is not None or options.sizes):
        return None
    machine = load_machine(options.machine or DEFAULT_MACHINE)
    return VirtualTime(machine, options.compute_scale,
                       timeline=bool(options.timeline))


def _sizes(options, parser):
    if options.sizes is None:
        if options.size is None:
            parser.error('-n N (or --sizes N,N,...) is required')
        return [options.size]
    try:
        sizes = [int(n) for n in options.sizes.split(',')]
    except ValueError:
        parser.error('--sizes takes sizes like 2,4,8, got {!r}'.format(
            options.sizes))
    if not sizes or min(sizes) < 1:
        parser.error('--sizes must be positive, got {!r}'.format(
            options.sizes))
    return sizes


def main(argv=None):
    """Entry point; returns the process exit status."""
    parser = _parser()
    options = parser.parse_args(argv)
    sizes = _sizes(options, parser)
    for name in options.private_module:
        register_private_module(name)
    try:
        _clock(options)
    except (ValueError, OSError) as error:   # a bad machine description
        parser.error(str(error))
    code, base = load_code(options.target, options.module)
    install_mpi4py()
    sys.argv = [base['__file__'] or options.target] + options.args
    if not options.module:
        sys.path.insert(0, os.path.dirname(base['__file__']))
    if options.sizes is None:
        status, clock = _run_script(options, code, base, sizes[0])
        if clock is not None:
            print(clock.summary())
            if options.timeline:
                write_timeline(clock, options.timeline)
                print('timeline: {}'.format(options.timeline))
        return status
    rows = []
    for size in sizes:
        # Only the table is printed: the ranks' own output goes nowhere.
        with open(os.devnull, 'w') as sink:
            status, clock = _run_script(options, code, base, size, sink)
        if status:
            print('simulator: the run at {} ranks failed (exit {}); run it '
                  'with -n {} to see why'.format(size, status, size),
                  file=sys.stderr)
            return status
        rows.append((size, clock))
    print(scaling_table(rows))
    return 0


def _run_script(options, code, base, size, sink=None):
    """Run the script on ``size`` ranks: (exit status, VirtualTime)."""
    clock = _clock(options)
    nodes = options.nodes
    if nodes is None:
        nodes = 1 if clock is None else min(size,
                                            clock.machine.nodes_for(size))
    out = RankStream(sink or sys.stdout)
    err = RankStream(sink or sys.stderr)
    real_out, real_err = sys.stdout, sys.stderr
    real_main = sys.modules.get('__main__')
    sys.modules['__main__'] = RankMainModule(real_main)
    sys.stdout, sys.stderr = out, err

    def rank_main(comm):
        namespace = dict(base, __name__='__main__', __builtins__=builtins)
        current().main_namespace = namespace
        try:
            exec(code, namespace)
        finally:
            rank = comm.Get_rank()
            out.flush_rank(rank)
            err.flush_rank(rank)

    try:
        with captured_streams({real_out: out, real_err: err}):
            run(rank_main, size, nodes=nodes,
                send_mode=options.send_mode, timeout=options.timeout,
                seed=options.seed, clock=clock)
    except SystemExit as stop:
        sys.stdout, sys.stderr = real_out, real_err
        code = stop.code
        notes = ' ({})'.format('; '.join(stop.__notes__)) \
            if getattr(stop, '__notes__', None) else ''
        # sys.exit('message'): Python prints the message and exits 1.
        real_err.write('{}{}\n'.format(
            'simulator: exit status {}'.format(code)
            if isinstance(code, int) else code, notes))
        real_err.flush()
        return (code if isinstance(code, int) else 1), clock
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = real_out, real_err
        real_out.flush()
        traceback.print_exception(error, file=real_err)
        return getattr(error, 'errorcode', None) or 1, clock
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        sys.modules['__main__'] = real_main
    return 0, clock
