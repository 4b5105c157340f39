"""``python -m simulator -n N [--nodes K] [--send-mode M] script.py args``.

``--schedule SEED`` makes every choice a real MPI may make differently
(wildcard matches, Waitany, Test...) from SEED, the same in every run;
``--explore K`` runs K schedules (``--explore all``: every distinct one,
up to ``--bound``) and reports the first that fails or whose output
differs, with the command that replays it (see
:mod:`simulator.tools.explore`).

Runs an unmodified mpi4py script once per rank thread: ``simulator.mpi``
stands in for ``mpi4py.MPI`` in this process, each rank executes the
script in a fresh namespace with ``__name__ == '__main__'``, and every
line a rank prints is prefixed with ``[rank]``. The exit status is
non-zero when a rank failed or a check fired.
"""
import argparse
import builtins
import os
import sys
import traceback

from simulator.engine.actors import current
from simulator.engine.world import SEND_MODES
from simulator.tools.explore import (DEFAULT_BOUND, explore_script,
                                     parse_schedule)
from simulator.tools.launch import (RankMainModule, RankStream,
                                    install_mpi4py, load_code, run)

__all__ = ['main']


def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m simulator',
        description='Run an mpi4py script on simulated rank threads.')
    parser.add_argument('-n', '-np', '--np', dest='size', type=int,
                        required=True, help='number of ranks')
    parser.add_argument('--nodes', type=int, default=1,
                        help='simulated hosts (processor names node0..)')
    parser.add_argument('--send-mode', choices=SEND_MODES, default='eager')
    parser.add_argument('--schedule', type=parse_schedule, default=None,
                        help='SEED or choices:I,J,..: replay one schedule')
    parser.add_argument('--explore', default=None, metavar='K|all',
                        help='run K schedules, or all (up to --bound)')
    parser.add_argument('--bound', type=int, default=DEFAULT_BOUND,
                        help='most schedules --explore all runs')
    parser.add_argument('--ignore', action='append', default=[],
                        metavar='REGEX', help='output --explore ignores')
    parser.add_argument('--timeout', type=float, default=None,
                        help='backstop seconds for the whole run')
    parser.add_argument('--seed', type=int, default=None,
                        help='base seed of the per-rank RandomState')
    parser.add_argument('-m', dest='module', action='store_true',
                        help='run a module (like python -m)')
    parser.add_argument('target', help='script path or module name')
    parser.add_argument('args', nargs=argparse.REMAINDER)
    return parser


def main(argv=None):
    """Entry point; returns the process exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    options = _parser().parse_args(argv)
    code, base = load_code(options.target, options.module)
    install_mpi4py()
    sys.argv = [base['__file__'] or options.target] + options.args
    if not options.module:
        sys.path.insert(0, os.path.dirname(base['__file__']))
    if options.explore is None:
        hold = options.schedule is not None
        return _run_once(options, code, base, options.schedule,
                         RankStream(sys.stdout, hold),
                         RankStream(sys.stderr, hold))
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
    streams = RankStream(_Redirect(), True), RankStream(_Redirect(), True)

    def run_once(schedule, out, err):
        streams[0]._stream.target, streams[1]._stream.target = out, err
        return _run_once(options, code, base, schedule, *streams)

    return explore_script(run_once, replay, runs, bound=options.bound,
                          ignore=options.ignore, out=sys.stdout)


class _Redirect:
    """A stream writing to ``target``, which may change between runs."""

    target = None

    def write(self, text):
        return self.target.write(text)

    def flush(self):
        self.target.flush()


def _run_once(options, code, base, schedule, out, err):
    """Run the script once on every rank, printing through the RankStreams
    ``out`` and ``err``; return its exit status. Under a schedule they
    hold the lines until the end and write them in rank order, so that a
    seed gives the same output byte for byte, whatever the timing."""
    real_out, real_err = out._stream, err._stream
    saved_out, saved_err = sys.stdout, sys.stderr
    real_main = sys.modules.get('__main__')
    sys.modules['__main__'] = RankMainModule(real_main)
    sys.stdout, sys.stderr = out, err

    def rank_main(comm):
        namespace = dict(base, __name__='__main__', __builtins__=builtins)
        current().main_namespace = namespace
        try:
            exec(code, namespace)
        except SystemExit as stop:
            if stop.code not in (None, 0):
                raise
        finally:
            rank = comm.Get_rank()
            out.flush_rank(rank)
            err.flush_rank(rank)

    try:
        try:
            run(rank_main, options.size, nodes=options.nodes,
                send_mode=options.send_mode, timeout=options.timeout,
                seed=options.seed, schedule=schedule)
        finally:
            out.release()
            err.release()
    except SystemExit as stop:
        sys.stdout, sys.stderr = saved_out, saved_err
        status = stop.code
        if isinstance(status, int):
            return status
        # sys.exit('message'): Python prints the message and exits 1.
        notes = ' ({})'.format('; '.join(stop.__notes__)) \
            if getattr(stop, '__notes__', None) else ''
        real_err.write('{}{}\n'.format(status, notes))
        real_err.flush()
        return 1
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = saved_out, saved_err
        real_out.flush()
        traceback.print_exception(error, file=real_err)
        return getattr(error, 'errorcode', None) or 1
    finally:
        sys.stdout, sys.stderr = saved_out, saved_err
        sys.modules['__main__'] = real_main
    return 0
