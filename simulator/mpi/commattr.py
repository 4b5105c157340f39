"""What a communicator carries besides its group: error handlers,
attributes (keyvals) and info hints, with mpi4py's ``Errhandler`` and
``Info`` objects.

A communicator keeps them in its rank's ``CommState.props`` (a rank is a
process: nothing here is shared between ranks). A communicator's
handler is the one the program set, or the one mpi4py gives every
communicator as ``mpi4py.rc.errors`` asks: ERRORS_RETURN by default,
with which errors raise ``MPI.Exception``. Under ERRORS_ARE_FATAL or
ERRORS_ABORT an error in one of its calls aborts the job
(:mod:`simulator.mpi.fatal`); ``Call_errhandler`` runs the handler that
is set.
"""
import collections
import itertools
import platform

from simulator.engine.actors import current, current_actor
from simulator.engine.process import launch_variables
from simulator.errors import AbortError
from simulator.mpi.constants import (ERR_ARG, ERR_COMM, ERR_INFO,
                                     ERR_INFO_KEY, ERR_INFO_NOKEY,
                                     ERR_INFO_VALUE, SUCCESS)
from simulator.mpi.attributes import Attributes
from simulator.mpi.cargs import c_int, c_str
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import predefined_free
from simulator.mpi.naming import (class_ref, describe, reduce_constant,
                                   unserializable)
from simulator.mpi.ranklocal import rank_local
from simulator.mpi.initialization import (errors_policy,
                                          fatal_handler_in_use, level_name)
from simulator.mpi.handles import (HandleMixin, handle_argument_error,
                                   register_fixed)

__all__ = ['Errhandler', 'Info', 'call_errhandler', 'create_errhandler',
           'abort_job', 'default_handler', 'is_fatal',
           'ERRHANDLER_NULL',
           'ERRORS_RETURN',
           'ERRORS_ARE_FATAL', 'ERRORS_ABORT', 'INFO_NULL', 'INFO_ENV',
           'KEYVAL_INVALID', 'TAG_UB', 'IO', 'WTIME_IS_GLOBAL',
           'UNIVERSE_SIZE', 'APPNUM', 'LASTUSEDCODE', 'CommProps',
           'MAX_USER_ERRHANDLERS']

KEYVAL_INVALID = -1
# Open MPI's predefined attribute keys (COMM_WORLD carries them).
TAG_UB, IO, WTIME_IS_GLOBAL, APPNUM, LASTUSEDCODE, UNIVERSE_SIZE = \
    0, 2, 3, 4, 5, 6
_PREDEFINED_KEYS = (TAG_UB, IO, WTIME_IS_GLOBAL, APPNUM, LASTUSEDCODE,
                    UNIVERSE_SIZE)
TAG_UB_VALUE = 2 ** 31 - 1

# mpi4py keeps a table of 32 Python error handlers per object kind.
MAX_USER_ERRHANDLERS = 32

MAX_INFO_KEY, MAX_INFO_VAL = 36, 256


# -- error handlers ---------------------------------------------------------
class _Handler:
    """One error handler (what Errhandler handles name)."""

    __slots__ = ('name', 'fn', '__weakref__')

    def __init__(self, name, fn=None):
        self.name = name
        self.fn = fn

    def __repr__(self):
        return '<error handler {}>'.format(self.name)


_FATAL = _Handler('ERRORS_ARE_FATAL')
_RETURN = _Handler('ERRORS_RETURN')
_ABORT = _Handler('ERRORS_ABORT')
_POLICY_HANDLERS = {'exception': _RETURN, 'fatal': _FATAL, 'abort': _ABORT,
                    'default': _FATAL}
# Open MPI's Fortran numbers of the predefined handlers.
for _number, _handler in ((1, _FATAL), (2, _RETURN), (3, _ABORT)):
    register_fixed(_handler, _number, 'Errhandler')


