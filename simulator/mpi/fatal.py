"""Error handlers that end the job: a communicator or window whose
handler is MPI_ERRORS_ARE_FATAL or MPI_ERRORS_ABORT (the program's
``Set_errhandler``, or ``mpi4py.rc.errors`` set to ``'fatal'``,
``'abort'`` or ``'default'``) aborts the job when one of its calls
fails, as Open MPI does inside the call: it prints the error and ends
the job with the error class as its exit status (``MPI_ERR_RANK``: 6).
Under mpi4py's default, ERRORS_RETURN, the call raises ``MPI.Exception``
instead, which the program may catch.

The facade raises ``MPI.Exception`` wherever MPI returns an error; the
communicators' and windows' methods are wrapped to hand it to a fatal
handler. The wrappers are put on the classes the first time any rank
asks for such a handler (a run that never does pays nothing for them)
and stay: they act only while the object's handler is fatal.
"""
import functools

from simulator.engine.actors import current
from simulator.mpi.commattr import abort_job, is_fatal
from simulator.mpi.comm import Comm
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.initialization import on_fatal_handler
from simulator.mpi.naming import with_subclasses
from simulator.mpi.win import Win

__all__ = ['watch_handles']

# the handlers' own calls (Call_errhandler runs a fatal one itself), and
# Abort, which ends the job anyway
_UNWATCHED = frozenset(('Get_errhandler', 'Set_errhandler', 'Call_errhandler',
                        'Create_errhandler', 'Abort'))


def _targets():
    """(class, name, function) of every public method of the
    communicators, the windows and their mixins, where it is defined."""
    seen = set()
    for handled in with_subclasses(Comm, Win):
        for cls in handled.__mro__:
            if cls in seen or cls.__module__ == 'builtins':
                continue
            seen.add(cls)
            for name, raw in vars(cls).items():
                if name.startswith('_') or name in _UNWATCHED or \
                        not callable(raw) or isinstance(
                            raw, (type, staticmethod, classmethod)):
                    continue
                yield cls, name, raw


def _mpi_function(name):
    # Comm.send -> MPI_Send, as Open MPI names the failed call
    return 'MPI_' + name[:1].upper() + name[1:]


def _abort_if_fatal(obj, name, error):
    ctx = current()
    if ctx is None or not isinstance(obj, (Comm, Win)):
        return
    try:
        handler = obj._errhandler()
        where = obj._checked().name if isinstance(obj, Comm) else \
            obj._state.name
    except MPIException:
        return      # a null handle: its errors are not its handler's
    if not is_fatal(handler):
        return
    errorclass = error.Get_error_class()
    raise abort_job(
        'rank {}: {} failed on {} ({}), whose error handler is MPI_{}: the '
        'job aborts, as Open MPI aborts it, with exit status {} (under '
        'ERRORS_RETURN, mpi4py.rc.errors = "exception", the call raises '
        'MPI.Exception)'.format(ctx.rank, _mpi_function(name), where, error,
                                handler.name, errorclass),
        errorclass) from error


def _watched(raw, name):
    @functools.wraps(raw)
    def call(self, *args, **kwargs):
        try:
            return raw(self, *args, **kwargs)
        except MPIException as error:
            _abort_if_fatal(self, name, error)
            raise
    call.simulator_fatal_watch = True
    return call


def watch_handles():
    """Wrap the communicators' and windows' methods (those not wrapped
    yet: virtual time's wrappers, undone at the end of a run, may have
    put the plain ones back) so that an error under a fatal handler
    aborts the job."""
    for cls, name, raw in list(_targets()):
        if not getattr(raw, 'simulator_fatal_watch', False):
            setattr(cls, name, _watched(raw, name))


on_fatal_handler(watch_handles)
