"""MPI 4 sessions (``MPI.Session``) and ``Intracomm.Create_from_group``.

A session names the process sets Open MPI 5 offers (``mpi://WORLD``,
``mpi://SELF``, ``mpix://SHARED``: the ranks of this rank's simulated
node), gives their groups, and communicators are made from a group by
its members alone (``Intracomm.Create_from_group``): the n-th call of
each member with the same group and string tag makes the same
communicator, as MPI requires.
"""
from simulator.engine.actors import current
from simulator.engine.communicator import CommState
from simulator.mpi.commattr import (ERRORS_RETURN, Errhandler, Info,
                                    call_errhandler, create_errhandler)
from simulator.mpi.constants import ERR_ARG, ERR_GROUP
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.group import Group
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.naming import describe, reduce_constant, unserializable
from simulator.mpi.unsupported import mpi41_missing
from simulator.mpi.values import VALUES

__all__ = ['Session', 'SESSION_NULL', 'create_from_group']

ERR_SESSION = VALUES['ERR_SESSION']
_PSETS = ('mpi://WORLD', 'mpi://SELF', 'mpix://SHARED')


def _rank():
    ctx = current()
    if ctx is None:
        raise RuntimeError('simulator.mpi.Session used outside a simulated '
                           'rank')
    return ctx


def _members(ctx, pset):
    world = ctx.world
    # The process sets of the rank's own job (a spawned job's are its).
    if pset == 'mpi://WORLD':
        return tuple(ctx.job.ranks)
    if pset == 'mpi://SELF':
        return (ctx.rank,)
    return tuple(r for r in ctx.job.ranks if world.contexts[r].processor_name
                 == ctx.processor_name)


class _SessionCore:
    """What every handle to one session shares."""

    __slots__ = ('open', 'errhandler')

    def __init__(self):
        self.open = False
        self.errhandler = ERRORS_RETURN


class Session(HandleMixin):
    """An MPI session: process sets and their groups. ``Session(s)`` is
    another handle to ``s``'s session (a copy of the handle, as in
    mpi4py: ``s.Finalize()`` makes ``s`` null, not the copy)."""

    __module__ = 'simulator.mpi'

    def __init__(self, session=None):
        if session is not None and not isinstance(session, Session):
            raise handle_argument_error('Session', session)
        self._core = session._core if session is not None else None

    @property
    def _open(self):
        return self._core is not None and self._core.open

    _errhandler = property(
        lambda self: ERRORS_RETURN if self._core is None
        else self._core.errhandler,
        lambda self, value: setattr(self._core, 'errhandler', value))

    def _handle_target(self):
        return self._core

    @classmethod
    def _from_target(cls, target):
        session = cls()
        session._core = target
        return session

    @classmethod
    def Init(cls, info=None, errhandler=None):
        """Open a session."""
        _rank()
        session = cls()
        session._core = _SessionCore()
        session._core.open = True
        if errhandler is not None:
            session._errhandler = errhandler
        return session

    def _check(self, op):
        if not self._open:
            raise MPIException(ERR_SESSION, 'Session.{} on SESSION_NULL or '
                               'a finalized session'.format(op))
        return _rank()

    def Finalize(self):
        """Close the session; the handle becomes SESSION_NULL."""
        self._check('Finalize')
        self._core.open = False
        self._core = None

    def Get_num_psets(self, info=None):
        """How many process sets the session offers."""
        self._check('Get_num_psets')
        return len(_PSETS)

    def Get_nth_pset(self, n, info=None):
        """The name of process set ``n``."""
        self._check('Get_nth_pset')
        if not isinstance(n, int) or not 0 <= n < len(_PSETS):
            raise MPIException(ERR_ARG, 'Session.Get_nth_pset: n={!r} not '
                               'in [0, {})'.format(n, len(_PSETS)))
        return _PSETS[n]

    def _pset(self, op, name):
        ctx = self._check(op)
        if name not in _PSETS:
            raise MPIException(ERR_ARG, 'Session.{}: no process set {!r} '
                               '(there are {})'.format(op, name,
                                                       list(_PSETS)))
        return _members(ctx, name)

    def Get_pset_info(self, pset_name):
        """Info of a process set (``mpi_size``)."""
        members = self._pset('Get_pset_info', pset_name)
        return Info.Create({'mpi_size': str(len(members))})

    def Create_group(self, pset_name):
        """The group of a process set."""
        return Group._of(self._pset('Create_group', pset_name))

    def Get_info(self):
        """The session's hints (none)."""
        self._check('Get_info')
        return Info.Create()

    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """A new error handler calling ``errhandler_fn(session, code)``."""
        return create_errhandler('session', errhandler_fn)

    def Get_errhandler(self):
        """A new handle to the session's error handler."""
        self._check('Get_errhandler')
        return Errhandler(self._errhandler)

    def Set_errhandler(self, errhandler):
        """Set the session's error handler (errors raise MPI.Exception)."""
        self._check('Set_errhandler')
        if not isinstance(errhandler, Errhandler):
            raise TypeError('Set_errhandler expects an Errhandler, got '
                            '{}'.format(describe(errhandler)))
        if not errhandler:
            raise MPIException(ERR_ARG, 'Set_errhandler with '
                               'ERRHANDLER_NULL')
        self._errhandler = Errhandler(errhandler)

    def Call_errhandler(self, errorcode):
        """Invoke the session's error handler with ``errorcode``."""
        self._check('Call_errhandler')
        call_errhandler(self._errhandler, self, errorcode)

    def free(self):
        """Call ``Finalize`` unless null (mpi4py's)."""
        if self:
            self.Finalize()

    def __bool__(self):
        return self._core is not None

    def __eq__(self, other):
        if not isinstance(other, Session):
            return NotImplemented
        return self._core is other._core

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None     # unhashable, as mpi4py's handles

    # MPI 4.1's session buffers: Open MPI 5.0 lacks them (mpi4py raises
    # NotImplementedError there), and so does the simulator.
    def Attach_buffer(self, buf):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Session.Attach_buffer')

    def Detach_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Session.Detach_buffer')

    def Flush_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Session.Flush_buffer')

    def Iflush_buffer(self):
        """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
        raise mpi41_missing('Session.Iflush_buffer')

    def __reduce__(self):
        if not self._open:
            return reduce_constant(self, 'SESSION_NULL') \
                if self is SESSION_NULL else \
                self._reduce_copy(SESSION_NULL)
        raise unserializable(self, 'a session belongs to the process')

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<simulator.mpi.Session{}>'.format(
            '' if self._open else ' (null)')


SESSION_NULL = Session()


def create_from_group(cls, group, stringtag='org.mpi4py', info=None,
                      errhandler=None):
    """A communicator over ``group``, made by its members (the n-th call
    of each with the same group and tag makes the same communicator)."""
    ctx = _rank()
    members = group._m
    if ctx.rank not in members:
        raise MPIException(ERR_GROUP, 'Create_from_group: rank {} is not '
                           'in the group {}'.format(ctx.rank, list(members)))
    if not isinstance(stringtag, str):
        raise TypeError('Create_from_group: stringtag must be a str, got '
                        '{!r}'.format(stringtag))
    key = (stringtag, members)
    counts = ctx.local.setdefault('mpi.create_from_group', {})
    counts[key] = n = counts.get(key, 0) + 1
    state = CommState(ctx.world, ('from_group', stringtag, members, n),
                      list(members), members.index(ctx.rank),
                      'Create_from_group({!r})#{}'.format(stringtag, n),
                      title='')
    return cls(state)
