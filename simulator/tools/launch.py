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
import errno
import functools
import gc
import io
import os
import sys
import threading
import types

from simulator import mpi
from simulator.engine.actors import current
from simulator.engine.clock import patch_time
from simulator.engine.patches import module_class, wrap
from simulator.engine.program import command_code, load_code
from simulator.engine.rank_sys import rank_module
from simulator.engine.ranks import run_ranks
from simulator.engine.schedule import Schedule
from simulator.engine.world import World
from simulator.mpi.timing import boundary_cost, call_boundaries
from simulator.tools.standin import make_package

__all__ = ['run', 'RankStream', 'RankMainModule', 'install_mpi4py',
           'terminal_descriptors', 'captured_streams',
           'simulated_mpi4py', 'load_code', 'command_code']


def run(fn, size, *, nodes=1, send_mode='openmpi', timeout=None, seed=None,
        clock=None, schedule=None):
    """Run ``fn(comm)`` on ``size`` rank threads; return their results.

    ``comm`` is each rank's ``simulator.mpi.COMM_WORLD``. ``nodes`` sets the
    simulated hosts (processor names ``node0``...), ``send_mode`` is
    ``'openmpi'`` (a standard send is buffered up to Open MPI 5's eager
    limit, 4016 bytes on one node, and completes when received above),
    ``'eager'`` (buffered sends), ``'rendezvous'`` (a send completes when
    received) or ``'mixed'`` (either, per message, as the schedule draws;
    schedule 0 unless one is given), ``timeout`` a backstop in seconds,
    ``seed`` the base of the per-rank RandomState
    (``simulator.current().random``). Re-raises the first failure: a
    rank's own exception (with a note naming the rank) or the check that
    fired (DeadlockError, CollectiveMismatchError...).
    Messages still unreceived at the end raise UnmatchedMessageError.
    ``clock``: a :class:`~simulator.engine.clock.VirtualTime` runs the
    world in virtual time (read its ``summary()`` afterwards).
    ``schedule`` (an int seed or a
    :class:`~simulator.engine.schedule.Schedule`) makes every choice a
    real MPI may make differently (wildcard matches, Waitany, Test...)
    from that schedule, the same in every run; None keeps the default.
    """
    if schedule is None and send_mode == 'mixed':
        schedule = Schedule(0)      # the draws need a seed
    elif schedule is not None and not isinstance(schedule, Schedule):
        schedule = Schedule(schedule)
    world = World(size, nodes, send_mode, seed, schedule)
    main = lambda ctx: fn(mpi.world_comm(ctx))  # noqa: E731
    if clock is None:
        return run_ranks(world, main, timeout)
    clock.attach(world, boundary_cost())
    with call_boundaries(), patch_time():
        return run_ranks(world, main, timeout)


class RankStream:
    """A text stream that prefixes each rank's lines with ``[rank] ``.

    Rank threads share ``sys.stdout``; this proxy keeps one partial line
    per rank so lines from different ranks never interleave. With
    ``hold`` the lines are kept until :meth:`release` writes them in rank
    order (each rank's in its own order). ``tty``: what :meth:`isatty`
    answers a rank: Open MPI's mpiexec gives each process's stdout a
    pseudo-terminal, whatever its own output is, and its stderr a pipe.
    A rank that closes it closes its own (its later writes raise, as on
    a closed file); the others, and the launcher, keep writing.
    """

    def __init__(self, stream, hold=False, tty=False):
        self._stream = stream
        self._tty = tty
        self._lock = threading.Lock()
        self._partial = {}
        self._held = [] if hold else None
        self._closed = set()        # ranks that closed their stream

    def write(self, text):
        ctx = current()
        if ctx is None:
            return self._stream.write(text)
        _check_open(ctx.rank in self._closed)
        with self._lock:
            pending = self._partial.get(ctx.rank, '') + text
            *lines, rest = pending.split('\n')
            self._partial[ctx.rank] = rest
            if lines:
                self._emit(ctx.rank, ''.join(
                    '[{}] {}\n'.format(ctx.rank, line) for line in lines))
        return len(text)

    def _emit(self, rank, text):
        if self._held is None:
            self._stream.write(text)
        else:
            self._held.append((rank, len(self._held), text))

    def flush_rank(self, rank):
        """Write out a rank's unfinished last line."""
        with self._lock:
            rest = self._partial.pop(rank, '')
            if rest:
                self._emit(rank, '[{}] {}\n'.format(rank, rest))
        self._stream.flush()

    def flush_all(self):
        """Write out every rank's unfinished last line (ranks a Spawn
        started end outside the launcher's per-rank code)."""
        with self._lock:
            ranks = sorted(self._partial)
        for rank in ranks:
            self.flush_rank(rank)

    def release(self):
        """Write the held lines, rank by rank (and keep holding)."""
        with self._lock:
            held, self._held = self._held, []
        if held:
            self._stream.write(''.join(t for _, _, t in sorted(held)))
            self._stream.flush()

    def flush(self):
        ctx = current()
        if ctx is not None:
            _check_open(ctx.rank in self._closed)
        self._stream.flush()

    def close(self):
        ctx = current()
        if ctx is None:
            return self._stream.close()
        if ctx.rank not in self._closed:
            self.flush_rank(ctx.rank)   # as closing a file flushes it
            self._closed.add(ctx.rank)

    @property
    def closed(self):
        ctx = current()
        return self._stream.closed if ctx is None else \
            ctx.rank in self._closed

    def isatty(self):
        _check_open(self.closed)
        return self._tty if current() is not None else False

    # isinstance(sys.stdout, io.TextIOWrapper) holds in a process
    # (libraries test it before reconfigure()); type() still tells.
    __class__ = property(lambda self: io.TextIOWrapper)

    def __repr__(self):
        return _text_wrapper_repr(self, 'w')

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _text_wrapper_repr(stream, mode):
    # what a process's own sys.stdout/stderr/stdin print as
    return '<_io.TextIOWrapper name={!r} mode={!r} encoding={!r}>'.format(
        stream.name, mode, stream.encoding)