class Errhandler(HandleMixin):
    """The ``MPI.Errhandler`` type: a handle to an error handler."""

    __module__ = 'simulator.mpi'

    def __init__(self, errhandler=None):
        if errhandler is None:
            self._h = None
        elif isinstance(errhandler, Errhandler):
            self._h = errhandler._h
        elif isinstance(errhandler, _Handler):
            self._h = errhandler
        else:
            raise handle_argument_error('Errhandler', errhandler)

    def _handle_target(self):
        return self._h

    def Free(self):
        """Release this handle (it becomes ERRHANDLER_NULL); predefined
        constants stay as they are."""
        if self._h is None:
            raise MPIException(ERR_ARG, 'Free of ERRHANDLER_NULL')
        for name, constant in _CONSTANTS.items():
            if self is constant:
                raise predefined_free(ERR_ARG, name)
        if self._h.fn is not None:
            _user_handlers().discard(self._h)
        self._h = None

    def free(self):
        """Call ``Free`` if not null or predefined (mpi4py's)."""
        if self._h is not None and \
                not any(self is c for c in _CONSTANTS.values()):
            self.Free()

    def __bool__(self):
        return self._h is not None

    def __eq__(self, other):
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        for name, constant in _CONSTANTS.items():
            if self is constant:
                return reduce_constant(self, name)
        for constant in _CONSTANTS.values():
            if self._h is constant._h:
                return self._reduce_copy(constant)
        raise unserializable(self, 'a user error handler belongs to its '
                             'process')

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<simulator.mpi.Errhandler {}>'.format(
            'ERRHANDLER_NULL' if self._h is None else self._h.name)


def create_errhandler(kind, errhandler_fn):
    """A new user error handler for objects of ``kind`` ('comm',
    'win'...); at most MAX_USER_ERRHANDLERS of a kind live at once, as
    in mpi4py (RuntimeError beyond)."""
    if not callable(errhandler_fn):
        raise TypeError('Create_errhandler expects a callable, got '
                        '{!r}'.format(errhandler_fn))
    live = _user_handlers()
    if sum(h.name == kind for h in live) >= MAX_USER_ERRHANDLERS:
        raise RuntimeError('cannot create more than {} user error handlers '
                           'for {} objects (free some)'.format(
                               MAX_USER_ERRHANDLERS, kind))
    handler = _Handler(kind, errhandler_fn)
    live.add(handler)
    return Errhandler(handler)


def default_handler():
    """The handler mpi4py gives the calling rank's communicators and
    windows, as its ``rc.errors`` says ('default' leaves MPI's,
    ERRORS_ARE_FATAL)."""
    return _POLICY_HANDLERS[errors_policy()]


def is_fatal(handler):
    """Whether ``handler`` (a _Handler) ends the job at an error."""
    return handler is _FATAL or handler is _ABORT


def call_errhandler(errhandler, obj, errorcode):
    """Run ``errhandler`` for ``errorcode`` on ``obj`` (a communicator or
    window): a user function is called; ERRORS_ARE_FATAL / ERRORS_ABORT
    abort the world, as MPI does; ERRORS_RETURN returns."""
    if not isinstance(errorcode, int):
        raise TypeError('errorcode must be an int, got {!r}'.format(
            errorcode))
    handler = errhandler._h
    if handler is not None and handler.fn is not None:
        handler.fn(obj, errorcode)
    elif is_fatal(handler) and errorcode != SUCCESS:
        raise abort_job('rank {}: error handler {} called with error {} on '
                        '{}'.format(current().rank, handler.name, errorcode,
                                    describe(obj)), errorcode)


def abort_job(message, errorcode):
    """The AbortError a fatal error handler ends the calling rank's
    world with (the world already failed with it): raise it."""
    error = AbortError(message, errorcode=errorcode)
    current().world.fail(current_actor(), error)
    return error


def _user_handlers():
    ctx = current()
    local = _OUTSIDE if ctx is None else ctx.local
    return local.setdefault('mpi.errhandlers', set())


_OUTSIDE = {}

ERRHANDLER_NULL = Errhandler()
ERRORS_ARE_FATAL = Errhandler(_FATAL)
ERRORS_RETURN = Errhandler(_RETURN)
ERRORS_ABORT = Errhandler(_ABORT)
_CONSTANTS = {'ERRHANDLER_NULL': ERRHANDLER_NULL,
              'ERRORS_ARE_FATAL': ERRORS_ARE_FATAL,
              'ERRORS_RETURN': ERRORS_RETURN, 'ERRORS_ABORT': ERRORS_ABORT}


