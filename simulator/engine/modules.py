"""Per-rank copies of the user's modules: module globals are per process.

While a world runs, a module that a rank imports for the first time and
that is the user's own (its source file is not library code, see
:mod:`simulator.engine.libraries`; or its name was given to
:func:`register_private_module`) is executed once per rank: its globals
(counters, caches, registries) belong to that rank, as with processes.
Libraries (NumPy, Chainer, mpi4py...) stay shared.

``sys.modules`` holds one :class:`RankModule` for such a module; it
answers every attribute from the calling rank's copy, executing that copy
on the rank's first import or first use. Classes defined there keep
pickling between ranks: pickle looks ``module.Class`` up through the
proxy, so the sender and the receiver each find their own copy, as
separate processes would. Modules imported before the run, outside any
rank, stay shared (they were not imported by the program's ranks).
"""
import importlib.machinery
import importlib.util
from importlib import _bootstrap
import os
import sys
import sysconfig
import threading
import types

from simulator.engine.libraries import find_spec_without, is_library_file
from simulator.engine.patches import module_class
from simulator.engine.process import process_state

__all__ = ['RankModule', 'private_modules', 'register_private_module',
           'runs_per_rank']

_lock = threading.Lock()
_depth = 0
# runpy: a process's changes to it are its own (mpi4py.futures swaps its
# _TempModule to run the main script in a worker).
_forced = {'runpy'}
_stashed = {}           # forced modules imported before the run began
_prepare = {}           # name -> prepare(copy), run on each rank's copy
_outside = {}           # copies used outside any rank (after a run...)
_busy = threading.local()
_INSTALLED = tuple(sorted({os.path.join(os.path.abspath(p), '') for p in (
    sysconfig.get_paths()[k] for k in ('stdlib', 'platstdlib', 'purelib',
                                       'platlib')) if p}))
# Set on the proxy itself and shared by every rank: what the import
# system reads (a package's __path__) and writes while loading.
_SHARED = frozenset(('__name__', '__loader__', '__package__', '__path__',
                     '__file__', '__cached__'))


def register_private_module(name, prepare=None):
    """Execute module (or package) ``name`` once per rank while worlds
    run, even if it is installed as a library (``--private-module``);
    ``prepare(copy)``, if given, runs on each rank's copy once executed
    (what a process's package ``__init__`` does to it after importing)."""
    _forced.add(name)
    if prepare is not None:
        _prepare[name] = prepare


def _forced_name(name):
    return any(name == f or name.startswith(f + '.') for f in _forced)


def runs_per_rank(name, origin):
    """True for the module ``name`` from the file ``origin`` if each rank
    runs its own copy: the user's own Python source, or a module given to
    :func:`register_private_module`."""
    if not (isinstance(origin, str) and origin.endswith('.py')):
        return False
    # (_INSTALLED first: computing library_dirs imports from the standard
    # library, and must not come back here.)
    return _forced_name(name) or not (
        origin.startswith(_INSTALLED) or is_library_file(origin))


def _module_dict(module):
    return types.ModuleType.__dict__['__dict__'].__get__(module)


