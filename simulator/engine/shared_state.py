"""Process-wide changes a rank makes that cannot be made private.

The recursion limit, the garbage collector's settings,
the C environment (``os.putenv``; ``os.environ`` is per rank), the time
zone (``time.tzset`` with the rank's ``TZ``) and the
attributes of library modules (``tempfile.tempdir = ...``: a library is
imported once for every rank) belong to the one real process (the
standard streams do not: see :mod:`simulator.engine.rank_sys`; nor do
the working directory and umask where each rank thread has its own, see
:func:`simulator.engine.process.own_working_directory`): when a rank
changes one of them, every other rank sees the change, where separate
processes would not. While a world runs (:func:`reported`), such a call
from a rank still happens, and a :class:`SharedStateWarning` names the
call, the rank and the user's file:line so the difference is never
silent.
"""
import builtins
import ctypes
import gc
import locale
import os
import reprlib
import signal
import socket
import sys
import threading
import time
import types
import warnings
import weakref

from simulator.engine import process, rank_builtins
from simulator.engine.actors import current
from simulator.engine.libraries import (caller_is_user, find_spec_without,
                                        is_library_file, then_after_exec)
from simulator.engine.patches import PatchSet, module_class, wrap
from simulator.engine.trace import capture, resolve, user_frame

__all__ = ['SharedStateWarning', 'reported', 'warn_shared']

# Installed by reported(); _install is defined below.
_patches = PatchSet(lambda: _install())


class SharedStateWarning(UserWarning):
    """A rank changed state that all ranks share (one process)."""


_EVERYONE = ('the simulator runs every rank in one process, so all ranks '
             'see this change (separate processes would not)')


def warn_shared(call, consequence=_EVERYONE, verb='called'):
    """Warn that the calling rank made ``call`` (a description such as
    ``"sys.setrecursionlimit(100)"``), which all ranks see."""
    context = current()
    if context is None:
        return
    filename, lineno, _ = user_frame(resolve(capture(2)))
    if is_library_file(filename):
        return      # a library on its own (pytest's capsys...), not the user
    warnings.warn_explicit(SharedStateWarning(
        'rank {} {} {} at {}:{}: {}'.format(
            context.rank, verb, call, filename, lineno, consequence)),
        SharedStateWarning, filename, lineno)


def _patch(owner, name, describe, users_only=False,
           consequence=_EVERYONE, private=None):
    """Report ``owner.name``'s calls in a rank (``users_only``: only the
    user's own; libraries make these for a moment and undo them, as
    ``timeit`` disables the collector while it times; ``private(context)``:
    the rank has its own, nothing to report; ``describe`` answering None:
    a call that changes nothing shared)."""
    def make(original):
        def call(*args, **kwargs):
            context = current()
            if (not users_only or (context is not None and
                                   caller_is_user())) and \
                    (private is None or context is None or
                     not private(context)):
                said = describe(*args, **kwargs)
                if said is not None:
                    warn_shared(said, consequence)
            return original(*args, **kwargs)
        return call
    return wrap(owner, name, make)


def _own_directory(context):
    return context.own_directory


def _arguments(name):
    def describe(*args):
        return '{}({})'.format(name, ', '.join(map(repr, args)))
    return describe


_STANDARD_FD = ('descriptors 0-2 belong to the one process, so every '
                'rank\'s output through them (and the launcher\'s) goes '
                'where this rank sends it (a rank silenced at the '
                'descriptor silences all); replace the rank\'s sys.stdout '
                'or sys.stderr instead, which is its own')


def _dup2(fd, fd2, inheritable=True):
    return 'os.dup2({}, {})'.format(fd, fd2) if fd2 in (0, 1, 2) else None


_TIMER = ('its signal goes to the one process, not to this rank\'s '
          'handler: when it fires, the process acts on it (for SIGALRM, '
          'ending the whole run) where under mpiexec the rank\'s handler '
          'would run')


def _alarm(seconds):
    return 'signal.alarm({})'.format(seconds) if seconds else None


def _setlocale(category, value=None):
    # the C library's locale is the process's; a query changes nothing
    if value is None:
        return None
    names = [n for n in dir(locale) if n.startswith('LC_') and
             getattr(locale, n) == category]
    return 'locale.setlocale({}, {!r})'.format(
        'locale.' + names[0] if names else category, value)


def _setitimer(which, seconds, interval=0.0):
    return 'signal.setitimer({}, {})'.format(which, seconds) \
        if seconds else None


# -- library modules' attributes ---------------------------------------------