# -- info -------------------------------------------------------------------
class Info(HandleMixin):
    """The ``MPI.Info`` type: string hints (kept, never acted upon here)."""

    __module__ = 'simulator.mpi'

    def __init__(self, info=None):
        if info is None:
            self._d = None
        elif isinstance(info, Info):
            self._d = info._d
        else:
            raise handle_argument_error('Info', info)

    def _handle_target(self):
        return self._d

    @classmethod
    def _from_target(cls, target):
        info = cls()
        info._d = target
        return info

    @classmethod
    def Create(cls, items=None):
        """A fresh Info, with ``items`` (a mapping or pairs) if given."""
        info = cls()
        info._d = {}
        if items is not None:
            if hasattr(items, 'keys'):
                items = [(k, items[k]) for k in items.keys()]
            for key, value in items:
                info.Set(key, value)
        return info

    @classmethod
    def Create_env(cls, args=None):
        """An Info like INFO_ENV."""
        return cls.Create(INFO_ENV.items())

    @property
    def _m(self):
        if self._d is None:
            raise MPIException(ERR_INFO, 'operation on INFO_NULL')
        return self._d

    def Dup(self):
        """A copy with the same hints (of this handle's class)."""
        info = type(self)()
        info._d = dict(self._m)
        return info

    def Free(self):
        """Release the Info (the handle becomes INFO_NULL)."""
        self._m  # noqa: B018 -- raises on INFO_NULL
        if self is INFO_ENV:
            raise predefined_free(ERR_INFO, 'INFO_ENV')
        self._d = None

    def free(self):
        """Call ``Free`` if not null or predefined (mpi4py's)."""
        if self._d is not None and self is not INFO_ENV:
            self.Free()

    @staticmethod
    def _key(key):
        key = c_str(key)
        if not key or len(key) > MAX_INFO_KEY:
            raise MPIException(ERR_INFO_KEY, 'info key {!r} must have 1 to '
                               '{} characters'.format(key, MAX_INFO_KEY))
        return key

    def Get(self, key):
        """The value of ``key``, or None."""
        d = self._m
        return d.get(self._key(key))

    def Set(self, key, value):
        """Set ``key`` to the string ``value``."""
        d = self._m
        key = self._key(key)
        value = c_str(value)
        if not value or len(value) > MAX_INFO_VAL:
            raise MPIException(ERR_INFO_VALUE, 'info value for {!r} must '
                               'have 1 to {} characters'.format(
                                   key, MAX_INFO_VAL))
        d[key] = value

    def Delete(self, key):
        """Remove ``key`` (ERR_INFO_NOKEY if absent)."""
        d = self._m
        key = self._key(key)
        if key not in d:
            raise MPIException(ERR_INFO_NOKEY, 'info has no key {!r}'.format(
                key))
        del d[key]

    def Get_nkeys(self):
        """Number of keys."""
        return len(self._m)

    def Get_nthkey(self, n):
        """The ``n``-th key."""
        keys = list(self._m)
        n = c_int(n)
        if not 0 <= n < len(keys):
            # Open MPI's classes: a negative index is an argument error,
            # one past the keys a key that is not there.
            raise MPIException(ERR_ARG if n < 0 else ERR_INFO_KEY,
                               'info key index {} not in [0, {})'.format(
                                   n, len(keys)))
        return keys[n]

    # the mapping interface mpi4py adds
    def __bool__(self):
        return self._d is not None

    def __len__(self):
        return 0 if self._d is None else len(self._d)

    def __contains__(self, key):
        return self._d is not None and key in self._d

    def __iter__(self):
        return iter(list(self._d or ()))

    def __getitem__(self, key):
        if self._d is None:
            raise KeyError(key)     # mpi4py's mapping view of INFO_NULL
        value = self.Get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        if self._d is None:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self.Delete(key)

    def __eq__(self, other):
        if not isinstance(other, Info):
            return NotImplemented
        return self._d is other._d

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if self is INFO_NULL:
            return reduce_constant(self, 'INFO_NULL')
        if self is INFO_ENV:
            return reduce_constant(self, 'INFO_ENV')
        if self._d is INFO_ENV._d:
            return (_handle_to_env, (class_ref(type(self)),))
        return (_info_of, (None if self._d is None else list(self.items()),
                           class_ref(type(self))))

    def get(self, key, default=None):
        """The value of ``key`` or ``default``."""
        value = self.Get(key) if self._d is not None else None
        return default if value is None else value

    def keys(self):
        """The keys."""
        return list(self._d or ())

    def values(self):
        """The values."""
        return list((self._d or {}).values())

    def items(self):
        """Return (key, value) pairs."""
        return list((self._d or {}).items())

    def update(self, other=(), **kwds):
        """Set several keys."""
        if self._d is None:
            raise KeyError('update of INFO_NULL')
        items = other.items() if hasattr(other, 'items') else other
        for key, value in itertools.chain(items, kwds.items()):
            self.Set(key, value)

    def pop(self, key, *default):
        """Remove ``key``, returning its value."""
        value = self.Get(key) if self._d is not None else None
        if value is None:
            if default:
                return default[0]
            raise KeyError(key)
        self.Delete(key)
        return value

    def popitem(self):
        """Remove and return the last (key, value)."""
        if not self._d:
            raise KeyError('popitem(): info is empty')
        return self._d.popitem()

    def copy(self):
        """Duplicate, as ``Dup`` (a null handle for INFO_NULL)."""
        return type(self)() if self._d is None else self.Dup()

    def clear(self):
        """Remove every key (none in INFO_NULL)."""
        if self._d is not None:
            self._d.clear()

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<simulator.mpi.Info {}>'.format(
            'INFO_NULL' if self._d is None else self._d)


