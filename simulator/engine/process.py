"""Private process state per rank: a rank is a process.

SimGrid's SMPI gives each simulated process its own copy of the program's
globals ("privatization"); this module does the same for the globals a
Python program keeps per process. While a world runs (:func:`privatized`,
entered by :func:`simulator.engine.ranks.run_ranks`, so by every launcher)
these answer per calling rank, from a :class:`ProcessState` built lazily
on the rank's :class:`~simulator.engine.ranks.RankContext`:

- ``sys.argv`` (read, mutated or reassigned): each rank starts from the
  launcher's argv;
- ``sys.stdout``, ``sys.stderr``, ``sys.stdin`` (and ``sys.__stdout__``...)
  and ``sys.path``: each rank starts from the process's, and what it
  assigns stays its own, for ``print()`` and ``import`` too (see
  :mod:`simulator.engine.rank_sys`);
- ``os.environ`` (and ``os.getenv``, ``os.environb``, ``os.getenvb``):
  a copy per rank taken at its first
  use, with the variables Open MPI's ``mpiexec`` gives each process
  (``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_LOCAL_RANK``,
  ``PMIX_RANK``... see :func:`launcher_environ`: programs pick their GPU
  by them; and the launch's ``OMPI_COMMAND``, ``OMPI_ARGV``... taken from
  ``sys.orig_argv``, which ``python -m simulator`` sets to the program's
  own command line);
  ``subprocess`` children of a rank (and ``os.system``'s shell) get
  that rank's environment; what a library's module code sets there at
  its import (scikit-learn's ``KMP_DUPLICATE_LIB_OK``) is every rank's
  and the process's, as each process's import would set it;
- NumPy's global ``RandomState`` functions (``numpy.random.seed``,
  ``rand``...) and Python's ``random`` functions: one generator per rank,
  so the same seed gives every rank the numbers a process would get, and
  unseeded draws differ between ranks (derived from the world's seed);
- registered library objects (:func:`register_private_object`, e.g.
  Chainer's ``global_config``, ``multiprocessing``'s default context),
  counters (:func:`register_private_counter`: ``multiprocessing``'s
  process numbers) and mappings
  (:func:`register_private_mapping`, e.g. CuPy's per-device generators,
  NumPy's print options),
  applied when their module is imported, so the simulator imports none;
- the ``warnings`` filters (see :mod:`simulator.engine.rank_warnings`);
- signal handlers, and the signals a rank sends itself (see
  :mod:`simulator.engine.rank_signals`);
- POSIX record locks (``fcntl.lockf``; see
  :mod:`simulator.engine.rank_locks`);
- the program's own ``hash()`` of strings (salted per rank, as each
  process's own hash secret; see :mod:`simulator.engine.rank_hash`);
- ``os._exit(n)`` ends the calling rank with status n (see
  :class:`ProcessExit`), not the simulator's process;
- the program's own ``atexit.register``/``unregister`` (not the
  libraries'): kept per rank and run, last registered first, in the rank
  when its program ends (returns, ``sys.exit``, an exception; not
  ``os._exit``), so a handler sees its rank and may still call MPI;
- ``socket.gethostname()``, ``os.uname().nodename`` and
  ``platform.uname().node`` / ``platform.node()`` in a world of several
  simulated nodes: the rank's node (``MPI.Get_processor_name()``), so
  code that groups ranks by host sees the nodes;
- ``time.process_time()`` (and ``_ns``): the CPU time of the rank's own
  threads (its main thread and those it started), not of every rank's,
  so a rank that times its own work with it sees what its process would;
- the program's own ``os.getpid()``: the kernel id of the rank's main
  thread, the same in all its threads and unique per rank, so names and
  seeds made from it differ between ranks as between processes, and a
  log record's ``process`` (the libraries' other calls get the process's
  id, which they look the process up by);
- the working directory and umask (:func:`own_working_directory`).

Outside a rank everything is the process's own object, unchanged. User
modules are made private by :mod:`simulator.engine.modules`; calls that
stay process-wide are reported by :mod:`simulator.engine.shared_state`.
"""
import _posixsubprocess
import atexit
import logging
import multiprocessing.process
import importlib._bootstrap as _bootstrap
import inspect
import itertools
import collections.abc
import ctypes
import os
import platform
import random
import socket
import subprocess
import sys
import threading
import time
import traceback
import types

import numpy as np

from simulator.engine import (rank_builtins, rank_hash, rank_locks,
                              rank_logging, rank_signals, rank_sys,
                              rank_threading, rank_warnings)
from simulator.engine.actors import RankExit, current
from simulator.engine.libraries import (at_library_import, caller_is_user,
                                        find_spec_without, is_library_file,
                                        then_after_exec)
from simulator.engine.patches import (MODULE_CLASSES, PatchSet, module_class,
                                      wrap)
from simulator.engine.trace import program_frames, user_site
from simulator.errors import SimulatorError

__all__ = ['ProcessState', 'ProcessExit', 'privatized', 'process_state',
           'register_private_object', 'register_private_mapping',
           'register_module_dispatch',
           'register_private_counter',
           'rank_seed', 'real_sys_dict', 'PrivateSys',
           'launch_variables', 'launcher_environ', 'local_rank_order',
           'spawned_environ',
           'run_exit_handlers']

