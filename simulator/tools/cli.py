"""``python -m simulator -n N [--nodes K] [--send-mode M] script.py args``.

Runs an unmodified mpi4py script once per rank thread: ``simulator.mpi``
stands in for ``mpi4py.MPI`` in this process, each rank executes the
script in a fresh namespace with ``__name__ == '__main__'``, and every
line a rank prints is prefixed with ``[rank]``. The exit status is
non-zero when a rank failed or a check fired.

``--virtual-time`` (implied by ``--machine``, ``--compute-scale``,
``--compute-estimate``, ``--all-cores``, ``--fixed-layout``,
``--timeline`` and ``--sizes``) runs it in virtual time on a described machine
(:mod:`simulator.engine.clock`) and prints where the time went;
``--sizes 2,4,8`` runs it at each size and prints a scaling table.

``--schedule SEED`` makes every choice a real MPI may make differently
(wildcard matches, Waitany, Test...) from SEED, the same in every run;
``--explore K`` runs K schedules (``--explore all``: every distinct one,
up to ``--bound``) and reports the first that fails or whose output
differs, with the command that replays it (see
:mod:`simulator.tools.explore`).
"""
import argparse
import builtins
import os
import sys
import traceback

from simulator.engine.actors import current
from simulator.engine.clock import ESTIMATES, VirtualTime
from simulator.engine.modules import register_private_module
from simulator.engine.netmodel import DEFAULT_MACHINE, load_machine
from simulator.engine.world import SEND_MODES
from simulator.tools.layout import fixed_layout
from simulator.tools.explore import (DEFAULT_BOUND, explore_script,
                                     parse_schedule)
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
    parser.add_argument('--send-mode', choices=SEND_MODES, default='eager')
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
    time.add_argument('--compute-estimate', choices=ESTIMATES,
                      default=None, help='charge each stretch of compute '
                      'the median of its recent repetitions at the same '
                      'code locations (median, the default: steady from '
                      'run to run) or as measured (raw)')
    time.add_argument('--all-cores', action='store_true',
                      help='let the rank threads run on every core (faster '
                      'for ranks that compute outside the interpreter lock; '
                      'by default they share one core, where their CPU '
                      'times are steadier from run to run)')
    time.add_argument('--fixed-layout', action='store_true',
                      help='run with address-space randomisation off (as '
                      'setarch -R; the simulator executes itself once more, '
                      'about 0.7 s): the CPU time of the same code moves '
                      'with where libraries and buffers land, so predictions '
                      'repeat more closely from run to run')
    time.add_argument('--timeline', default=None, metavar='FILE.json',
                      help='write a Chrome trace (Perfetto) of the run')
    time.add_argument('--sizes', default=None, metavar='N,N,...',
                      help='run at each size; print a scaling table')
    order = parser.add_argument_group('schedules')
    order.add_argument('--schedule', type=parse_schedule, default=None,
                       help='SEED or choices:I,J,..: replay one schedule')
    order.add_argument('--explore', default=None, metavar='K|all',
                       help='run K schedules, or all (up to --bound)')
    order.add_argument('--bound', type=int, default=DEFAULT_BOUND,
                       help='most schedules --explore all runs')
    order.add_argument('--ignore', action='append', default=[],
                       metavar='REGEX', help='output --explore ignores')
    parser.add_argument('-m', dest='module', action='store_true',
                        help='run a module (like python -m)')
    parser.add_argument('target', help='script path or module name')
    parser.add_argument('args', nargs=argparse.REMAINDER)
    return parser


def _clock(options):
    """A VirtualTime for one run, or None with virtual time off."""
    if not (options.virtual_time or options.machine or options.timeline
            or options.compute_scale is not None or options.sizes
            or options.compute_estimate or options.all_cores
            or options.fixed_layout):
        return None
    machine = load_machine(options.machine or DEFAULT_MACHINE)
    return VirtualTime(machine, options.compute_scale,
                       timeline=bool(options.timeline),
                       estimate=options.compute_estimate or ESTIMATES[0],
                       one_core=not options.all_cores)


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
    argv_given = argv is not None
    argv = sys.argv[1:] if argv is None else list(argv)
    options = parser.parse_args(argv)
    sizes = _sizes(options, parser)
    for name in options.private_module:
        register_private_module(name)
    try:
        _clock(options)
    except (ValueError, OSError) as error:   # a bad machine description
        parser.error(str(error))
    if options.fixed_layout:
        if argv_given:
            # The process's own command line is what runs again.
            parser.error('--fixed-layout works on the command line '
                         '(python -m simulator), not in main(argv)')
        if not fixed_layout():
            print('simulator: --fixed-layout: this system cannot turn '
                  'address-space randomisation off; running with it on',
                  file=sys.stderr)
    code, base = load_code(options.target, options.module)
    install_mpi4py()
    sys.argv = [base['__file__'] or options.target] + options.args
    if not options.module:
        sys.path.insert(0, os.path.dirname(base['__file__']))
    if options.explore is not None:
        return _explore(options, argv, code, base, sizes[0])
    if options.sizes is None:
        status, clock = _run_script(options, code, base, sizes[0])
        if clock is not None:
            print(clock.summary())
            if options.timeline:
                write_timeline(clock, options.timeline)
                print('timeline: {}'.format(options.timeline))
        return status
    rows = []
    # Only the table is printed: the ranks' own output goes nowhere. One
    # sink for all runs: libraries keep the stream they first saw (Chainer's
    # PrintReport binds sys.stdout as a default argument).
    # The first size runs twice: libraries' first-use costs (lazy imports,
    # set-up), paid once per process, would fall on the first run only.
    with open(os.devnull, 'w') as sink:
        for i, size in enumerate([sizes[0]] + sizes):
            status, clock = _run_script(options, code, base, size, sink)
            if status:
                print('simulator: the run at {} ranks failed (exit {}); run '
                      'it with -n {} to see why'.format(size, status, size),
                      file=sys.stderr)
                return status
            if i:
                rows.append((size, clock))
    print(scaling_table(rows))
    return 0


