"""MPI's start in each rank, as ``mpi4py.rc`` asks for it, and the
thread level it gives.

mpi4py initialises MPI when ``mpi4py.MPI`` is imported, reading its
``rc`` options (each overridden by a ``MPI4PY_RC_<NAME>`` environment
variable): with ``initialize`` false it leaves that to ``MPI.Init()`` /
``MPI.Init_thread()``; with ``threads`` it asks for ``thread_level``
(``'multiple'`` unless set), and Open MPI 5 gives the level asked for;
``finalize`` (by default what ``initialize`` is) says whether it calls
``MPI_Finalize`` at exit. A rank here reads them at its first use of
MPI (its program sets ``rc`` before importing ``mpi4py.MPI``, which the
ranks share), so that ``Query_thread()``, ``Is_initialized()`` and
``INFO_ENV``'s ``thread_level`` answer as the process's would, and:

- a communicator used before ``Init`` when ``rc.initialize`` is false
  is :class:`~simulator.errors.NotInitializedError` (Open MPI aborts the
  job, exit status 14), and a second ``Init`` is ``MPI.Exception``
  ``ERR_OTHER`` as Open MPI's;
- a rank that MPI was started in and that ends without ``Finalize`` when
  mpi4py will not finalize for it gets the report mpiexec's failed job
  gives (its exit status 1);
- below ``MPI_THREAD_MULTIPLE``, a communicator used from a thread the
  level does not allow (any but the rank's main thread at ``SINGLE`` or
  ``FUNNELED``; at ``SERIALIZED`` while another of its threads is blocked
  in MPI) is :class:`~simulator.errors.ThreadLevelError`: MPI leaves such
  calls undefined, and a real MPI often gets through them by luck.
"""
import functools
import os
import sys

from simulator.engine.actors import current, current_actor
from simulator.engine.trace import user_site
from simulator.errors import (NotFinalizedError, NotInitializedError,
                              ThreadLevelError)
from simulator.mpi.constants import ERR_OTHER
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import (THREAD_FUNNELED, THREAD_MULTIPLE,
                                     THREAD_SERIALIZED, THREAD_SINGLE)

__all__ = ['LEVEL_NAMES', 'RankStart', 'start_of', 'init', 'is_initialized',
           'query_thread', 'check_thread', 'level_name', 'errors_policy',
           'on_fatal_handler', 'fatal_handler_in_use']

LEVEL_NAMES = ('MPI_THREAD_SINGLE', 'MPI_THREAD_FUNNELED',
               'MPI_THREAD_SERIALIZED', 'MPI_THREAD_MULTIPLE')
_LEVELS = {'single': THREAD_SINGLE, 'funneled': THREAD_FUNNELED,
           'serialized': THREAD_SERIALIZED, 'multiple': THREAD_MULTIPLE}
_ERRORS = ('exception', 'default', 'abort', 'fatal')
_TRUE = ('true', 'yes', 'on', 'y', '1')
_FALSE = ('false', 'no', 'off', 'n', '0')


class RankStart:
    """How MPI started in one rank: ``initialized``, the ``level`` it
    provides, whether mpi4py ``finalize``\\ s it at exit, and the option
    settings it came from (for messages)."""

    __slots__ = ('initialized', 'level', 'finalize', 'origin', 'errors')

    def __init__(self, initialized, level, finalize, origin,
                 errors='exception'):
        self.initialized = initialized
        self.level = level
        self.finalize = finalize
        self.origin = origin
        # rc.errors: the error handler mpi4py gives the communicators
        # ('exception': ERRORS_RETURN; 'fatal', 'abort', or 'default',
        # which leaves MPI's ERRORS_ARE_FATAL)
        self.errors = errors


def _option(rc, name, default):
    """``rc.<name>``, or its ``MPI4PY_RC_<NAME>`` variable in the rank's
    environment read as mpi4py reads one (digits for a number, yes/no
    words for a flag, else lower-case text, which ``rc.<name>`` then
    holds, as in mpi4py); with where it came from."""
    variable = 'MPI4PY_RC_' + name.upper()
    text = os.environ.get(variable)
    if text is None:
        value = getattr(rc, name, default)
        return value, 'mpi4py.rc.{} = {!r}'.format(name, value)
    stripped = text.strip(' \t')
    if type(default) is int and stripped.isdigit():
        value = int(stripped)
    elif text.lower() in _TRUE:
        value = True
    elif text.lower() in _FALSE:
        value = False
    else:
        value = text.lower()
    try:
        setattr(rc, name, value)    # as mpi4py keeps what it read there
    except Exception:   # noqa: B902 -- mpi4py ignores any failure too
        pass
    return value, '{}={}'.format(variable, text)


