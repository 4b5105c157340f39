"""``MPI.Finalize()`` per rank: after it a rank may only ask the time,
the version and whether MPI is initialized or finalized.

Under Open MPI any other call after Finalize prints "The MPI_Comm_rank()
function was called after MPI_FINALIZE was invoked" and aborts the job
with exit status 14 (5.0.11, 2026-11-26; so does a second Finalize). Here
the call raises :class:`~simulator.errors.FinalizedError` (its
``errorcode`` 14 is what ``python -m simulator`` exits with), naming the
rank, the line and where it finalized. Finalize itself does not wait for
the other ranks.
"""
from simulator.engine.actors import current
from simulator.engine.trace import user_site
from simulator.errors import FinalizedError

__all__ = ['finalize', 'is_finalized', 'after_finalize', 'set_abort_status']


def finalize():
    """Mark the calling rank finalized (outside a rank: nothing)."""
    ctx = current()
    if ctx is None:
        return
    world = ctx.world
    if ctx.rank in world.finalized:
        raise after_finalize(world, ctx.rank, 'called Finalize again')
    world.finalized[ctx.rank] = user_site(2)


def set_abort_status(status):
    """At the calling rank's exit, abort the job with ``status`` (an int;
    0 finalizes as usual), as mpi4py's finalizer calls ``MPI_Abort``
    then; ``python -m mpi4py`` asks for it on an uncaught exception."""
    ctx = current()
    if ctx is not None:
        ctx.abort_status = int(status)


def is_finalized():
    """Whether the calling rank called Finalize."""
    ctx = current()
    return ctx is not None and ctx.rank in ctx.world.finalized


def after_finalize(world, rank, what):
    """The FinalizedError for rank ``rank`` that ``what`` (``'used
    MPI_COMM_WORLD'``) after its Finalize."""
    return FinalizedError(
        'rank {} {} at {} after MPI.Finalize() at {}: MPI allows only '
        'Wtime, Get_version, Is_initialized and Is_finalized after '
        'Finalize (Open MPI aborts the job, exit status {})'.format(
            rank, what, user_site(2), world.finalized[rank],
            FinalizedError.errorcode))