# Installed by privatized(); _install is defined below.
_patches = PatchSet(lambda: _install())


def rank_seed(world_seed, rank, stream):
    """A 128-bit seed for one of a rank's generators (``stream`` keeps
    NumPy's and Python's apart)."""
    base = [rank, stream] if world_seed is None else [world_seed, rank,
                                                       stream]
    return np.random.SeedSequence(base).generate_state(4)


class ProcessState:
    """The process-global state of one rank, each piece built on first
    use (4,096 ranks that never touch it cost nothing)."""

    __slots__ = ('context', '_argv', '_environ', '_environ_seen',
                 '_python_random', '_hash_salt', 'objects', 'modules',
                 'exit_handlers')

    def __init__(self, context):
        self.context = context
        self._argv = None
        self._environ = None
        self._python_random = None
        self._hash_salt = None
        self.objects = {}       # id(shared object) -> this rank's __dict__
        self.modules = {}       # name -> this rank's copy of a user module
        self.exit_handlers = []     # the program's atexit registrations

    def own(self, key, create=False):
        """The rank's own dict kept under ``key`` in :attr:`objects`
        (None until one is made, unless ``create``)."""
        found = self.objects.get(key)
        if found is None and create:
            found = self.objects[key] = {}
        return found

    @property
    def argv(self):
        if self._argv is None:
            self._argv = list(_base['argv'])
        return self._argv

    @argv.setter
    def argv(self, value):
        self._argv = value

    @property
    def environ(self):
        if self._environ is None:
            self._environ = {k: v for k, v in _base['environ'].items()
                             if not _launcher_own(k)}
            self._environ.update(launch_variables(self.context))
            self._environ_seen = 0
        if self._environ_seen < len(_imported_environ):
            with _imported_lock:
                for change in _imported_environ[self._environ_seen:]:
                    _change_environ(self._environ, *change)
                self._environ_seen = len(_imported_environ)
        return self._environ

    @property
    def numpy_random(self):
        return self.context.random

    @property
    def python_random(self):
        if self._python_random is None:
            seed = rank_seed(self.context.world.seed, self.context.rank, 1)
            self._python_random = random.Random(int.from_bytes(
                seed.tobytes(), 'little'))
        return self._python_random

    @property
    def hash_salt(self):
        if self._hash_salt is None:
            self._hash_salt = int(rank_seed(
                self.context.world.seed, self.context.rank, 2)[0])
        return self._hash_salt


_base = {'argv': [], 'environ': {}, 'launch': {}}


def _launcher_own(name):
    # mpiexec (prterun) keeps its own PRTE_* and PMIX_* variables from
    # the processes it starts (the PMIx MCA parameters pass).
    return name.startswith(('PRTE_', 'PMIX_')) and \
        not name.startswith('PMIX_MCA_')


def _hash_salt():
    # None where every process would share one secret: PYTHONHASHSEED
    # set (mpiexec passes it to each process).
    state = process_state()
    if state is None or \
            _base['environ'].get('PYTHONHASHSEED', 'random') != 'random':
        return None
    return state.hash_salt

# The Open MPI whose semantics the simulator reproduces (simulator.mpi's
# get_vendor, the launcher's OMPI_VERSION).
OPEN_MPI_VERSION = (5, 0, 11)


def launch_variables(context):
    """The variables ``mpiexec`` gives the rank of ``context`` on top of
    its own environment (its launch, its ranks, its host), whatever the
    program has done to ``os.environ`` since."""
    env = dict(_base['launch'])
    job, job_rank = context.job, context.job_rank
    if job.launch is not None:
        env.update(job.launch[job_rank])
    env.update(launcher_environ(job.node_of, job_rank,
                                context.world.universe_size))
    env['PMIX_HOSTNAME'] = context.processor_name
    return env