def _handle_to_env(cls):
    """A new handle to INFO_ENV (unpickling one)."""
    return cls(INFO_ENV)


def _info_of(items, cls=None):
    cls = Info if cls is None else cls
    return cls() if items is None else cls.Create(items)


class _EnvironmentHints(collections.UserDict):
    """INFO_ENV's hints, the calling rank's: what Open MPI 5's mpiexec
    gives each process (see :func:`_environment_hints`)."""

    @property
    def data(self):
        hints = rank_local('mpi.info_env', _environment_hints)
        if 'thread_level' in hints:
            # the rank's own level, which Init_thread may set later
            hints['thread_level'] = level_name()
        return hints

    @data.setter
    def data(self, value):
        pass        # UserDict.__init__'s: the rank's are made at first use


def _environment_hints():
    """INFO_ENV of the calling rank, keys in Open MPI's order: the launch
    (command, argv, wdir), the job's size (maxprocs, soft, ompi_np), the
    host and its architecture, and Open MPI's own; outside a rank only
    the thread level."""
    ctx = current()
    if ctx is None:
        return {'thread_level': level_name()}
    env = launch_variables(ctx)
    size = env['OMPI_COMM_WORLD_SIZE']
    # PMIx's namespace is prterun-HOST-PID@JOB: Open MPI keeps the
    # process's files under /tmp/ompi.PID/JOB/RANK.
    head, _, job = env['PMIX_NAMESPACE'].rpartition('@')
    return {'command': env['OMPI_COMMAND'], 'argv': env['OMPI_ARGV'],
            'maxprocs': size, 'soft': size, 'host': ctx.processor_name,
            'arch': platform.machine(),
            'wdir': env['OMPI_MCA_initial_wdir'],
            'thread_level': level_name(),
            'ompi_num_apps': env['OMPI_NUM_APP_CTX'],
            'ompi_first_rank': '0', 'ompi_np': size,
            'ompi_positioned_file_dir': '/tmp/ompi.{}/{}/{}'.format(
                head.rpartition('-')[2], job, env['OMPI_COMM_WORLD_RANK'])}


INFO_NULL = Info()
INFO_ENV = Info()
INFO_ENV._d = _EnvironmentHints()
register_fixed(INFO_ENV._d, 1, 'Info')