@module_class
class _LibraryModule(types.ModuleType):
    """A library module's class while worlds run: the program's own
    assignments to its attributes are reported (the libraries' own, and
    a rank's assignment that changes nothing, are not)."""

    def __setattr__(self, name, value):
        with _writing:      # two ranks setting one value: one report
            report = _module_write(self, name, value)
            super().__setattr__(name, value)
        if report is not None:      # warned outside the lock
            warn_shared(*report, verb='ran')

    def __delattr__(self, name):
        with _writing:
            report = _module_write(self, name, _DELETED)
            super().__delattr__(name)
        if report is not None:
            warn_shared(*report, verb='ran')


# The os module's names that a program assigns to pose as another
# platform (mpi4py's tests set os.name = 'nt', then os.environ = {}) and
# that the standard library reads as attributes at each call: per rank.
_OS_PER_RANK = ('name', 'environ')
_OS_KEY = ('os',)


def _os_attribute(name):
    def namespace(module):
        return types.ModuleType.__dict__['__dict__'].__get__(module)

    def get(module):
        state = process.process_state()
        own = None if state is None else state.own(_OS_KEY)
        if own is not None and name in own:
            return own[name]
        return namespace(module)[name]

    def set(module, value):
        state = process.process_state()
        if state is None:
            namespace(module)[name] = value
        elif value is namespace(module).get(name):
            state.own(_OS_KEY, create=True).pop(name, None)   # put back
        else:
            state.own(_OS_KEY, create=True)[name] = value
    return property(get, set)


@module_class
class _LibraryOs(_LibraryModule):
    """``os``'s class while worlds run: as a library module's, but for
    ``name`` and ``environ``, which a rank assigns for itself (``os``'s
    own functions read the module's global ``environ``, the rank's
    per-rank view; ``os.getenv`` is wrapped to read the one the rank
    assigned)."""

    def __setattr__(self, name, value):
        if name in _OS_PER_RANK:
            types.ModuleType.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)


for _name in _OS_PER_RANK:
    setattr(_LibraryOs, _name, _os_attribute(_name))


_DELETED = object()
_writing = threading.RLock()
_adopted = []       # modules whose class is _LibraryModule while installed


class _Write:
    """A rank's change to a library module's attribute, kept until every
    rank has made it too (then nothing differs from processes)."""

    __slots__ = ('what', 'value', 'ranks', 'site', 'reported')

    def __init__(self, what, value, rank, site):
        self.what, self.value, self.ranks = what, value, {rank}
        self.site, self.reported = site, False


_writes = weakref.WeakKeyDictionary()   # world -> {(module, name): _Write}
_SHARED_MODULE = ('the library is imported once for every rank, so all '
                  'ranks see the change (separate processes would not)')


def _same(old, value):
    if old is value:
        return True
    try:
        return value is not _DELETED and old is not _DELETED and \
            bool(old == value)
    except Exception:  # an array's ==, a broken __eq__: not the same
        return False


def _module_write(module, name, value):
    """Note a write (``_writing`` held); (call, consequence) to report now,
    or None. Every rank setting one value (a flag each process sets at
    start) is what processes do: a change is reported when another rank
    sets a different value, or, at the end of a rank that never made it,
    that the rank saw it all the same."""
    context = current()
    if context is None or is_library_file(
            sys._getframe(2).f_code.co_filename):
        return None
    key = (module.__name__, name)
    table = _writes.get(context.world)
    if table is None:
        table = _writes[context.world] = {}
        world = context.world
        world.end_checks.append(lambda rank: _report_unshared(world, rank))
    write = table.get(key)
    if _same(module.__dict__.get(name, _DELETED), value):
        if write is not None:
            write.ranks.add(context.rank)
        return None
    if write is not None and write.reported:
        return None     # said once
    what = 'del {}.{}'.format(*key) if value is _DELETED \
        else '{}.{} = {}'.format(key[0], name, reprlib.repr(value))
    if write is not None and write.ranks != {context.rank}:
        write.reported = True
        return what, 'rank {} ran {} at {}:{}; {}'.format(
            min(write.ranks), write.what, *write.site, _SHARED_MODULE)
    filename, lineno, _ = user_frame(resolve(capture(3)))
    table[key] = _Write(what, value, context.rank, (filename, lineno))
    return None


def _report_unshared(world, rank):
    """At the end of ``rank``'s program: the changes other ranks made
    and it did not."""
    with _writing:
        table = _writes.get(world, {})
        missed = [w for w in table.values()
                  if not w.reported and rank not in w.ranks]
        for write in missed:
            write.reported = True
    for write in missed:
        filename, lineno = write.site
        warnings.warn_explicit(SharedStateWarning(
            'rank {} ran {} at {}:{}, which rank {} never did: {}'.format(
                min(write.ranks), write.what, filename, lineno, rank,
                _SHARED_MODULE)), SharedStateWarning, filename, lineno)