@module_class
class RankModule(types.ModuleType):
    # ``sys.modules[name]`` for a per-rank module: attributes resolve in
    # the calling rank's copy. (A comment, not a docstring: that would
    # answer for the module's own ``__doc__``.)

    def __init__(self, name, spec):
        super().__init__(name)
        own = _module_dict(self)
        del own['__spec__']         # served per rank (see __getattr__)
        del own['__doc__']          # the copy's docstring
        own['_RankModule__spec'] = spec

    def _copy(self, again=False):
        """The calling rank's copy of the module, executed on first use
        (and once more with ``again``: ``importlib.reload``)."""
        state = process_state()
        copies = _outside if state is None else state.modules
        name = _module_dict(self)['__name__']
        spec = _module_dict(self)['_RankModule__spec']
        module = copies.get(name)
        if module is None:
            module = importlib.util.module_from_spec(spec)
            copies[name] = module       # first, for circular imports
            try:
                spec.loader.exec_module(module)
                if name in _prepare:
                    _prepare[name](module)
            except BaseException:
                del copies[name]
                raise
        elif again:
            spec.loader.exec_module(module)
        return module

    @property
    def __doc__(self):
        return self._copy().__doc__

    @property
    def __dict__(self):
        return _module_dict(self._copy())

    def __getattr__(self, name):
        if name.startswith('__') and not _module_dict(self).get(
                '_RankModule__loading'):
            # The import system probing a module it has not run yet.
            raise AttributeError(name)
        # Every `import name` asks for __spec__: the rank's first import
        # executes its copy then, as a process's first import would.
        module = self._copy()
        try:
            return getattr(module, name)
        except AttributeError:
            child = sys.modules.get('{}.{}'.format(
                _module_dict(self)['__name__'], name))
            if isinstance(child, RankModule):
                return child        # imported by another rank's copy
            raise

    def __setattr__(self, name, value):
        if name in _SHARED:
            _module_dict(self)[name] = value
        elif name != '__spec__':        # each copy keeps its own spec
            setattr(self._copy(), name, value)

    def __delattr__(self, name):
        delattr(self._copy(), name)

    def __repr__(self):
        # As the module's own repr, <module 'name' from 'path'>.
        return _bootstrap._module_repr_from_spec(
            _module_dict(self)['_RankModule__spec'])


class _Loader:
    def __init__(self, spec):
        self._spec = spec

    def create_module(self, spec):
        return RankModule(spec.name, self._spec)

    def exec_module(self, module):
        own = _module_dict(module)
        # Asked again for a module already imported: importlib.reload,
        # which runs the calling rank's copy once more.
        again = own.get('_RankModule__loading', False)
        own['_RankModule__loading'] = True
        module._copy(again)

    def __getattr__(self, name):
        # get_code, get_source...: runpy-style launchers ask for them.
        return getattr(self._spec.loader, name)


class _Finder:
    """First on ``sys.meta_path`` while worlds run: a user module imported
    in a rank becomes a :class:`RankModule`."""

    def find_spec(self, fullname, path=None, target=None):
        if process_state() is None or getattr(_busy, 'on', False):
            return None
        _busy.on = True     # is_library_file may import (sysconfig...)
        try:
            return self._find_spec(fullname, path, target)
        finally:
            _busy.on = False

    def _find_spec(self, fullname, path, target):
        spec = find_spec_without(self, fullname, path, target)
        if spec is None:
            return None
        if spec.origin == 'frozen' and _forced_name(fullname):
            # Python 3.11 freezes runpy: a copy per rank runs its source.
            spec = importlib.machinery.PathFinder.find_spec(
                fullname, path) or spec
        origin = spec.origin
        if not spec.has_location or spec.loader is None or \
                not runs_per_rank(fullname, origin):
            return spec
        proxy = importlib.util.spec_from_loader(
            fullname, _Loader(spec), origin=origin,
            is_package=spec.submodule_search_locations is not None)
        if spec.submodule_search_locations is not None:
            proxy.submodule_search_locations = list(
                spec.submodule_search_locations)
        proxy.has_location = True
        proxy.cached = spec.cached
        return proxy


class private_modules:    # used like contextlib's helpers
    """While inside (nestable), the user's modules imported by ranks are
    per rank."""

    _finder = None

    def __enter__(self):
        global _depth
        with _lock:
            _depth += 1
            if _depth == 1:
                private_modules._finder = _Finder()
                sys.meta_path.insert(0, private_modules._finder)
                # Imported already (python -m imports runpy): set aside,
                # so that a rank's import makes its own.
                for name in _forced:
                    module = sys.modules.get(name)
                    if module is not None and \
                            not isinstance(module, RankModule):
                        _stashed[name] = sys.modules.pop(name)
        return self

    def __exit__(self, *exc):
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.meta_path.remove(private_modules._finder)
                private_modules._finder = None
                _outside.clear()
                sys.modules.update(_stashed)
                _stashed.clear()
        return False