class CommProps(Attributes):
    """Error handlers, attributes and info of ``Comm``; a mixin over
    ``self._local`` (the rank's CommState) and ``self._state``."""

    # -- error handlers
    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """A new error handler calling ``errhandler_fn(comm, errorcode)``."""
        return create_errhandler('comm', errhandler_fn)

    def _checked(self):
        if self._state is None:
            raise MPIException(ERR_COMM, 'operation on COMM_NULL')
        return self._local

    def _errhandler(self):
        handler = self._checked().props.get('errhandler')
        return default_handler() if handler is None else handler

    def Get_errhandler(self):
        """A new handle to the communicator's error handler."""
        return Errhandler(self._errhandler())

    def Set_errhandler(self, errhandler):
        """Set the communicator's error handler."""
        if not isinstance(errhandler, Errhandler):
            raise TypeError('Set_errhandler expects an Errhandler, got '
                            '{}'.format(describe(errhandler)))
        s = self._checked()
        if errhandler._h is None:
            raise MPIException(ERR_ARG, 'Set_errhandler with '
                               'ERRHANDLER_NULL on {}'.format(s.name))
        s.props['errhandler'] = errhandler._h
        if is_fatal(errhandler._h):
            fatal_handler_in_use()

    def Call_errhandler(self, errorcode):
        """Invoke the communicator's error handler with ``errorcode``."""
        if not isinstance(errorcode, int):
            raise TypeError('errorcode must be an int, got {!r}'.format(
                errorcode))
        call_errhandler(Errhandler(self._errhandler()), self, errorcode)

    # -- attributes (the mixin's, over the state's props)
    _attr_kind, _attr_name = 'comm', 'Comm'
    _PREDEFINED_ATTRS = _PREDEFINED_KEYS

    def _attr_store(self, what):
        return self._checked().props.setdefault('attrs', {})

    def _predefined_attr(self, keyval):
        return _predefined_attr(self._checked(), keyval)

    def _inherit(self, new):
        """Give the new communicator ``new`` (made by Dup) the attributes
        this one's copy callbacks copy, and its error handler where MPI's
        inheritance decides it: mpi4py gives every communicator it makes
        ``rc.errors``' handler, unless that is 'default'."""
        old = self._s
        if old.ctx[0] == 'world' or old.props.get('predefined'):
            new._state.props['predefined'] = True
        if 'errhandler' in old.props and errors_policy() == 'default':
            new._state.props['errhandler'] = old.props['errhandler']
        self._copy_attrs_to(new)
        return new

    # -- info
    def Set_info(self, info):
        """Keep ``info``'s hints (the simulator acts on none)."""
        s = self._checked()
        if not isinstance(info, Info):
            raise TypeError('Set_info expects an Info, got {}'.format(
                describe(info)))
        s.props['info'] = dict(info._d or {})

    def Get_info(self):
        """A new Info with the hints in use, as Open MPI 5 answers: the
        MPI 4 assertions it knows (given ones kept, the others 'false'),
        and on a communicator made by Dup, Dup_with_info or Split_type
        its own two first; other hints are dropped."""
        s = self._checked()
        given = s.props.get('info', {})
        names = _DUP_HINTS if s.props.get('dup_hints') else ()
        return Info.Create([(key, _boolean(given.get(key, default)))
                            for key, default in names + _COMM_HINTS])

    info = property(Get_info, Set_info)


# Get_info's hints, with their defaults, in Open MPI 5.0's order.
_COMM_HINTS = (('mpi_assert_no_any_source', 'false'),
               ('mpi_assert_allow_overtaking', 'false'))
_DUP_HINTS = (('ompi_assert_lazy_barrier', 'false'),
              ('ompi_assert_active_poll', 'true'))


def _boolean(text):
    """A hint's value as Open MPI 5.0 reads a boolean: 'true' for true,
    yes (any case, spaces around) or a non-zero integer; 'false' for
    anything else (measured: 'on' and 'enabled' are false)."""
    text = text.strip().lower()
    try:
        true = int(text) != 0
    except ValueError:
        true = text in ('true', 'yes')
    return 'true' if true else 'false'


def _predefined_attr(state, keyval):
    """COMM_WORLD's predefined attributes, with Open MPI's values; its
    duplicates copy all but LASTUSEDCODE; other communicators have
    none."""
    if state.ctx[0] != 'world' and not (
            state.props.get('predefined') and keyval != LASTUSEDCODE):
        return None
    job = state.world.job_of[state.world_rank]
    appnum = job.appnum[job.job_rank(state.world_rank)]
    return {TAG_UB: TAG_UB_VALUE, IO: -1, WTIME_IS_GLOBAL: 0, APPNUM: appnum,
            UNIVERSE_SIZE: state.world.universe_size,
            LASTUSEDCODE: last_used_code()}[keyval]


def last_used_code():
    """The highest error code in use (grows with Add_error_class)."""
    from simulator.mpi.errors import last_used_code as last
    return last()