def launcher_environ(node_of, rank, universe, cores=None):
    """The variables Open MPI 5's ``mpiexec`` sets for world rank
    ``rank`` when ranks are placed on nodes as ``node_of`` says (rank ->
    node, block-wise), each node having ``cores`` cores (default: the
    ``universe`` slots spread over the nodes), and it offers ``universe``
    slots."""
    node = node_of[rank]
    size, local = str(len(node_of)), str(node_of.count(node))
    if cores is None:
        cores = max(1, universe // len(set(node_of)))
    # a node's ranks are consecutive (block placement)
    first = node_of.index(node)
    local_rank = str(local_rank_order(node_of.count(node), cores).index(
        rank - first))
    return {'OMPI_COMM_WORLD_RANK': str(rank),
            'PMIX_RANK': str(rank),
            'OMPI_MCA_num_procs': size,
            'OMPI_COMM_WORLD_SIZE': size,
            'OMPI_COMM_WORLD_LOCAL_RANK': local_rank,
            'OMPI_COMM_WORLD_LOCAL_SIZE': local,
            'OMPI_COMM_WORLD_NODE_RANK': local_rank,
            'OMPI_UNIVERSE_SIZE': str(universe),
            'OMPI_WORLD_SIZE': size,
            'OMPI_WORLD_LOCAL_SIZE': local}


def local_rank_order(count, cores):
    """The node's ``count`` ranks (0 = its first world rank) in the order
    Open MPI 5's mpiexec numbers their local ranks: it maps them by core,
    in blocks as even as possible over the node's ``cores`` (the first
    blocks one larger), and numbers them one from each block in turn.
    With no more ranks than cores that is world order; with more it is
    not (measured on 2 cores: 3 ranks are numbered 0 2 1, 4 ranks 0 2 1
    3, 5 ranks 0 2 4 1 3: rank 1 is local rank 2)."""
    blocks = max(1, min(cores, count))
    base, extra = divmod(count, blocks)
    starts, start = [], 0
    for block in range(blocks):
        starts.append((start, base + (block < extra)))
        start += base + (block < extra)
    return [begin + i for i in range(base + (extra > 0))
            for begin, length in starts if i < length]


def _launch_environ(orig_argv):
    """The variables ``mpiexec`` gives every process alike, for a launch
    by the command line ``orig_argv`` (the program and its arguments)."""
    return {'OMPI_COMMAND': orig_argv[0] if orig_argv else '',
            'OMPI_ARGV': ' '.join(orig_argv[1:]),
            'OMPI_NUM_APP_CTX': '1',
            'OMPI_MCA_initial_wdir': os.getcwd(),
            'OMPI_TOOL_NAME': 'mpiexec',
            'OMPI_VERSION': '.'.join(map(str, OPEN_MPI_VERSION)),
            'PRTE_LAUNCHED': '1',
            # one host: its session folder is on no shared file system
            'PRTE_SHARED_FS': 'FALSE',
            'PMIX_NAMESPACE': 'prterun-{}-{}@1'.format(socket.gethostname(),
                                                      os.getpid())}


def spawned_environ(command_line, job_id):
    """The launcher variables of a spawned job's ranks that differ from
    the first job's: its command line (``OMPI_COMMAND``...) and its PMIx
    namespace (mpiexec numbers a job's namespace by its launch)."""
    variables = _launch_environ(command_line)
    variables['PMIX_NAMESPACE'] = variables['PMIX_NAMESPACE'].rpartition(
        '@')[0] + '@{}'.format(job_id + 1)
    return variables


def process_state():
    """The calling rank's :class:`ProcessState`, or None outside a rank."""
    context = current()
    if context is None:
        return None
    state = context.process
    if state is None:
        state = context.process = ProcessState(context)
    return state


# -- sys.argv -----------------------------------------------------------------

def real_sys_dict():
    """``sys``'s own namespace (what C code reads), bypassing the
    per-rank class installed while a world runs."""
    return types.ModuleType.__dict__['__dict__'].__get__(sys)


@module_class
class PrivateSys(rank_sys.RankSys):
    """``sys``'s class while worlds run: ``sys.argv`` answers per rank
    (and, from :class:`~simulator.engine.rank_sys.RankSys`, the standard
    streams and ``sys.path``)."""

    @property
    def argv(self):
        state = process_state()
        return real_sys_dict()['argv'] if state is None else state.argv

    @argv.setter
    def argv(self, value):
        state = process_state()
        if state is None:
            real_sys_dict()['argv'] = value
        else:
            state.argv = value


# -- os.environ ---------------------------------------------------------------

# What libraries' module code set in a copied private mapping while
# ranks ran (NumPy's print options, a library's set_printoptions at its
# import): {mapping key: [(item key, value)]}. A process runs that code
# at its own import, so every rank's copy takes the settings (at its next
# use) and the shared dict too, which ranks copy from later.
_imported_items = {}
_imported_lock = threading.Lock()


class _RankMapping(collections.abc.MutableMapping):
    """A module's dict while worlds run: in a rank, that rank's copy
    (kept in its process state under ``key``), which starts empty or,
    with ``copied``, as the shared dict was at the rank's first use."""

    def __init__(self, shared, key, copied=False):
        self._shared = shared
        self._key = key
        self._copied = copied
        self._seen = (key, 'imported items applied')

    def _view(self):
        state = process_state()
        if state is None:
            return self._shared
        own = state.objects.get(self._key)
        if own is None:
            own = state.objects[self._key] = dict(
                self._shared) if self._copied else {}
            state.objects[self._seen] = len(
                _imported_items.get(self._key, ()))
        imported = _imported_items.get(self._key)
        if imported and state.objects[self._seen] < len(imported):
            with _imported_lock:
                own.update(imported[state.objects[self._seen]:])
                state.objects[self._seen] = len(imported)
        return own

    def copy(self):
        return dict(self._view())

    def __getitem__(self, key):
        return self._view()[key]

    def __setitem__(self, key, value):
        self._view()[key] = value
        state = process_state()
        if self._copied and state is not None and \
                at_library_import(sys._getframe(1)):
            with _imported_lock:
                self._shared[key] = value
                imported = _imported_items.setdefault(self._key, [])
                imported.append((key, value))
                if state.objects[self._seen] == len(imported) - 1:
                    state.objects[self._seen] = len(imported)   # has it

    def __delitem__(self, key):
        del self._view()[key]

    def __iter__(self):
        return iter(list(self._view()))

    def __len__(self):
        return len(self._view())


# What libraries' module code did to os.environ in some rank while ranks
# ran: [(action, key, value)], action 'set', 'setdefault' or 'delete'.
# A process runs that code at its own import, so every rank's environment
# takes the changes (at its next use), and the process's too (the C
# environment, which native libraries read).
_imported_environ = []


def _change_environ(environ, action, key, value):
    if action == 'set':
        environ[key] = value
    elif action == 'setdefault':
        environ.setdefault(key, value)
    else:
        environ.pop(key, None)


def _note_if_imported(state, frame, action, key, value):
    """Record a change that the rank of ``state`` just made to its
    ``os.environ`` (from ``frame``), if a library's import made it."""
    if not at_library_import(frame):
        return
    with _imported_lock:
        _imported_environ.append((action, key, value))
        state._environ_seen = len(_imported_environ)
    # (outside any rank os.environ is the process's own _Environ)
    _change_environ(os.environ._shared, action, key, value)
    _change_environ(_base['environ'], action, key, value)


class _RankEnviron(_RankMapping):
    """``os.environ`` while worlds run: in a rank, that rank's copy."""

    def __init__(self, shared):
        super().__init__(shared, None)

    def _view(self):
        state = process_state()
        return self._shared if state is None else state.environ

    @staticmethod
    def _check(key, value):
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError('str expected, not {}'.format(
                type(value if isinstance(key, str) else key).__name__))

    def __setitem__(self, key, value):
        self._check(key, value)
        state = process_state()
        if state is None:
            self._shared[key] = value
            return
        state.environ[key] = value
        _note_if_imported(state, sys._getframe(1), 'set', key, value)

    def __delitem__(self, key):
        state = process_state()
        if state is None:
            del self._shared[key]
            return
        del state.environ[key]
        _note_if_imported(state, sys._getframe(1), 'delete', key, None)

    def setdefault(self, key, default=None):
        state = process_state()
        if state is None:
            return self._shared.setdefault(key, default)
        if key not in state.environ:
            self._check(key, default)
            state.environ[key] = default
        # (a library's, noted even where this rank has the variable
        # already: another rank may not)
        _note_if_imported(state, sys._getframe(1), 'setdefault', key,
                          default)
        return state.environ[key]

    def __repr__(self):
        return 'environ({!r})'.format(dict(self._view()))

    def copy(self):
        return dict(self._view())

    def __getattr__(self, name):
        # encodekey, data...: the shared object's.
        return getattr(self._shared, name)


class _RankEnvironBytes(collections.abc.MutableMapping):
    """``os.environb`` while worlds run: in a rank, its ``os.environ``
    with bytes keys and values (a process's two views share one dict)."""

    def __init__(self, shared):
        self._shared = shared

    @staticmethod
    def _bytes(value):
        if not isinstance(value, bytes):
            raise TypeError('bytes expected, not {}'.format(
                type(value).__name__))
        return os.fsdecode(value)

    def __getitem__(self, key):
        state = process_state()
        if state is None:
            return self._shared[key]
        try:
            return os.fsencode(state.environ[self._bytes(key)])
        except KeyError:
            raise KeyError(key) from None

    def __setitem__(self, key, value):
        state = process_state()
        if state is None:
            self._shared[key] = value
        else:
            state.environ[self._bytes(key)] = self._bytes(value)

    def __delitem__(self, key):
        state = process_state()
        if state is None:
            del self._shared[key]
            return
        try:
            del state.environ[self._bytes(key)]
        except KeyError:
            raise KeyError(key) from None

    def __iter__(self):
        state = process_state()
        if state is None:
            return iter(self._shared)
        return iter([os.fsencode(k) for k in list(state.environ)])

    def __len__(self):
        state = process_state()
        return len(self._shared if state is None else state.environ)

    def copy(self):
        return dict(self)

    def __repr__(self):
        return 'environ({!r})'.format(dict(self))


def _child_environ(state):
    """The environment a child process of ``state``'s rank inherits: the
    rank's (the launcher's OMPI_* variables too, read or not), as a
    process's child inherits the process's, but for PMIX_NAMESPACE.
    Open MPI in a child that finds a namespace looks for its PMIx server,
    which the simulator does not run, and aborts MPI_Init (status 14, or
    a segmentation fault); without it MPI starts as a singleton there.
    (Under mpiexec such a child joins the job as its parent's rank.)"""
    environ = dict(state.environ)
    environ.pop('PMIX_NAMESPACE', None)
    return environ


def _popen_init_for(original):
    def __init__(self, args, *more, **kwargs):
        state = process_state()
        # env is Popen's 11th parameter (env=None: the rank's). Its
        # fork_exec path alone would get it from _fork_exec_for; this
        # also covers the os.posix_spawn path, which reads os.environ.
        if state is not None and kwargs.get('env') is None and \
                len(more) < 10:
            kwargs['env'] = _child_environ(state)
        original(self, args, *more, **kwargs)
    return __init__


def _fork_exec_for(original):
    # What execs a child without an environment of its own (multiprocessing's
    # 'spawn' and 'forkserver' starts, through util.spawnv_passfds) hands
    # it the C environment, the process's: a rank's children get the
    # rank's, as a process's get the process's.
    def fork_exec(args, executable_list, close_fds, pass_fds, cwd, env,
                  *more):
        state = process_state()
        if env is None and state is not None:
            env = [os.fsencode(key) + b'=' + os.fsencode(value)
                   for key, value in _child_environ(state).items()]
        return original(args, executable_list, close_fds, pass_fds, cwd,
                        env, *more)
    return fork_exec


def _walk_stack_for(original):
    # traceback's extract_stack, format_stack and print_stack (and
    # logging's stack_info) walk through it
    def walk_stack(f):
        if f is None or current() is None:
            return original(f)
        return ((frame, frame.f_lineno) for frame in program_frames(f))
    return walk_stack


def _getouterframes_for(original):
    # inspect.stack() and inspect.getouterframes
    def getouterframes(frame, context=1):
        found = original(frame, context)
        if current() is None:
            return found
        seen = {id(f) for f in program_frames(frame)}
        return [info for info in found if id(info.frame) in seen]
    return getouterframes


def _system_for(real):
    def system(command):
        state = process_state()
        if state is None:
            return real(command)
        # os.system hands the shell the C environment, which is the
        # process's, not the rank's: run the same shell through Popen,
        # which gives the rank's (above), and answer os.system's wait
        # status (exit code << 8, or the signal's number).
        code = subprocess.Popen(command, shell=True).wait()
        return code << 8 if code >= 0 else -code
    return system


# -- global generators --------------------------------------------------------

class _PerRankMethod:
    """A module-level generator function (``numpy.random.rand``,
    ``random.random``) acting on the calling rank's generator. ``__self__``
    is that generator, as for the bound method it replaces (Chainer's
    ShuffleOrderSampler takes ``numpy.random.random.__self__``)."""

    def __init__(self, name, original, shared, generator):
        self._name = name
        self._original = original
        self._shared = shared
        self._generator = generator
        self.__name__ = name
        self.__qualname__ = name
        self.__doc__ = original.__doc__

    @property
    def __self__(self):
        state = process_state()
        return self._shared if state is None else self._generator(state)

    def __call__(self, *args, **kwargs):
        state = process_state()
        if state is None:
            return self._original(*args, **kwargs)
        return getattr(self._generator(state), self._name)(*args, **kwargs)

    def __repr__(self):
        return '<per-rank {}>'.format(self._name)


def _swap_generator_functions(module, shared, generator, extra=()):
    """Replace ``module``'s bound methods of ``shared`` (and the functions
    named in ``extra``) by per-rank ones; returns an undo function."""
    replaced = {}
    for name in dir(shared):
        if name.startswith('_'):
            continue
        original = getattr(module, name, None)
        if original is None or (getattr(original, '__self__', None)
                                is not shared and name not in extra):
            continue
        replaced[name] = original
        setattr(module, name, _PerRankMethod(name, original, shared,
                                             generator))

    def undo():
        for name, original in replaced.items():
            setattr(module, name, original)
    return undo


# -- registered library state -------------------------------------------------

_registry = {}      # module name -> [(attribute, kind)]
_applied = {}       # (module name, attribute) -> undo


def register_private_object(module, attribute):
    """Make ``module.attribute`` (a plain object with a ``__dict__``, like
    Chainer's ``global_config``) private per rank while worlds run: each
    rank reads and writes its own copy of the attributes. Applied when
    ``module`` is (or becomes) imported; the simulator imports nothing."""
    _registry.setdefault(module, []).append((attribute, 'object'))
    _apply_registered(module)


def register_private_mapping(module, attribute, copied=False):
    """Make the dict ``module.attribute`` private per rank: each rank
    starts with an empty one (CuPy's per-device generators) or, with
    ``copied``, with a copy of the process's (NumPy's print options)."""
    _registry.setdefault(module, []).append(
        (attribute, 'copied' if copied else 'mapping'))
    _apply_registered(module)


def register_module_dispatch(module, attribute):
    """``module.attribute`` (dots allowed) is a pickler's dispatch table,
    a dict by exact type: while worlds run, it handles the stand-in
    classes modules then have (``patches.MODULE_CLASSES``) as it handles
    ``types.ModuleType``, so a library pickler (cloudpickle, dill) still
    pickles a module, or a function that uses one, by reference."""
    _registry.setdefault(module, []).append((attribute, 'module_types'))
    _apply_registered(module)


def register_private_counter(module, attribute, start=1):
    """Make the ``itertools.count(start)`` ``module.attribute`` (dots
    allowed; or its ``__next__``) count per rank, from ``start`` as in a
    fresh process: the numbers a library names things by (``Thread-1``,
    ``Process-1``, ``ThreadPoolExecutor-0_0``)."""
    _registry.setdefault(module, []).append((attribute, ('counter', start)))
    _apply_registered(module)


class _RankCounter:
    """A module's counter while worlds run: in a rank, the rank's own.
    Iterated (``next(counter)``) or called, as the one it stands for."""

    def __init__(self, shared, key, start=1):
        self._shared = shared
        self._key = key
        self._start = start

    def __iter__(self):
        return self

    def __next__(self):
        state = process_state()
        if state is None:
            shared = self._shared
            return shared() if callable(shared) else next(shared)
        own = state.objects.get(self._key)
        if own is None:
            own = state.objects[self._key] = itertools.count(self._start)
        return next(own)

    __call__ = __next__


_private_classes = {}


def _rank_dict(obj, containers=False):
    state = process_state()
    if state is None:
        return None
    key = id(obj)
    found = state.objects.get(key)
    if found is None:
        found = dict(object.__getattribute__(obj, '__dict__'))
        if containers:
            # The rank's own lists and dicts (a logger's handlers): a
            # rank that appends must not append to the process's.
            for name, value in found.items():
                if type(value) in (list, dict, set):
                    found[name] = type(value)(value)
        state.objects[key] = found
    return found


def _private_class(cls, containers=False, shared=()):
    """A subclass of ``cls`` whose instance attributes live per rank
    (``containers``: its list, dict and set attributes copied for each
    rank, not shared), but for the names in ``shared``."""
    key = (cls, containers, frozenset(shared))
    if key in _private_classes:
        return _private_classes[key]
    validates = cls.__setattr__ is not object.__setattr__

    def __getattribute__(self, name):
        own = None if name in shared else _rank_dict(self, containers)
        if own is None:
            return object.__getattribute__(self, name)
        if name == '__dict__':
            return own
        if name in own:
            return own[name]
        if name.startswith('__') or name not in object.__getattribute__(
                self, '__dict__'):
            return object.__getattribute__(self, name)
        return getattr(cls, name)       # deleted in this rank

    def __setattr__(self, name, value):
        own = None if name in shared else _rank_dict(self, containers)
        if own is None:
            object.__setattr__(self, name, value)
            return
        if validates:
            # the class's own checks (mpi4py.rc refuses unknown options),
            # made on a blank instance, which takes the write instead
            cls.__setattr__(object.__new__(cls), name, value)
        own[name] = value

    def __delattr__(self, name):
        own = None if name in shared else _rank_dict(self, containers)
        if own is None:
            object.__delattr__(self, name)
        elif name in own:
            del own[name]
        else:
            raise AttributeError(name)

    private = type(cls.__name__, (cls,), {
        '__getattribute__': __getattribute__, '__setattr__': __setattr__,
        '__delattr__': __delattr__, '__module__': cls.__module__,
        '__qualname__': cls.__qualname__})
    _private_classes[key] = private
    return private


def _owner_of(module, attribute):
    """What holds the last name of the dotted ``attribute`` of
    ``module``, and that name."""
    *path, last = attribute.split('.')
    owner = module
    for step in path:
        owner = getattr(owner, step, None)
    return owner, last


def _apply_registered(name):
    module = sys.modules.get(name)
    if module is None or not _patches.active:
        return
    for attribute, kind in _registry.get(name, ()):
        owner, last = _owner_of(module, attribute)
        if (name, attribute) in _applied or not hasattr(owner, last):
            continue
        shared = getattr(owner, last)
        if kind == 'module_types':
            added = [cls for cls in MODULE_CLASSES if cls not in shared] \
                if types.ModuleType in shared else []
            for cls in added:
                shared[cls] = shared.get(types.ModuleType)

            def undo(table=shared, added=added):
                for cls in added:
                    table.pop(cls, None)
        elif kind == 'object':
            cls = type(shared)
            shared.__class__ = _private_class(cls)

            def undo(shared=shared, cls=cls):
                shared.__class__ = cls
        else:
            key = (name, attribute)
            setattr(owner, last, _RankCounter(shared, key, kind[1])
                    if isinstance(kind, tuple) else     # ('counter', start)
                    _RankMapping(shared, key, copied=kind == 'copied'))

            def undo(owner=owner, last=last, shared=shared):
                setattr(owner, last, shared)
        _applied[(name, attribute)] = undo


class _RegisteredImportHook:
    """Applies the registry to a registered module imported during a run."""

    def find_spec(self, fullname, path=None, target=None):
        # Applied once the top-level package is imported: its __init__
        # still sets the library's defaults for every rank (Chainer's
        # sets global_config.dtype after importing configuration). A
        # registered submodule its package imports only later (lazily,
        # as concurrent.futures imports its thread module) is applied
        # once it is imported itself.
        if '.' in fullname:
            top = sys.modules.get(fullname.partition('.')[0])
            if fullname not in _registry or top is None or getattr(
                    getattr(top, '__spec__', None), '_initializing', False):
                return None
            apply = _apply_registered
        elif any(name.partition('.')[0] == fullname for name in _registry):
            apply = _apply_registered_under
        else:
            return None
        return then_after_exec(find_spec_without(self, fullname, path,
                                                 target),
                               lambda module: apply(fullname))


def _apply_registered_under(package):
    for name in list(_registry):
        if name.partition('.')[0] == package:
            _apply_registered(name)


register_private_object('chainer.configuration', 'global_config')
# mpi4py reads its options in each process as that process set them
register_private_object('mpi4py', 'rc')
register_private_mapping('cupy.random._generator', '_random_states')
# multiprocessing.set_start_method() may be called once per process: the
# default context's choice is the rank's (ImageNet-style scripts set it).
register_private_object('multiprocessing.context', '_default_context')
register_private_counter('multiprocessing.process', '_process_counter')
register_private_counter('threading', '_counter')
register_private_counter('concurrent.futures.thread',
                         'ThreadPoolExecutor._counter', start=0)
register_module_dispatch('cloudpickle.cloudpickle', 'Pickler._dispatch_table')
register_module_dispatch('dill._dill', 'Pickler.dispatch')
# importlib.reload returns at once for a module some thread is reloading:
# ranks reloading their copies of a user module together each run theirs.
register_private_mapping('importlib', '_RELOADING')
# NumPy 1.x keeps set_printoptions' settings in a module dict (NumPy 2 in
# a context variable, which is per thread already).
register_private_mapping('numpy.core.arrayprint', '_format_options',
                         copied=True)


# -- exit ---------------------------------------------------------------------

class ProcessExit(RankExit):
    """``os._exit(status)`` in a rank: ends the whole rank at once with
    ``status`` (no ``except``/``finally`` of the program should catch it;
    it is a BaseException that is neither Exception nor SystemExit)."""

    def __init__(self, status, site='?'):
        super().__init__('os._exit({})'.format(status))
        self.status = status
        self.site = site        # the user's file:line that called it

    def end_rank(self, world, actor):
        """End ``actor``'s whole rank with this status (from the thread
        wrapper that caught it)."""
        context = world.contexts[actor.rank]
        _stop_other_threads(context)
        error = SystemExit(self.status) if self.status else None
        try:
            for check in world.exit_checks:
                check(actor.rank, self)
        except SimulatorError as improper:
            improper.__suppress_context__ = True    # not "during handling"
            error = improper
        if error is not None:
            context.error = error
            world.fail(actor, error)
            return
        with world.lock:
            world.end_actor(actor, whole_rank=True)
        world.finish(actor)


def _stop_other_threads(context):
    """The rank's other threads stop, as a process's die with it at
    ``os._exit``: RankExit is raised in each at its next Python step (one
    blocked in MPI raises it when woken, see ``World.end_actor``). Without
    this a rank's main thread waiting in ``join()`` for the thread that
    called ``os._exit`` went on to print and compute after its exit."""
    me = threading.current_thread()
    for thread in list(context.threads):
        if thread is not me and thread.ident is not None and \
                thread.is_alive():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(thread.ident), ctypes.py_object(RankExit))


