"""simulator: an in-process MPI world, every rank a thread.

``simulator.run(fn, size)`` runs ``fn(comm)`` on ``size`` rank threads,
``comm`` being each rank's ``simulator.mpi.COMM_WORLD`` (an mpi4py-like
communicator). Deadlocks, collective mismatches and lost messages raise
the errors below instead of hanging.
"""
from simulator.errors import (AbortError, CollectiveMismatchError,
                              DeadlockError, MessageMismatchError,
                              RankFailedError, SimulatorError,
                              UnmatchedMessageError)
from simulator.world import current, run

__all__ = ['run', 'current', 'SimulatorError', 'DeadlockError',
           'CollectiveMismatchError', 'UnmatchedMessageError',
           'MessageMismatchError', 'RankFailedError', 'AbortError']
from simulator import model_parallel  # noqa: F401 -- registers explainer
