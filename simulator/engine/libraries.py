"""Which source files are libraries, and which are the user's program.

Reports name "the user's line" (the innermost frame of the program, not of
the libraries it calls), and per-rank privatization executes the user's
own modules once per rank. Both ask :func:`is_library_file`. Library code
is: the standard library, anything under a ``site-packages`` folder, the
packages of installed distributions (editable installs included, found
through ``importlib.metadata``), the simulator itself, and folders added
with :func:`register_library`. Everything else (the script's folder, the
current directory, tests) is the user's.
"""
import importlib.metadata
import os
import site
import sys
import sysconfig
import threading

__all__ = ['is_library_file', 'library_dirs', 'register_library',
           'find_spec_without', 'then_after_exec', 'caller_is_user',
           'at_library_import']

_SIMULATOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_lock = threading.Lock()
_dirs = None
_extra = []
_asking = threading.local()     # hooks in find_spec_without, per thread


def _top_levels(dist):
    """Top-level package and module names a distribution installs."""
    names = (dist.read_text('top_level.txt') or '').split()
    if not names:
        names = {f.parts[0].split('.')[0] for f in dist.files or ()
                 if f.parts and not f.parts[0].endswith(('.dist-info',
                                                         '.egg-info'))}
    return [n for n in names if n.isidentifier()]


def _installed_packages():
    """Folders and module files of installed distributions, read from
    their metadata (no import, whatever the process has done to its
    modules): development installs live outside site-packages."""
    found = set()
    for dist in importlib.metadata.distributions():
        try:
            base = str(dist.locate_file(''))
            names = _top_levels(dist)
        except Exception:  # a broken distribution is not a library
            continue
        for name in names:
            folder = os.path.join(base, name)
            if os.path.isdir(folder):
                found.add(folder)
            elif os.path.isfile(folder + '.py'):
                found.add(folder + '.py')
    return found


def _compute():
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')
            if paths.get(k)}
    dirs.update(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.add(site.getusersitepackages())
    dirs.update(p for p in sys.path
                if 'site-packages' in p or 'dist-packages' in p)
    dirs.add(_SIMULATOR)
    dirs.update(_installed_packages())
    return tuple(sorted({os.path.join(os.path.abspath(d), '')
                         if os.path.isdir(d) else os.path.abspath(d)
                         for d in dirs}))


def library_dirs():
    """The library folders (computed once, on first use)."""
    global _dirs
    if _dirs is None:
        with _lock:
            if _dirs is None:
                _dirs = _compute() + tuple(_extra)
    return _dirs


def register_library(path):
    """Count the files under ``path`` (a folder or a module's file) as
    library code, e.g. a package of your own that calls MPI for the user."""
    global _dirs
    path = os.path.abspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, '')
    with _lock:
        _extra.append(path)
        if _dirs is not None:
            _dirs = _dirs + (path,)


def is_library_file(filename):
    """True for a file of the standard library, an installed package, the
    simulator or a registered library; False for the user's own code."""
    if filename.startswith('<'):
        # '<frozen importlib._bootstrap>' is the library; '<string>' and
        # '<stdin>' are code the user wrote.
        return filename.startswith('<frozen')
    return filename.startswith(library_dirs())


# The simulator's own files (its package folder, with a separator).
SIMULATOR_DIR = os.path.join(_SIMULATOR, '')


def is_simulator_file(filename):
    """True for a file of the simulator itself."""
    return filename.startswith(SIMULATOR_DIR)


def caller_is_user():
    """True when the function that calls this was itself called from the
    user's code (not from a library): for patches that act only on the
    program's own calls."""
    return not is_library_file(sys._getframe(2).f_code.co_filename)


def at_library_import(frame):
    """Whether ``frame`` runs a library's module code (its import, which
    a process runs once: here in the rank that imports it first), or
    library code that module code called."""
    while frame is not None:
        code = frame.f_code
        if not is_library_file(code.co_filename):
            return False
        if code.co_name == '<module>':
            return True
        frame = frame.f_back
    return False


def find_spec_without(hook, fullname, path=None, target=None):
    """The spec the import system would find for ``fullname`` if the
    meta-path finder ``hook`` were not installed (None if none would).
    Hooks that ask this while another hook asks it on the same thread
    are passed over too: each would otherwise ask the other forever."""
    asking = getattr(_asking, 'hooks', None)
    if asking is None:
        asking = _asking.hooks = []
    asking.append(hook)
    try:
        for finder in sys.meta_path:
            if any(finder is h for h in asking) or \
                    not hasattr(finder, 'find_spec'):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None
    finally:
        asking.pop()


def then_after_exec(spec, then):
    """Make ``spec`` (found by a meta-path hook for one import) call
    ``then(module)`` once its module is executed; the module keeps its
    own loader. Returns ``spec``."""
    if spec is not None and hasattr(spec.loader, 'exec_module'):
        spec.loader = _AfterExec(spec.loader, then)
    return spec


class _AfterExec:
    """A loader for one import: its own, then ``then(module)``."""

    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            self._loader.exec_module(module)
        finally:
            spec = module.__spec__
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
            if module.__dict__.get('__loader__') is self:
                module.__dict__['__loader__'] = self._loader
        self._then(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)