def _exit_for(original):
    def _exit(status):
        if current() is None:
            original(status)
        raise ProcessExit(status, user_site(1))
    return _exit


# -- install ------------------------------------------------------------------

def _atexit_register_for(real):
    def register(func, *args, **kwargs):
        state = process_state()
        if state is None or not caller_is_user():
            return real(func, *args, **kwargs)
        state.exit_handlers.append((func, args, kwargs))
        return func
    return register


def _atexit_unregister_for(real):
    def unregister(func):
        state = process_state()
        if state is None or not caller_is_user():
            return real(func)
        state.exit_handlers[:] = [h for h in state.exit_handlers
                                  if h[0] != func]
    return unregister


_CLONE_FS = 0x200       # <sched.h>: the working directory, root and umask
_unshare = []


def own_working_directory():
    """Give the calling thread (a rank's main thread, at its start) its
    own working directory and umask, as a process has: Linux's
    ``unshare(CLONE_FS)``; they start as the process's, and the threads
    it starts share them with it. False where the platform has no such
    call (then ``os.chdir`` in a rank is the process's, and reported)."""
    if not sys.platform.startswith('linux'):
        return False
    if not _unshare:
        import ctypes
        try:
            _unshare.append(ctypes.CDLL(None, use_errno=True).unshare)
        except (OSError, AttributeError):
            _unshare.append(None)
    unshare = _unshare[0]
    return unshare is not None and unshare(_CLONE_FS) == 0