def _flag(value, default):
    """A yes/no option as mpi4py reads it (anything else: the default,
    where mpi4py warns)."""
    if value in (True, 'yes'):
        return True
    if value in (False, 'no'):
        return False
    return default


def _read_options():
    mpi4py = sys.modules.get('mpi4py')
    rc = getattr(mpi4py, 'rc', None)
    initialize, initialize_from = _option(rc, 'initialize', True)
    threads, threads_from = _option(rc, 'threads', True)
    thread_level, level_from = _option(rc, 'thread_level', 'multiple')
    finalize, _ = _option(rc, 'finalize', None)
    errors, _ = _option(rc, 'errors', 'exception')
    if errors not in _ERRORS:
        errors = 'exception'    # mpi4py warns and keeps its default
    initialize = _flag(initialize, True)
    if not _flag(threads, True):
        level, origin = THREAD_SINGLE, threads_from
    else:
        level = _LEVELS.get(thread_level, THREAD_MULTIPLE)
        origin = level_from
    finalize = initialize if finalize is None else _flag(finalize,
                                                         initialize)
    if initialize:
        origin = 'mpi4py initialized it at import, {}'.format(origin)
    else:
        origin = initialize_from
    return RankStart(initialize, level, finalize, origin, errors)


def start_of(world, rank):
    """The :class:`RankStart` of ``rank`` (read from the options at its
    first use of MPI)."""
    start = world.mpi_starts.get(rank)
    if start is None:
        start = world.mpi_starts[rank] = _read_options()
        if len(world.mpi_starts) == 1:
            world.end_checks.append(lambda ended: _check_finalized(
                world, ended))
            world.exit_checks.append(functools.partial(
                _check_finalized_at_exit, world))
        _watch_waits(world, start)
        if start.errors != 'exception':
            fatal_handler_in_use()
    return start


# What to do once a rank asks for a fatal error handler (rc.errors, or a
# Set_errhandler): simulator.mpi.fatal registers the watch of the handles'
# methods here, below the modules that detect it.
_fatal_watchers = []


def on_fatal_handler(fn):
    """Call ``fn()`` whenever a rank asks for a fatal error handler."""
    _fatal_watchers.append(fn)


def fatal_handler_in_use():
    """A rank asked for ERRORS_ARE_FATAL or ERRORS_ABORT somewhere."""
    for fn in _fatal_watchers:
        fn()


def _watch_waits(world, start):
    """Below MULTIPLE, check the rank's blocking waits too (a
    ``Request.Wait`` from a worker thread makes no communicator call)."""
    if start.level != THREAD_MULTIPLE and world.thread_check is None:
        def check(actor, record, what):
            mine = world.mpi_starts.get(actor.rank)
            if mine is not None and mine.initialized and \
                    mine.level != THREAD_MULTIPLE:
                _against_level(world, actor.rank, mine, actor,
                               '{} its {}'.format(what, record.op))
        world.thread_check = check


def init(required=None):
    """``MPI.Init()`` (``required`` None: ``MPI_THREAD_SINGLE``, as
    Open MPI's ``MPI_Init``) or ``MPI.Init_thread(required)`` in the
    calling rank; the level provided."""
    call = 'MPI.Init()' if required is None else \
        'MPI.Init_thread({!r})'.format(required)
    ctx = current()
    if ctx is None:
        return THREAD_MULTIPLE if required is None else required
    start = start_of(ctx.world, ctx.rank)
    if start.initialized:
        raise MPIException(ERR_OTHER, 'rank {} called {} at {}, but MPI is '
                           'already initialized in it ({}): MPI starts once '
                           'per process'.format(ctx.rank, call,
                                                user_site(2), start.origin))
    level = THREAD_SINGLE if required is None else required
    if level not in _LEVELS.values():
        raise MPIException(ERR_OTHER, 'rank {} called {} at {}: not a '
                           'thread level (MPI.THREAD_SINGLE... '
                           'MPI.THREAD_MULTIPLE)'.format(
                               ctx.rank, call, user_site(2)))
    start.initialized = True
    start.level = level
    _watch_waits(ctx.world, start)
    start.origin = '{} at {}'.format(call, user_site(2))
    return level


