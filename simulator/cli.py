"""``python -m simulator -n N [--nodes K] [--send-mode M] script.py args``.

Runs an unmodified mpi4py script once per rank thread: ``simulator.mpi``
stands in for ``mpi4py.MPI`` in this process, each rank executes the
script in a fresh namespace with ``__name__ == '__main__'``, and every
line a rank prints is prefixed with ``[rank]``. The exit status is
non-zero when a rank failed or a check fired.
"""
import argparse
import builtins
import importlib.util
import os
import sys
import threading
import traceback
import types

__all__ = ['main', 'RankStream', 'RankMainModule', 'install_mpi4py',
           'load_code']


class RankStream:
    """A text stream that prefixes each rank's lines with ``[rank] ``.

    Rank threads share ``sys.stdout``; this proxy keeps one partial line
    per rank so lines from different ranks never interleave.
    """

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()
        self._partial = {}

    def write(self, text):
        from simulator.world import current
        ctx = current()
        if ctx is None:
            return self._stream.write(text)
        with self._lock:
            pending = self._partial.get(ctx.rank, '') + text
            *lines, rest = pending.split('\n')
            self._partial[ctx.rank] = rest
            if lines:
                self._stream.write(''.join(
                    '[{}] {}\n'.format(ctx.rank, line) for line in lines))
        return len(text)

    def flush_rank(self, rank):
        """Write out a rank's unfinished last line."""
        with self._lock:
            rest = self._partial.pop(rank, '')
            if rest:
                self._stream.write('[{}] {}\n'.format(rank, rest))
        self._stream.flush()

    def flush(self):
        self._stream.flush()

    def isatty(self):
        return False

    def __getattr__(self, name):
        return getattr(self._stream, name)


class RankMainModule(types.ModuleType):
    """``sys.modules['__main__']`` that resolves names per rank.

    Each rank runs the script in its own namespace, so a class defined in
    it exists once per rank. Pickle finds classes by ``__main__.<name>``:
    this module answers with the calling rank's object, so objects of
    script-defined classes can be sent (and unpickled as the receiving
    rank's class, as with separate processes).
    """

    def __init__(self, original):
        super().__init__('__main__')
        self._original = original

    def __getattr__(self, name):
        from simulator.world import current
        ctx = current()
        namespace = getattr(ctx, 'main_namespace', None)
        if namespace is not None and name in namespace:
            return namespace[name]
        return getattr(self._original, name)


def install_mpi4py():
    """Make ``from mpi4py import MPI`` import ``simulator.mpi``."""
    from simulator import mpi
    package = types.ModuleType('mpi4py')
    package.__path__ = []
    package.MPI = mpi
    package.__version__ = '4.1.2'
    package.rc = types.SimpleNamespace(initialize=True, threads=True,
                                       thread_level='multiple',
                                       finalize=None, fast_reduce=True,
                                       recv_mprobe=True, errors='exception')
    sys.modules['mpi4py'] = package
    sys.modules['mpi4py.MPI'] = mpi


def load_code(target, module):
    """(code object, initial globals) for a script path or module name."""
    if module:
        spec = importlib.util.find_spec(target)
        if spec is None:
            raise SystemExit('simulator: no module named {!r}'.format(
                target))
        if spec.submodule_search_locations is not None:
            target += '.__main__'
            spec = importlib.util.find_spec(target)
        code = spec.loader.get_code(target)
        base = {'__file__': spec.origin, '__spec__': spec,
                '__package__': target.rpartition('.')[0],
                '__loader__': spec.loader}
        return code, base
    path = os.path.abspath(target)
    with open(path, 'rb') as f:
        source = f.read()
    code = compile(source, path, 'exec')
    return code, {'__file__': path, '__spec__': None, '__package__': None,
                  '__loader__': None}


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
    import simulator
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
        from simulator.world import current
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
        simulator.run(rank_main, options.size, nodes=options.nodes,
                      send_mode=options.send_mode, timeout=options.timeout,
                      seed=options.seed)
    except SystemExit as stop:
        sys.stdout, sys.stderr = real_out, real_err
        code = stop.code
        if isinstance(code, int):
            return code
        # sys.exit('message'): Python prints the message and exits 1.
        notes = ' ({})'.format('; '.join(stop.__notes__)) \
            if getattr(stop, '__notes__', None) else ''
        real_err.write('{}{}\n'.format(code, notes))
        real_err.flush()
        return 1
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = real_out, real_err
        real_out.flush()
        traceback.print_exception(error, file=real_err)
        return getattr(error, 'errorcode', None) or 1
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        sys.modules['__main__'] = real_main
    return 0