def _explore(options, argv, code, base, size):
    """``--explore``: run the script under many schedules."""
    runs = options.explore
    if runs != 'all':
        try:
            runs = int(runs)
        except ValueError:
            raise SystemExit('simulator: --explore wants a number of '
                             "schedules or 'all', got {!r}".format(runs)) \
                from None

    def replay(spec):
        # The user's command, the exploration options replaced.
        head = argv[:len(argv) - len(options.args) - 1]
        keep, skip = [], False
        for word in head:
            if skip:
                skip = False
            elif word in ('--explore', '--bound', '--ignore', '--schedule'):
                skip = True
            elif not word.startswith(('--explore=', '--bound=', '--ignore=',
                                      '--schedule=')):
                keep.append(word)
        return (['python', '-m', 'simulator'] + keep + ['--schedule', spec,
                options.target] + options.args)

    # One pair of streams for every run: libraries keep the sys.stdout
    # they first saw (Chainer's PrintReport does).
    streams = (RankStream(_Redirect(), True, tty=True),
               RankStream(_Redirect(), True))

    def run_once(schedule, out, err):
        streams[0]._stream.target, streams[1]._stream.target = out, err
        return _run_script(options, code, base, size, schedule=schedule,
                           streams=streams)[0]

    return explore_script(run_once, replay, runs, bound=options.bound,
                          ignore=options.ignore, out=sys.stdout)


class _Redirect:
    """A stream writing to ``target``, which may change between runs."""

    target = None

    def write(self, text):
        return self.target.write(text)

    def flush(self):
        self.target.flush()


def _run_script(options, code, base, size, sink=None, schedule=None,
                streams=None):
    """Run the script on ``size`` ranks: (exit status, VirtualTime).

    ``schedule`` (default: ``--schedule``'s) orders the run's choices;
    then the ranks' lines come out at the end in rank order, so that a
    seed gives the same output byte for byte, whatever the timing.
    ``streams``: the RankStreams to print through (and report to).
    """
    clock = _clock(options)
    nodes = options.nodes
    if nodes is None:
        nodes = 1 if clock is None else min(size,
                                            clock.machine.nodes_for(size))
    elif options.sizes is not None:
        nodes = min(nodes, size)    # --sizes 1,2,4 --nodes 2
    if schedule is None:
        schedule = options.schedule
    real_out, real_err = report = sys.stdout, sys.stderr
    if streams is None:
        hold = schedule is not None
        out = RankStream(sink or sys.stdout, hold, tty=True)
        err = RankStream(sink or sys.stderr, hold)
    else:
        out, err = streams
        report = out._stream, err._stream
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
            try:
                run(rank_main, size, nodes=nodes,
                    send_mode=options.send_mode, timeout=options.timeout,
                    seed=options.seed, clock=clock, schedule=schedule)
            finally:
                out.release()
                err.release()
    except SystemExit as stop:
        sys.stdout, sys.stderr = real_out, real_err
        code = stop.code
        notes = ' ({})'.format('; '.join(stop.__notes__)) \
            if getattr(stop, '__notes__', None) else ''
        # sys.exit('message'): Python prints the message and exits 1.
        report[1].write('{}{}\n'.format(
            'simulator: exit status {}'.format(code)
            if isinstance(code, int) else code, notes))
        report[1].flush()
        return (code if isinstance(code, int) else 1), clock
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = real_out, real_err
        report[0].flush()
        traceback.print_exception(error, file=report[1])
        return getattr(error, 'errorcode', None) or 1, clock
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        sys.modules['__main__'] = real_main
    return 0, clock
