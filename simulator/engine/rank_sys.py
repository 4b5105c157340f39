"""``sys.stdout``, ``sys.stderr``, ``sys.stdin``, ``sys.path`` and
``sys.excepthook`` per rank.

Each process has its own standard streams and its own import path: a
program that captures its stderr in a ``StringIO`` around a failing call
(mpi4py's tests do) reads only its own traceback, and a
``sys.path.insert`` changes where that process imports from. While worlds
run, ``sys``'s class (see :class:`RankSys`) answers these names per rank:
a rank starts with the process's streams (the launcher's: rank-prefixed
under ``python -m simulator``, pytest's capture in a test) and path, and
what it assigns or mutates stays its own.

Python code reads them as attributes of the module, which the class
serves. C code reads the streams from ``sys``'s namespace directly
(``print()``, ``input()``, the interpreter's own tracebacks): there each
stream is a :class:`_CurrentStream`, which writes to the calling rank's.
The import system reads ``sys.path`` as an attribute (importlib's
``PathFinder``), so a rank's path is the one its imports search. What
stays the process's: ``sys.modules`` (a module that another rank has
imported is found there, whatever this rank's path says; the user's own
modules are still executed once per rank, see
:mod:`simulator.engine.modules`) but for the program a process runs:
``'__main__'`` and the names of its kind (``'__mp_main__'``, mpi4py.futures'
``'__worker__'``) a rank assigns there are its own (runpy's ``run_path``
swaps ``__main__`` while it runs a script); ``sys.meta_path``,
``sys.path_hooks`` and ``sys.path_importer_cache`` (libraries install
their hooks there).

``sys.excepthook`` is a process's too: a library that installs its own
(an MPI abort hook) and later asks whether it is still installed must
get its own answer in each rank, not the last installing rank's.
"""
import sys
import types

from simulator.engine.patches import module_class

__all__ = ['RankSys', 'install', 'rank_setter', 'rank_module']

STREAMS = ('stdin', 'stdout', 'stderr')
# What a rank's sys.__stdout__ is (the streams its process started with).
_ORIGINAL = {'__stdin__': 'stdin', '__stdout__': 'stdout',
             '__stderr__': 'stderr'}
_KEY = ('sys',)         # the rank's values in its ProcessState.objects

# While installed: the process's streams (what sys.stdout is outside any
# rank) and the calling rank's ProcessState getter.
_shared = {}
_process_state = [lambda: None]


def _sys_dict():
    return types.ModuleType.__dict__['__dict__'].__get__(sys)


def _own():
    """The calling rank's values ({name: value}), or None outside a rank."""
    state = _process_state[0]()
    if state is None:
        return None
    own = state.objects.get(_KEY)
    if own is None:
        own = state.objects[_KEY] = {}
    return own


def _stream(name):
    """The calling rank's (or, outside a rank, the process's) stream."""
    own = _own()
    if own is not None and name in own:
        return own[name]
    return _shared[name] if name in _shared else _sys_dict()[name]


def _stream_property(name):
    def get(module):
        return _stream(name)

    def set(module, value):
        own = _own()
        if own is None:
            if name not in _shared:
                _sys_dict()[name] = value
            elif not isinstance(value, _CurrentStream):
                _shared[name] = value
        elif value is _shared.get(name) or isinstance(value, _CurrentStream):
            # Put back: the rank follows the process's stream again.
            own.pop(name, None)
        else:
            own[name] = value
    return property(get, set)


def _original_property(name):
    def get(module):
        own = _own()
        if own is None:
            return _sys_dict()[name]
        # A process's own stream, before it replaced any: the launcher's.
        return own.get(name, _shared.get(_ORIGINAL[name],
                                         _sys_dict()[name]))

    return property(get, _setter(name))


def _get_path(module):
    own = _own()
    if own is None:
        return _sys_dict()['path']
    path = own.get('path')
    if path is None:
        # The process's path as the rank first looks (the launcher's
        # entries, the script's folder...).
        path = own['path'] = list(_sys_dict()['path'])
    return path


def rank_setter(name, own, shared):
    """A module attribute's setter that keeps ``name`` per rank: in the
    calling rank's dict ``own()``, or in the mapping ``shared()`` (the
    process's values) outside a rank (``own()`` None). The per-rank
    ``sys``, ``warnings`` and ``threading`` names all set this way."""
    def set(module, value):
        mine = own()
        if mine is None:
            shared()[name] = value
        else:
            mine[name] = value
    return set


def _setter(name):
    return rank_setter(name, _own, _sys_dict)


def _get_excepthook(module):
    own = _own()
    if own is not None and 'excepthook' in own:
        return own['excepthook']
    return _sys_dict()['excepthook']


_DELETED = object()     # a main-like name the rank deleted
_slots = {}             # the _RankSlot put in the process's sys.modules


def _main_like(key):
    # '__main__' and its kind: the program a process runs, one per process
    return isinstance(key, str) and len(key) > 4 and \
        key.startswith('__') and key.endswith('__')


def _overrides(create=False):
    own = _own()
    if own is None:
        return None
    table = own.get('modules')
    if table is None and create:
        table = own['modules'] = {}
    return table


def rank_module(name):
    """The module the calling rank itself put at ``sys.modules[name]``
    (the script runpy runs as ``'__main__'``), or None."""
    table = _overrides()
    found = table.get(name) if table else None
    return None if found is _DELETED else found


