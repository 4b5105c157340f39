"""Exceptions the simulator raises when a program breaks an MPI rule, and
the warning it gives where the rule is broken but a real MPI usually
carries on."""

__all__ = ['SimulatorError', 'DeadlockError', 'CollectiveMismatchError',
           'UnmatchedMessageError', 'MessageMismatchError',
           'RankFailedError', 'AbortError', 'BufferModifiedError',
           'FinalizedError', 'NotInitializedError', 'NotFinalizedError',
           'ThreadLevelError', 'OverlappingBuffersError',
           'RMAConflictError', 'IncompleteRequestWarning',
           'BufferedExchangeWarning']


class SimulatorError(Exception):
    """Base class: a rule of the simulated MPI world was broken.

    ``report`` (when set) is the :class:`simulator.engine.reports.Report` the
    message was built from, for tools that want the details.
    """

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class DeadlockError(SimulatorError):
    """Every live rank is blocked and no pending operation can complete."""


class CollectiveMismatchError(SimulatorError):
    """Ranks of one communicator disagree on a collective call."""


class UnmatchedMessageError(SimulatorError):
    """Messages were sent that no rank received before the run ended."""


class MessageMismatchError(SimulatorError):
    """A receive does not fit the message (dtype or kind differs)."""


class BufferModifiedError(SimulatorError):
    """A rank wrote to the buffer of a send still in progress (MPI
    forbids it: the receiver may get the old contents or the new)."""


class OverlappingBuffersError(SimulatorError):
    """A rank gave memory that a pending receive of its own writes into
    to another receive or a send (MPI forbids it: what ends up there, or
    what is sent, depends on timing)."""


class RMAConflictError(SimulatorError):
    """Two operations reached the same bytes of a window, unordered (in
    one fence or exposure epoch, or in overlapping shared lock epochs),
    and the outcome depends on their order (MPI leaves it undefined: a
    Put and a Get of changed bytes, two Puts of different bytes,
    accumulates with different ops); or a store raced an access in a
    fence epoch."""


class FinalizedError(SimulatorError):
    """A rank called MPI after ``MPI.Finalize()``. MPI allows nothing but
    a few queries then; Open MPI aborts the job, with ``errorcode`` (14)
    as the job's exit status."""

    errorcode = 14


class NotInitializedError(SimulatorError):
    """A rank used MPI before ``MPI.Init()`` (``mpi4py.rc.initialize``
    false). Open MPI aborts such a job with ``errorcode`` (14) as its
    exit status."""

    errorcode = 14


class NotFinalizedError(SimulatorError):
    """A rank's program ended without ``MPI.Finalize()`` where mpi4py
    does not finalize at exit (``mpi4py.rc.finalize`` false): mpiexec
    fails such a job with ``errorcode`` (1)."""

    errorcode = 1


class ThreadLevelError(SimulatorError):
    """A rank used MPI from a thread its thread level does not allow
    (a worker at ``MPI_THREAD_FUNNELED``, two at once at
    ``MPI_THREAD_SERIALIZED``): undefined in MPI."""


class RankFailedError(SimulatorError):
    """Another rank failed; this rank's blocking call cannot complete.

    ``failed_rank`` is the world rank whose exception broke the world.
    """

    def __init__(self, message, failed_rank=None, report=None):
        super().__init__(message, report)
        self.failed_rank = failed_rank


class AbortError(SimulatorError):
    """A rank called ``Abort(errorcode)``: the whole world stops."""

    def __init__(self, message, errorcode=1, report=None):
        super().__init__(message, report)
        self.errorcode = errorcode


class IncompleteRequestWarning(UserWarning):
    """A rank's program ended with a non-blocking request it never
    completed (Wait/Test) or freed: erroneous in MPI, though a small
    message usually goes out anyway."""


class BufferedExchangeWarning(UserWarning):
    """Ranks each made a blocking standard send to the next before
    receiving: the run got through only because those sends were
    buffered (below Open MPI's eager limit); MPI calls such a program
    unsafe, and it deadlocks with bigger messages."""
