"""simulator: an in-process MPI world, every rank a thread.

``simulator.run(fn, size, nodes=1, send_mode='openmpi', timeout=None,
seed=None, schedule=None)`` runs ``fn(comm)`` on ``size`` rank threads,
``comm`` being each rank's ``simulator.mpi.COMM_WORLD`` (an
mpi4py-compatible communicator), and returns the per-rank results;
``schedule=SEED`` replays one schedule of the choices a real MPI may make
differently, and ``simulator.explore(fn, size, runs)`` tries many.
``python -m simulator -n N script.py`` runs an unmodified mpi4py script
the same way.

Instead of hanging, a broken program raises: ``DeadlockError`` (no rank
can progress, or a rank waits for ranks that finished),
``CollectiveMismatchError``, ``UnmatchedMessageError``,
``MessageMismatchError``, ``simulator.mpi.Exception`` (``ERR_TRUNCATE``
...), ``FinalizedError`` (a call after ``MPI.Finalize()``),
``BufferModifiedError`` / ``OverlappingBuffersError`` (a pending
operation's memory written or shared), and
``RankFailedError`` in the ranks a failed rank left waiting.

``simulator.run(..., clock=VirtualTime(load_machine('gpu_cluster')))``
(from :mod:`simulator.engine.clock` and :mod:`simulator.engine.netmodel`)
runs in virtual time: each rank's time functions read a clock advanced by
its CPU time and a network model; ``clock.summary()`` says where it went.

Per-rank state lives on ``simulator.current()`` (``rank``, ``world``,
``random``: a NumPy RandomState seeded per rank). A rank is a process:
while a world runs, ``sys.argv``, ``os.environ``, NumPy's and Python's
global generators, Chainer's global config, the working directory and the
user's own modules are private per rank, process-wide changes
(``sys.setrecursionlimit``...) are reported, and
``sys.exit(n)`` ends the rank with status n (see
:mod:`simulator.engine.process`). Threads a rank starts belong to that
rank and may call MPI. Code that blocks outside
``simulator.mpi`` uses ``World.block``/``World.wake`` (see
:mod:`simulator.engine.world`); libraries add hints to reports with
:func:`register_explainer` or a ``simulator.explainers`` entry point, and
name their own folders with :func:`register_library` so that reports point
at the user's line.

Layers, each importing only those below it: :mod:`simulator.errors`;
:mod:`simulator.engine` (world, rank threads, matching, reports);
:mod:`simulator.mpi` (the mpi4py facade) and :mod:`simulator.nccl`;
:mod:`simulator.tools` (launcher, CLI, pytest plugins);
:mod:`simulator.fuzz` (the differential fuzzer). ``import simulator``
imports only :mod:`simulator.errors`; the rest comes when first used.
"""
import importlib

from simulator.errors import (AbortError, BufferModifiedError,
                              CollectiveMismatchError,
                              DeadlockError, FinalizedError,
                              MessageMismatchError, OverlappingBuffersError,
                              RankFailedError, RMAConflictError,
                              SimulatorError, UnmatchedMessageError)

__all__ = ['run', 'explore', 'current', 'register_explainer',
           'register_library',
           'SimulatorError', 'DeadlockError', 'CollectiveMismatchError',
           'UnmatchedMessageError', 'MessageMismatchError',
           'RankFailedError', 'AbortError', 'BufferModifiedError',
           'FinalizedError', 'OverlappingBuffersError', 'RMAConflictError']

# Imported on first use (PEP 562), not with the package: the engine, the
# launcher and NumPy take ~0.5 s, which ``python -m simulator`` would pay
# before it can read its options (and again after re-executing itself
# with the address layout fixed), and which tools that only need
# ``simulator.errors`` or ``simulator.tools.layout`` do not need at all.
_LAZY = {'run': 'simulator.tools.launch',
         'explore': 'simulator.tools.explore',
         'current': 'simulator.engine.actors',
         'register_explainer': 'simulator.engine.reports',
         'register_library': 'simulator.engine.libraries'}


# Attributes of the package once ``import simulator`` imported them all.
_SUBPACKAGES = ('engine', 'mpi', 'nccl', 'tools', 'fuzz')


def __getattr__(name):
    """The public functions and the subpackages (``simulator.mpi``...),
    imported when first used."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(__name__ + '.' + name)
    else:
        raise AttributeError('module {!r} has no attribute {!r}'.format(
            __name__, name))
    globals()[name] = value
    return value


def __dir__():
    """The module's names, the lazy ones included."""
    return sorted(set(globals()) | set(__all__))