@module_class
class _RankSlot(types.ModuleType):
    # The process's sys.modules[name] for a main-like name ranks set (a
    # comment: a docstring would answer for the module's own __doc__):
    # C code (pickle) reads it there and gets the calling rank's module.

    def __init__(self, name):
        super().__init__(name)
        own = types.ModuleType.__dict__['__dict__'].__get__(self)
        for key in ('__doc__', '__package__', '__loader__', '__spec__'):
            del own[key]

    def __getattr__(self, name):
        module = rank_module(types.ModuleType.__getattribute__(
            self, '__name__'))
        if module is None:
            raise AttributeError(name)
        return getattr(module, name)


class _RankModules(dict):
    """``sys.modules`` as a rank's Python code sees it (importlib's
    included): the process's dict, but for the main-like names a rank
    assigns or deletes, which are the rank's own. Its own storage stays
    empty: every method answers from the process's dict and the rank's
    names (C code reads the process's dict itself)."""

    __slots__ = ()
    __hash__ = None

    @staticmethod
    def _real():
        return _sys_dict()['modules']

    def _merged(self):
        table, real = _overrides(), self._real()
        if not table and not _slots:
            return real
        merged = {k: v for k, v in real.items()
                  if not isinstance(v, _RankSlot)}
        for key, value in (table or {}).items():
            if value is _DELETED:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def __getitem__(self, key):
        table = _overrides()
        if table and key in table:
            if table[key] is _DELETED:
                raise KeyError(key)
            return table[key]
        value = self._real()[key]
        if isinstance(value, _RankSlot):
            raise KeyError(key)     # other ranks' name, not this one's
        return value

    def __setitem__(self, key, value):
        real = self._real()
        table = _overrides(create=_main_like(key))
        if table is None or not _main_like(key):
            real[key] = value
        elif key in real and value is real[key]:
            table.pop(key, None)    # put back: the process's again
        else:
            table[key] = value
            if key not in real:
                real[key] = _slots[key] = _RankSlot(key)

    def __delitem__(self, key):
        table = _overrides(create=_main_like(key))
        if table is None or not _main_like(key):
            del self._real()[key]
        elif key not in self:
            raise KeyError(key)
        elif key in self._real():
            table[key] = _DELETED
        else:
            del table[key]

    def __contains__(self, key):
        table = _overrides()
        if table and key in table:
            return table[key] is not _DELETED
        value = self._real().get(key, _DELETED)
        return value is not _DELETED and not isinstance(value, _RankSlot)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def __or__(self, other):
        return dict(self._merged()) | other

    def __ror__(self, other):
        return other | dict(self._merged())

    def popitem(self):
        return self._real().popitem()

    def clear(self):
        self._real().clear()

    def copy(self):
        return dict(self._merged())

    def keys(self):
        return self._merged().keys()

    def values(self):
        return self._merged().values()

    def items(self):
        return self._merged().items()

    def __iter__(self):
        return iter(self._merged())

    def __reversed__(self):
        return reversed(self._merged())

    def __len__(self):
        return len(self._merged())

    def __eq__(self, other):
        return self._merged() == other

    def __ne__(self, other):
        return self._merged() != other

    def __repr__(self):
        return repr(self._merged())

    def __reduce__(self):
        return dict, (dict(self._merged()),)


_RANK_MODULES = _RankModules()


def _get_modules(module):
    return _sys_dict()['modules'] if _own() is None else _RANK_MODULES


def _set_modules(module, value):
    _sys_dict()['modules'] = value      # the process's (none does this)


def _get_platform(module):
    own = _own()
    if own is not None and 'platform' in own:
        return own['platform']
    return _sys_dict()['platform']


@module_class
class RankSys(types.ModuleType):
    """Base of ``sys``'s class while worlds run: the standard streams (and
    ``__stdout__``...), ``path``, ``excepthook`` and ``platform`` (which a
    program assigns to pose as another platform) answer per rank."""

    path = property(_get_path, _setter('path'))
    excepthook = property(_get_excepthook, _setter('excepthook'))
    modules = property(_get_modules, _set_modules)
    platform = property(_get_platform, _setter('platform'))


for _name in STREAMS:
    setattr(RankSys, _name, _stream_property(_name))
for _name in _ORIGINAL:
    setattr(RankSys, _name, _original_property(_name))


class _CurrentStream:
    """What ``sys``'s namespace holds for a standard stream while worlds
    run, for the C code that reads it there: the calling rank's stream
    (the process's outside a rank)."""

    def __init__(self, name):
        self._name = name

    def write(self, text):
        target = _stream(self._name)
        # print() with sys.stdout set to None prints nothing.
        return len(text) if target is None else target.write(text)

    def flush(self):
        target = _stream(self._name)
        if target is not None:
            target.flush()

    def __getattr__(self, name):
        return getattr(_stream(self._name), name)

    def __repr__(self):
        return repr(_stream(self._name))


def install(process_state):
    """Serve the streams per rank (``process_state()`` gives the calling
    rank's ProcessState, None outside a rank); the caller sets ``sys``'s
    class to a subclass of :class:`RankSys`. Returns the undo function."""
    namespace = _sys_dict()
    _process_state[0] = process_state
    for name in STREAMS:
        _shared[name] = namespace[name]
        namespace[name] = _CurrentStream(name)

    def undo():
        for name in STREAMS:
            namespace[name] = _shared.pop(name)
        modules = namespace['modules']
        for name, slot in _slots.items():
            if modules.get(name) is slot:
                del modules[name]
        _slots.clear()
        _process_state[0] = lambda: None
    return undo