def run_exit_handlers(context):
    """Run the rank's atexit handlers, last registered first, as a
    process does at exit: an exception is printed and the next one runs
    (a SystemExit in one sets nothing: the rank's status stands)."""
    state = context.process
    if state is None:
        return
    # logging's own exit handler came first in a process: it runs last
    state.exit_handlers.insert(0, (rank_logging.shutdown_rank, (context,),
                                   {}))
    while state.exit_handlers:
        func, args, kwargs = state.exit_handlers.pop()
        try:
            func(*args, **kwargs)
        except SystemExit:
            pass
        except Exception as error:
            # As the interpreter reports it (an "unraisable" exception,
            # not the excepthook an MPI abort hook may hold).
            sys.stderr.write('Exception ignored in atexit callback: '
                             '{!r}\n'.format(func))
            traceback.print_exception(type(error), error,
                                      error.__traceback__, file=sys.stderr)


# Library code whose process id only says who is asking: a log record's
# (the %(process)d of a log format) and multiprocessing's
# current_process().pid: the rank's, as each process's are its own.
_ASK_FOR_THE_RANK = (logging.LogRecord.__init__.__code__,
                     multiprocessing.process.BaseProcess.ident.fget.__code__)


def _rank_pid():
    """The calling rank's process id where the program itself asks (its
    main thread's id in the kernel: a real one, that signals and
    /proc/<id> reach), else None: libraries (tempfile, multiprocessing)
    keep the process's, which they use to find the process itself."""
    context = current()
    if context is None or context.pid is None:
        return None
    asking = sys._getframe(2).f_code      # who called the os function
    if is_library_file(asking.co_filename) and \
            asking not in _ASK_FOR_THE_RANK:
        return None
    return context.pid


