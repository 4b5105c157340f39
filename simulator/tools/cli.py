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
``--sizes 2,4,8`` runs it at each size and prints a scaling table. In
virtual time the simulator first executes itself again with address-space
randomisation off, so that its runs charge the same code the same CPU
time (:mod:`simulator.tools.layout`; ``--no-fixed-layout``: not).

``--schedule SEED`` makes every choice a real MPI may make differently
(wildcard matches, Waitany, Test...) from SEED, the same in every run;
``--explore K`` runs K schedules (``--explore all``: every distinct one,
up to ``--bound``) and reports the first that fails or whose output
differs, with the command that replays it (see
:mod:`simulator.tools.explore`).

This module reads the options and settles the address layout, importing
nothing heavy: :mod:`simulator.tools.command` (the engine, NumPy: ~0.5 s)
runs the script after that, so that a re-execution does not pay for it
twice.
"""
import argparse
import importlib
import sys

from simulator.tools.layout import fixed_layout

__all__ = ['main']


class _Choices:
    """An option's values, read from the module that defines them when
    argparse first checks a given value or prints help (the option's
    metavar keeps argparse from reading them earlier): importing the
    engine before the layout is settled would cost every re-execution."""

    def __init__(self, module, name):
        self._module, self._name = module, name

    def _values(self):
        return getattr(importlib.import_module(self._module), self._name)

    def __contains__(self, value):
        return value in self._values()

    def __iter__(self):
        return iter(self._values())


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m simulator',
        description='Run an mpi4py script on simulated rank threads.')
    parser.add_argument('-n', '-np', '--np', dest='size', type=int,
                        help='number of ranks')
    parser.add_argument('--nodes', type=int, default=None,
                        help='simulated hosts (processor names node0..; '
                        'default 1, or as the --machine places ranks)')
    parser.add_argument('--send-mode', default='openmpi', metavar='MODE',
                        choices=_Choices('simulator.engine.world',
                                         'SEND_MODES'),
                        help='%(choices)s (default %(default)s)')
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
    time.add_argument('--compute-estimate', metavar='E', default=None,
                      choices=_Choices('simulator.engine.clock',
                                       'ESTIMATES'),
                      help='%(choices)s: charge each stretch of compute '
                      'the median of its recent repetitions at the same '
                      'code locations (median, the default: steady from '
                      'run to run) or as measured (raw)')
    time.add_argument('--all-cores', action='store_true',
                      help='let the rank threads run on every core (faster '
                      'for ranks that compute outside the interpreter lock; '
                      'by default they share one core, where their CPU '
                      'times are steadier from run to run)')
    time.add_argument('--fixed-layout', default=None,
                      action=argparse.BooleanOptionalAction,
                      help='run with address-space randomisation off (as '
                      'setarch -R; the simulator executes itself once more, '
                      'a few tens of ms), the default in virtual time: the '
                      'CPU time of the same code moves with where libraries '
                      'and buffers land, so predictions repeat more closely '
                      'from run to run')
    time.add_argument('--timeline', default=None, metavar='FILE.json',
                      help='write a Chrome trace (Perfetto) of the run')
    time.add_argument('--sizes', default=None, metavar='N,N,...',
                      help='run at each size; print a scaling table')
    order = parser.add_argument_group('schedules')
    order.add_argument('--schedule', default=None,
                       help='SEED or choices:I,J,..: replay one schedule')
    order.add_argument('--explore', default=None, metavar='K|all',
                       help='run K schedules, or all (up to --bound)')
    order.add_argument('--bound', type=int, default=None,
                       help='most schedules --explore all runs')
    order.add_argument('--ignore', action='append', default=[],
                       metavar='REGEX', help='output --explore ignores')
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument('-m', dest='module', action='store_true',
                      help='run a module (like python -m)')
    kind.add_argument('-c', dest='command', action='store_true',
                      help='run the program given as a string (like '
                      'python -c)')
    parser.add_argument('target', help='script path, module name, or with '
                        '-c the program')
    parser.add_argument('args', nargs=argparse.REMAINDER)
    return parser


def _virtual_time(options):
    """Whether the run is in virtual time: asked for, or implied by an
    option that only means something there."""
    return bool(options.virtual_time or options.machine or options.timeline
                or options.compute_scale is not None or options.sizes
                or options.compute_estimate or options.all_cores
                or options.fixed_layout)


def _settle_layout(options, parser, argv_given):
    """In virtual time, unless ``--no-fixed-layout``: run with the
    address layout fixed (executes the process again, see
    :func:`~simulator.tools.layout.fixed_layout`)."""
    asked = options.fixed_layout
    if not options.virtual_time or asked is False:
        return
    if argv_given:
        # The process's own command line is what runs again, and a
        # program calling main(argv) has a command line of its own.
        if asked:
            parser.error('--fixed-layout works on the command line '
                         '(python -m simulator), not in main(argv)')
        return
    if not fixed_layout() and asked:
        print('simulator: --fixed-layout: this system cannot turn '
              'address-space randomisation off; running with it on',
              file=sys.stderr)


def _sizes(options, parser):
    if options.sizes is None:
        if options.size is None:
            parser.error('-n N (or --sizes N,N,...) is required')
        if options.size < 1:
            parser.error('-n takes a positive number of ranks, got {}'.format(
                options.size))
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
    options.virtual_time = _virtual_time(options)
    _settle_layout(options, parser, argv_given)
    # python -m simulator put the working directory first on sys.path for
    # itself; the program's python would put its own entry there instead.
    options.replace_path0 = not argv_given and not sys.flags.safe_path
    from simulator.tools.command import run_command
    return run_command(options, parser, argv, sizes)