def _check_open(closed):
    if closed:
        raise ValueError('I/O operation on closed file.')


class RankInput:
    """``sys.stdin`` as ``mpiexec`` gives it: rank 0 reads the launcher's
    standard input (forwarded through a pipe: never a terminal to the
    program), every other rank reads ``/dev/null``: end of input at once
    (``input()`` raises EOFError), where a shared stream would let ranks
    take each other's lines."""

    def __init__(self, stream):
        self._stream = stream
        self._empty = None
        self._closed = set()        # ranks that closed their input

    def _source(self):
        ctx = current()
        if ctx is not None:
            _check_open(ctx.rank in self._closed)
        if ctx is None or ctx.rank == 0:
            return self._stream
        if self._empty is None:
            # one for all: it holds nothing; decoded as the launcher's
            self._empty = open(os.devnull, encoding=getattr(
                self._stream, 'encoding', None), errors=getattr(
                self._stream, 'errors', None))
        return self._empty

    def read(self, *args):
        return self._source().read(*args)

    def readline(self, *args):
        return self._source().readline(*args)

    def readlines(self, *args):
        return self._source().readlines(*args)

    def __iter__(self):
        return iter(self._source())

    def isatty(self):
        return False if current() is not None else self._stream.isatty()

    @property
    def name(self):
        return getattr(self._stream, 'name', '<stdin>')  # fd 0's, each rank

    __class__ = RankStream.__dict__['__class__']

    def __repr__(self):
        return _text_wrapper_repr(self, 'r')

    def close(self):
        ctx = current()
        if ctx is None:
            return self._stream.close()
        self._closed.add(ctx.rank)      # the rank's own input only

    @property
    def closed(self):
        ctx = current()
        return self._stream.closed if ctx is None else \
            ctx.rank in self._closed

    def close_empty(self):
        """Close the stand-in for /dev/null (after the run)."""
        if self._empty is not None:
            self._empty.close()
            self._empty = None

    def __getattr__(self, name):
        return getattr(self._source(), name)


@contextlib.contextmanager
def captured_streams(replacements):
    """While inside, a stream the program captured before the run (a
    function's default argument, a module global: Chainer's PrintReport
    and ProgressBar take ``out=sys.stdout`` at import time) is replaced
    by its entry in ``replacements`` ({stream: RankStream}), so their
    lines get the rank prefix too."""
    sys_dict = types.ModuleType.__dict__['__dict__'].__get__(sys)
    module_dicts = {id(types.ModuleType.__dict__['__dict__'].__get__(m))
                    for m in list(sys.modules.values())
                    if isinstance(m, types.ModuleType)}
    undo = []
    for old, new in replacements.items():
        for holder in gc.get_referrers(old):
            if isinstance(holder, dict) and id(holder) in module_dicts:
                if holder is sys_dict:
                    continue        # sys.stdout is the launcher's business
                for key, value in list(holder.items()):
                    if value is old:
                        holder[key] = new
                        undo.append(functools.partial(
                            holder.__setitem__, key, old))
            elif isinstance(holder, (tuple, dict)):
                # A function's __defaults__ / __kwdefaults__ holds it.
                for function in gc.get_referrers(holder):
                    if isinstance(function, types.FunctionType):
                        for name in ('__defaults__', '__kwdefaults__'):
                            if getattr(function, name) is holder:
                                undo += _swap_in_defaults(function, name,
                                                          old, new)
    try:
        yield
    finally:
        for fn in reversed(undo):
            fn()