def errors_policy():
    """The calling rank's ``mpi4py.rc.errors`` ('exception' outside a
    rank)."""
    ctx = current()
    if ctx is None:
        return 'exception'
    return start_of(ctx.world, ctx.rank).errors


def is_initialized():
    """Whether MPI started in the calling rank (it stays so after
    Finalize, as ``MPI_Initialized`` answers)."""
    ctx = current()
    if ctx is None:
        return False
    return start_of(ctx.world, ctx.rank).initialized


def query_thread():
    """The calling rank's thread level."""
    ctx = current()
    if ctx is None:
        return THREAD_MULTIPLE
    return start_of(ctx.world, ctx.rank).level


def level_name():
    """``INFO_ENV``'s ``thread_level`` of the calling rank."""
    return LEVEL_NAMES[query_thread()]


def check_thread(world, rank, what):
    """Raise if the calling thread of ``rank`` may not use MPI now for
    ``what`` (``'MPI_COMM_WORLD'``): before Init, or against the thread
    level. Called on each use of a communicator; cheap at
    ``MPI_THREAD_MULTIPLE``."""
    start = world.mpi_starts.get(rank)
    if start is None:
        start = start_of(world, rank)
    if start.level == THREAD_MULTIPLE and start.initialized:
        return
    if not start.initialized:
        raise NotInitializedError(
            'rank {} used {} at {} before MPI.Init(): {}, so MPI starts '
            'at MPI.Init() or MPI.Init_thread() (Open MPI aborts the job, '
            'exit status {})'.format(rank, what, user_site(2),
                                     start.origin,
                                     NotInitializedError.errorcode))
    _against_level(world, rank, start, current_actor(), what)


def _against_level(world, rank, start, actor, what):
    """Raise if ``actor`` (a thread of ``rank``) may not call MPI (for
    ``what``) at the rank's level, below MULTIPLE."""
    if actor.main:
        if start.level != THREAD_SERIALIZED:
            return
    elif start.level != THREAD_SERIALIZED:
        raise ThreadLevelError(
            'rank {} used {} at {} from its thread {!r}, but MPI runs at '
            '{} here ({}): only the main thread may call MPI at that '
            'level; call MPI from the main thread or ask for '
            'MPI_THREAD_MULTIPLE (mpi4py\'s default)'.format(
                rank, what, user_site(2), actor.name,
                LEVEL_NAMES[start.level], start.origin))
    for other in world.actors[rank]:
        if other is not actor and other.waiting is not None:
            name = 'MainThread' if other.main else other.name
            raise ThreadLevelError(
                'rank {} used {} at {} from its thread {!r} while its '
                'thread {!r} is in {}, but MPI runs at '
                'MPI_THREAD_SERIALIZED here ({}): its threads may call MPI '
                'only one at a time; ask for MPI_THREAD_MULTIPLE (mpi4py\'s '
                'default) or let one thread at a time call MPI'.format(
                    rank, what, user_site(2), actor.name, name,
                    other.waiting.describe(), start.origin))


def _check_finalized_at_exit(world, rank, stop):
    """At ``os._exit(0)`` (``stop``, a ProcessExit) in ``rank``: mpi4py's
    finalizer does not run then, so MPI must have been finalized by the
    program."""
    start = world.mpi_starts.get(rank)
    if stop.status or start is None or not start.initialized or \
            rank in world.finalized:
        return
    raise NotFinalizedError(
        'rank {} called os._exit(0) at {} without MPI.Finalize(), and MPI '
        'started in it ({}): os._exit skips mpi4py\'s finalizer, and '
        'mpiexec ends such a job with exit status {} ("exiting '
        'improperly"); call MPI.Finalize() first'.format(
            rank, stop.site, start.origin, NotFinalizedError.errorcode))


def _check_finalized(world, rank):
    """At the end of ``rank``'s program: MPI started in it and neither
    the program nor mpi4py finalizes it."""
    start = world.mpi_starts.get(rank)
    if start is None or not start.initialized or start.finalize or \
            rank in world.finalized:
        return
    raise NotFinalizedError(
        'rank {} ended without MPI.Finalize(), but MPI started in it ({}) '
        'and mpi4py finalizes at exit only when mpi4py.rc.finalize is true '
        '(unless set, what rc.initialize is): mpiexec ends such a job with '
        'exit status {} ("exiting improperly"); call MPI.Finalize()'.format(
            rank, start.origin, NotFinalizedError.errorcode))