def _adopt(module):
    """Report the program's writes to ``module`` if it is a library's."""
    if type(module) is not types.ModuleType or module in (sys, builtins):
        return      # sys, builtins (per rank), a class standing in...
    filename = module.__dict__.get('__file__')
    if filename is None:
        if module.__name__ not in sys.builtin_module_names:
            return
    elif not is_library_file(filename):
        return      # the user's: executed once per rank
    module.__class__ = _LibraryOs if module is os else _LibraryModule
    _adopted.append(module)


class _ImportHook:
    """First on ``sys.meta_path`` while worlds run: a library module a
    rank imports is adopted as those imported before were."""

    def find_spec(self, fullname, path=None, target=None):
        spec = find_spec_without(self, fullname, path, target)
        if spec is None or spec.origin is None or \
                not is_library_file(spec.origin):
            return spec
        return then_after_exec(spec, _adopt)


def _report_library_modules():
    for module in list(sys.modules.values()):
        _adopt(module)
    hook = _ImportHook()
    sys.meta_path.insert(0, hook)

    def undo():
        sys.meta_path.remove(hook)
        for module in _adopted:
            if type(module) in (_LibraryModule, _LibraryOs):
                types.ModuleType.__setattr__(module, '__class__',
                                             types.ModuleType)
        _adopted.clear()
    return undo


def _report_builtin_values():
    rank_builtins.report_shared[0] = warn_shared
    return lambda: rank_builtins.report_shared.__setitem__(0, None)


_ZONE = ('the time zone is the one process\'s: every rank\'s localtime, '
         'strftime and tzname now use it (separate processes would not)')
_getenv = ctypes.CDLL(None).getenv
_getenv.restype = ctypes.c_char_p
_getenv.argtypes = [ctypes.c_char_p]


def _tzset_for(original):
    def tzset():
        # time.tzset() reads the C environment; a rank's TZ is in its own
        # os.environ. The rank's is applied, for the whole process.
        context = current()
        if context is not None:
            wanted = os.environ.get('TZ')
            now = _getenv(b'TZ')
            if wanted != (None if now is None else os.fsdecode(now)):
                if wanted is None:
                    os.unsetenv('TZ')
                else:
                    os.putenv('TZ', wanted)
                warn_shared('time.tzset() with TZ={!r}'.format(wanted),
                            _ZONE)
        return original()
    return tzset


def _getenv_for(original):
    # os.getenv reads os's global environ: a rank that assigned os.environ
    # a mapping of its own reads that one, as its process would
    def getenv(key, default=None):
        state = process.process_state()
        own = None if state is None else state.own(_OS_KEY)
        if own is None or 'environ' not in own:
            return original(key, default)
        return own['environ'].get(key, default)
    return getenv


def _install():
    sys_dict = process.real_sys_dict()
    return [
        _report_builtin_values(),
        _report_library_modules(),
        _patch(os, 'chdir', lambda path: 'os.chdir({!r})'.format(path),
               private=_own_directory),
        _patch(os, 'umask', lambda mask: 'os.umask({:#o})'.format(mask),
               private=_own_directory),
        _patch(sys_dict, 'setrecursionlimit', lambda limit: (
            'sys.setrecursionlimit({})'.format(limit))),
        _patch(sys_dict, 'setswitchinterval', lambda interval: (
            'sys.setswitchinterval({})'.format(interval))),
        _patch(sys_dict, 'set_int_max_str_digits', lambda maxdigits: (
            'sys.set_int_max_str_digits({})'.format(maxdigits))),
        _patch(socket, 'setdefaulttimeout', lambda timeout: (
            'socket.setdefaulttimeout({!r})'.format(timeout))),
        _patch(locale, 'setlocale', _setlocale, users_only=True),
        _patch(os, 'dup2', _dup2, users_only=True,
               consequence=_STANDARD_FD),
        _patch(signal, 'alarm', _alarm, consequence=_TIMER),
        wrap(time, 'tzset', _tzset_for),
        wrap(os, 'getenv', _getenv_for),
        _patch(signal, 'setitimer', _setitimer, consequence=_TIMER),
    ] + [_patch(owner, name, _arguments(owner.__name__ + '.' + name),
                users_only=True)
         for owner, name in ((gc, 'disable'), (gc, 'enable'),
                             (gc, 'set_threshold'), (gc, 'freeze'),
                             (os, 'putenv'), (os, 'unsetenv'))]


def reported():
    """While inside (nestable), process-wide changes made by a rank are
    reported with a :class:`SharedStateWarning`."""
    return _patches.held()