@contextlib.contextmanager
def terminal_descriptors(out, err):
    """While inside, ``os.isatty`` of file descriptor 1 or 2 in a rank
    answers what ``out``'s and ``err``'s ``isatty`` answer it (Open MPI's
    pseudo-terminal on stdout, a pipe on stderr), and of 0 False (a pipe
    or /dev/null), whatever the launcher's own descriptors are; and
    ``os.get_terminal_size`` of them answers as there: 0 columns and 0
    lines for the pseudo-terminal (Open MPI never sets its size, so
    ``shutil`` falls back to its default), ``ENOTTY`` for the others."""
    def rank_terminal(fd):
        # None: not one of the rank's own three descriptors
        if current() is None or type(fd) is not int or fd not in (0, 1, 2):
            return None
        return fd != 0 and (out if fd == 1 else err)._tty

    def make_isatty(real):
        def isatty(fd):
            terminal = rank_terminal(fd)
            return real(fd) if terminal is None else terminal
        return isatty

    def make_get_terminal_size(real):
        def get_terminal_size(fd=1):
            terminal = rank_terminal(fd)
            if terminal is None:
                return real(fd)
            if not terminal:
                raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY))
            return os.terminal_size((0, 0))
        return get_terminal_size
    undo = [wrap(os, 'isatty', make_isatty),
            wrap(os, 'get_terminal_size', make_get_terminal_size)]
    try:
        yield
    finally:
        for fn in reversed(undo):
            fn()


def _swap_in_defaults(function, name, old, new):
    values = getattr(function, name)
    if isinstance(values, tuple) and any(v is old for v in values):
        setattr(function, name, tuple(new if v is old else v
                                      for v in values))
    elif isinstance(values, dict) and any(v is old
                                          for v in values.values()):
        setattr(function, name, {k: new if v is old else v
                                 for k, v in values.items()})
    else:
        return []
    return [functools.partial(setattr, function, name, values)]


@module_class
class RankMainModule(types.ModuleType):
    # ``sys.modules['__main__']`` that resolves names per rank. (Said in
    # a comment: a class docstring would answer for the script's
    # ``__main__.__doc__``.)
    #
    # Each rank runs the script in its own namespace, so a class defined
    # in it exists once per rank. Pickle finds classes by
    # ``__main__.<name>``: this module answers with the calling rank's
    # object, so objects of script-defined classes can be sent (and
    # unpickled as the receiving rank's class, as with separate
    # processes). A rank's ``setattr`` and ``del`` on it change the rank's
    # globals, as on a process's ``__main__``.

    def __init__(self, original):
        super().__init__('__main__')
        types.ModuleType.__setattr__(self, '_original', original)
        # Left to each rank's namespace (the script's docstring, loader,
        # spec), not the blank ones every new module carries.
        own = types.ModuleType.__dict__['__dict__'].__get__(self)
        for name in ('__doc__', '__package__', '__loader__', '__spec__'):
            del own[name]

    @property
    def __doc__(self):
        return self.__getattr__('__doc__')

    @property
    def __dict__(self):
        # The calling rank's namespace, as a process's __main__.__dict__
        # (runpy-style launchers run the program in it).
        namespace = _rank_namespace()
        if namespace is None:
            return types.ModuleType.__dict__['__dict__'].__get__(self)
        return namespace

    def __getattr__(self, name):
        namespace = _rank_namespace()
        if namespace is not None and name in namespace:
            return namespace[name]
        return getattr(self._original, name)

    def __setattr__(self, name, value):
        namespace = _rank_namespace()
        if namespace is None:
            types.ModuleType.__setattr__(self, name, value)
        else:
            namespace[name] = value

    def __delattr__(self, name):
        namespace = _rank_namespace()
        if namespace is None:
            types.ModuleType.__delattr__(self, name)
        elif namespace.pop(name, _MISSING) is _MISSING:
            raise AttributeError(
                "'module' object has no attribute {!r}".format(name))


_MISSING = object()


def _rank_namespace():
    # The script runpy runs in the rank (mpi4py.futures, python -m
    # mpi4py) while it runs, else the rank's own script.
    swapped = rank_module('__main__')
    if swapped is not None and current() is not None:
        return types.ModuleType.__dict__['__dict__'].__get__(swapped)
    return getattr(current(), 'main_namespace', None)


def install_mpi4py():
    """Make ``from mpi4py import MPI`` import ``simulator.mpi`` (and
    ``import mpi4py`` the stand-in package of :mod:`.standin`)."""
    make_package()


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