def _rank_pid_else(real):
    """os.getpid, and os.getpgrp (mpiexec starts each process as the
    leader of its own group), as the calling rank answers them."""
    def ask():
        pid = _rank_pid()
        return real() if pid is None else pid
    return ask


def _forget_the_ranks_pid():
    # A process a rank forks (multiprocessing's workers) is a process of
    # its own: its os.getpid() is the kernel's, not the rank's.
    context = current()
    if context is not None:
        context.pid = None


os.register_at_fork(after_in_child=_forget_the_ranks_pid)


def _getpgid_for(real):
    def getpgid(pid):
        own = _rank_pid()
        return own if own is not None and pid in (0, own) else real(pid)
    return getpgid


def _gethostname_for(real):
    def gethostname():
        name = _node_name()
        return real() if name is None else name
    return gethostname


def _node_name():
    """The calling rank's simulated node name, or None where the host's
    own name holds (outside a rank, or a world of one node)."""
    context = current()
    if context is None or context.world.nodes == 1:
        return None
    return context.processor_name


def _os_uname_for(real):
    def uname():
        # as socket.gethostname(): the rank's simulated node
        result, name = real(), _node_name()
        if name is None:
            return result
        return os.uname_result((result.sysname, name, result.release,
                                result.version, result.machine))
    return uname


