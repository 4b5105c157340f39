"""``python -m simulator -n N [--nodes K] [--send-mode M] script.py args``.

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
    parser.add_argument('--send-mode', choices=('eager', 'rendezvous'),
                        default='eager')
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
    options = _parser().parse_args(argv)
    code, base = load_code(options.target, options.module)
    install_mpi4py()
    sys.argv = [base['__file__'] or options.target] + options.args
    if not options.module:
        sys.path.insert(0, os.path.dirname(base['__file__']))
    out, err = RankStream(sys.stdout), RankStream(sys.stderr)
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
        run(rank_main, options.size, nodes=options.nodes,
            send_mode=options.send_mode, timeout=options.timeout,
            seed=options.seed)
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
        return code if isinstance(code, int) else 1
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = real_out, real_err
        real_out.flush()
        traceback.print_exception(error, file=real_err)
        return getattr(error, 'errorcode', None) or 1
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        sys.modules['__main__'] = real_main
    return 0
