"""simulator: an in-process MPI world, every rank a thread.

``simulator.run(fn, size, nodes=1, send_mode='eager', timeout=None,
seed=None)`` runs ``fn(comm)`` on ``size`` rank threads, ``comm`` being
each rank's ``simulator.mpi.COMM_WORLD`` (an mpi4py-compatible
communicator), and returns the per-rank results. ``python -m simulator -n
N script.py`` runs an unmodified mpi4py script the same way.

Instead of hanging, a broken program raises: ``DeadlockError`` (no rank
can progress, or a rank waits for ranks that finished),
``CollectiveMismatchError``, ``UnmatchedMessageError``,
``MessageMismatchError``, ``simulator.mpi.Exception`` (``ERR_TRUNCATE``
...), and ``RankFailedError`` in the ranks a failed rank left waiting.

Per-rank state lives on ``simulator.current()`` (``rank``, ``world``,
``random``: a NumPy RandomState seeded per rank; NumPy's global RNG is
shared by all rank threads). Code that blocks outside ``simulator.mpi``
uses ``World.block``/``World.wake`` (see :mod:`simulator.world`) and adds
hints to reports with ``simulator.checks.register_explainer``.
"""
from simulator.errors import (AbortError, CollectiveMismatchError,
                              DeadlockError, MessageMismatchError,
                              RankFailedError, SimulatorError,
                              UnmatchedMessageError)
from simulator.world import current, run

__all__ = ['run', 'current', 'SimulatorError', 'DeadlockError',
           'CollectiveMismatchError', 'UnmatchedMessageError',
           'MessageMismatchError', 'RankFailedError', 'AbortError']
from simulator import model_parallel  # noqa: F401,E402 -- registers explainer