def _platform_uname_for(real):
    def uname():
        # platform.node() reads it: the rank's simulated node too
        result, name = real(), _node_name()
        return result if name is None else result._replace(node=name)
    return uname


def _process_time_for(real, ns=False):
    def process_time():
        context = current()
        if context is None:
            return real()
        seconds = context.cpu.seconds()
        return int(seconds * 1e9) if ns else seconds
    return process_time


def _new_module(name):
    return types.ModuleType(name)


def _install():
    undo = []
    sys_dict = real_sys_dict()
    _base['argv'] = list(sys_dict['argv'])
    _base['environ'] = dict(os.environ)
    _base['launch'] = _launch_environ(
        sys_dict.get('orig_argv') or [sys.executable] + _base['argv'])
    undo.append(rank_sys.install(process_state))
    sys.__class__ = PrivateSys
    undo.append(lambda: setattr(sys, '__class__', types.ModuleType))
    # The import system makes new modules as type(sys)(name): while sys
    # is a PrivateSys they would be too, and a module's own `path`,
    # `argv` or `stdout` would answer sys's.
    undo.append(wrap(_bootstrap, '_new_module', lambda real: _new_module))

    shared_environ, shared_environb = os.environ, os.environb
    os.environ = _RankEnviron(shared_environ)  # noqa: B003 -- a view
    os.environb = _RankEnvironBytes(shared_environb)
    undo.append(lambda: setattr(os, 'environ', shared_environ))
    undo.append(lambda: setattr(os, 'environb', shared_environb))
    undo += [wrap(subprocess.Popen, '__init__', _popen_init_for),
             wrap(_posixsubprocess, 'fork_exec', _fork_exec_for),
             wrap(traceback, 'walk_stack', _walk_stack_for),
             wrap(inspect, 'getouterframes', _getouterframes_for),
             wrap(os, 'system', _system_for),
             wrap(os, '_exit', _exit_for),
             wrap(socket, 'gethostname', _gethostname_for),
             wrap(os, 'uname', _os_uname_for),
             wrap(platform, 'uname', _platform_uname_for),
             wrap(os, 'getpid', _rank_pid_else),
             wrap(os, 'getpgrp', _rank_pid_else),
             wrap(os, 'getpgid', _getpgid_for),
             wrap(time, 'process_time', _process_time_for),
             wrap(time, 'process_time_ns',
                  lambda real: _process_time_for(real, ns=True)),
             wrap(atexit, 'register', _atexit_register_for),
             wrap(atexit, 'unregister', _atexit_unregister_for)]

    undo.append(_swap_generator_functions(
        np.random, np.random.mtrand._rand, lambda s: s.numpy_random,
        extra=('seed',)))
    undo.append(_swap_generator_functions(
        random, random._inst, lambda s: s.python_random))

    undo.append(rank_warnings.install(process_state))
    undo.append(rank_logging.install(_private_class))
    undo.append(rank_hash.install(_hash_salt))
    undo.append(rank_signals.install(process_state))
    undo.append(rank_locks.install())
    undo.append(rank_builtins.install(process_state))
    undo.append(rank_threading.install(process_state))

    hook = _RegisteredImportHook()
    sys.meta_path.insert(0, hook)
    undo.append(lambda: sys.meta_path.remove(hook))
    for name in _registry:
        _apply_registered(name)

    def undo_registered():
        for fn in _applied.values():
            fn()
        _applied.clear()
    undo.append(undo_registered)
    return undo


def privatized():
    """While inside (nestable, thread-safe), process-global state answers
    per calling rank (see the module docstring)."""
    return _patches.held()

