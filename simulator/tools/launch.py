"""The one way simulated ranks are launched.

:func:`run` starts a world and runs a function on every rank with its
``COMM_WORLD``; ``python -m simulator``, the pytest plugin, the suite
runner and the fuzzer all launch through it. The rest is what running an
unmodified script needs: ``mpi4py.MPI`` replaced by ``simulator.mpi``
(:func:`install_mpi4py`), a ``__main__`` module that answers per rank
(:class:`RankMainModule`), rank-prefixed output (:class:`RankStream`) and
the script's code (:func:`load_code`).
"""
import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types

from simulator import mpi
from simulator.engine.actors import current
from simulator.engine.ranks import run_ranks
from simulator.engine.world import World

__all__ = ['run', 'RankStream', 'RankMainModule', 'install_mpi4py',
           'simulated_mpi4py', 'load_code']


def run(fn, size, *, nodes=1, send_mode='eager', timeout=None, seed=None):
    """Run ``fn(comm)`` on ``size`` rank threads; return their results.

    ``comm`` is each rank's ``simulator.mpi.COMM_WORLD``. ``nodes`` sets the
    simulated hosts (processor names ``node0``...), ``send_mode`` is
    ``'eager'`` (buffered sends) or ``'rendezvous'`` (a send completes when
    received), ``timeout`` a backstop in seconds, ``seed`` the base of the
    per-rank RandomState (``simulator.current().random``). Re-raises the
    first failure: a rank's own exception (with a note naming the rank) or
    the check that fired (DeadlockError, CollectiveMismatchError...).
    Messages still unreceived at the end raise UnmatchedMessageError.
    """
    world = World(size, nodes, send_mode, seed)
    return run_ranks(world, lambda ctx: fn(mpi.world_comm(ctx)), timeout)


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
        ctx = current()
        namespace = getattr(ctx, 'main_namespace', None)
        if namespace is not None and name in namespace:
            return namespace[name]
        return getattr(self._original, name)


def install_mpi4py():
    """Make ``from mpi4py import MPI`` import ``simulator.mpi``."""
    package = types.ModuleType('mpi4py')
    # The installed mpi4py's folder, when there is one: its pure-Python
    # modules (mpi4py.util.pkl5, util.sync, util.dtlib, run) then import
    # and run over simulator.mpi, as they run over the real MPI module.
    spec = importlib.machinery.PathFinder.find_spec('mpi4py')
    found = list(getattr(spec, 'submodule_search_locations', None) or ())
    package.__path__ = found or [os.path.dirname(mpi.__file__)]
    # Submodules imported over the real MPI module import again over ours.
    for name in [n for n in sys.modules if n.startswith('mpi4py.')]:
        del sys.modules[name]
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


@contextlib.contextmanager
def simulated_mpi4py():
    """``from mpi4py import MPI`` gives ``simulator.mpi`` while inside."""
    saved = {name: module for name, module in sys.modules.items()
             if name == 'mpi4py' or name.startswith('mpi4py.')}
    install_mpi4py()
    try:
        yield
    finally:
        for name in [n for n in sys.modules
                     if n == 'mpi4py' or n.startswith('mpi4py.')]:
            del sys.modules[name]
        sys.modules.update(saved)
