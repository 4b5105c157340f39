"""Run code written for ``chainermn`` on chainermn_lite, unedited.

``install()`` puts an import finder first on ``sys.meta_path`` that answers
every ``import chainermn`` / ``chainermn.<sub>.<module>`` with the module of
the same path under ``chainermn_lite`` (the very same module object, so
``chainermn.communicators.naive_communicator.NaiveCommunicator is
chainermn_lite.communicators.naive_communicator.NaiveCommunicator``). It
wins over the real ChainerMN that Chainer installs; a path chainermn_lite
lacks raises ModuleNotFoundError naming both spellings instead of silently
mixing in ChainerMN's module.

Without editing a script or a test suite::

    python -m chainermn_lite.compat train.py --epoch 3
    mpiexec -n 2 python -m chainermn_lite.compat -m pytest tests_dir

(``-m module`` runs a module like ``python -m``; everything after the script
or module goes to it.)
"""
import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

from chainermn_lite import global_except_hook

__all__ = ['install', 'uninstall', 'is_installed', 'ALIAS', 'TARGET']

ALIAS = 'chainermn'
TARGET = 'chainermn_lite'


def _target_name(fullname):
    if fullname == ALIAS:
        return TARGET
    if fullname.startswith(ALIAS + '.'):
        return TARGET + fullname[len(ALIAS):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Hands out chainermn_lite's module for the aliased name."""

    def __init__(self, target):
        self.target = target
        self.spec = None

    def create_module(self, spec):
        if spec.name == ALIAS:
            _import_mpi_as_chainermn_does()
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # Already executed under its own name by import_module above; the
        # import system has just set __spec__ to the alias's: give the
        # module its own back (importlib.reload and find_spec read it).
        module.__spec__ = self.spec


def _import_mpi_as_chainermn_does():
    # Importing ChainerMN imports mpi4py.MPI (MPI_Init included); scripts
    # and ChainerMN's own tests rely on it after a bare ``import mpi4py``.
    # chainermn_lite itself imports MPI only when it needs COMM_WORLD.
    try:
        importlib.import_module('mpi4py.MPI')
    except ImportError:
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """``chainermn[.x.y]`` -> ``chainermn_lite[.x.y]``."""

    def find_spec(self, fullname, path=None, target=None):
        real = _target_name(fullname)
        if real is None:
            return None
        real_spec = importlib.util.find_spec(real)
        if real_spec is None:
            raise ModuleNotFoundError(
                'chainermn_lite has no module {!r} (imported as {!r} through '
                'chainermn_lite.compat)'.format(real, fullname), name=fullname)
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(real),
            is_package=real_spec.submodule_search_locations is not None)


def _finder():
    for finder in sys.meta_path:
        if isinstance(finder, _AliasFinder):
            return finder
    return None


def is_installed():
    """is_installed(): True while ``import chainermn`` gives chainermn_lite."""
    return _finder() is not None


def _forget_chainermn_modules():
    for name in [n for n in sys.modules if _target_name(n) is not None]:
        del sys.modules[name]


def install():
    """install(): make ``import chainermn`` (and every submodule path)
    resolve to chainermn_lite in this process. Idempotent; modules of the
    real ChainerMN imported earlier are dropped from ``sys.modules`` (objects
    already taken from them stay what they are)."""
    if is_installed():
        return
    _forget_chainermn_modules()
    sys.meta_path.insert(0, _AliasFinder())


def uninstall():
    """uninstall(): undo ``install()``; ``import chainermn`` finds the
    real ChainerMN again."""
    finder = _finder()
    if finder is None:
        return
    sys.meta_path.remove(finder)
    _forget_chainermn_modules()


_USAGE = ('usage: python -m chainermn_lite.compat (script.py | -m module) '
          '[args...]')


def _script(path):
    """(code, globals) of ``python path``: ``sys.path[0]`` is the script's
    folder (symbolic links resolved)."""
    path = os.path.abspath(path)
    with open(path, 'rb') as f:
        code = compile(f.read(), path, 'exec')
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    loader = importlib.machinery.SourceFileLoader('__main__', path)
    return code, {'__file__': path, '__loader__': loader, '__spec__': None,
                  '__package__': None, '__cached__': None}


def _module(name):
    """(code, globals) of ``python -m name``: ``sys.path[0]`` is the
    current folder, a package runs its ``__main__``."""
    sys.path[0] = os.getcwd()
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise SystemExit('{}: No module named {}'.format(sys.executable,
                                                        name))
    if spec.submodule_search_locations is not None:
        name += '.__main__'
        spec = importlib.util.find_spec(name)
    code = spec.loader.get_code(name)
    return code, {'__file__': spec.origin, '__loader__': spec.loader,
                  '__spec__': spec, '__package__': name.rpartition('.')[0],
                  '__cached__': spec.cached}


def _main_namespace():
    """The dict the program runs in: ``__main__``'s own when this module
    runs as ``__main__`` (as ``python`` would use it; on the simulator that
    dict is per rank), else a fresh ``__main__`` module's."""
    main = sys.modules.get('__main__')
    namespace = getattr(main, '__dict__', None)
    spec = namespace.get('__spec__') if namespace is not None else None
    if getattr(spec, 'name', None) == __name__:
        for key in [k for k in namespace if k != '__builtins__']:
            del namespace[key]
        return namespace, None
    module = types.ModuleType('__main__')
    return module.__dict__, module


def main(argv=None):
    """main(argv): install(), then run a script or ``-m module`` with the
    remaining arguments as its ``sys.argv``, exactly as ``python script.py
    args`` / ``python -m module args`` would (``sys.path[0]``,
    ``__file__``, ``__main__``). A non-zero ``sys.exit`` aborts the MPI
    job with that status when chainermn_lite's abort hook is installed
    (see :mod:`chainermn_lite.global_except_hook`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help') or argv == ['-m']:
        print(_USAGE, file=sys.stderr)
        return 2
    install()
    if argv[0] == '-m':
        code, base = _module(argv[1])
        sys.argv[:] = [base['__file__']] + argv[2:]
    else:
        code, base = _script(argv[0])
        sys.argv[:] = argv
    namespace, module = _main_namespace()
    namespace.update(base, __name__='__main__', __builtins__=builtins)
    saved = sys.modules.get('__main__')
    if module is not None:
        sys.modules['__main__'] = module
    try:
        exec(code, namespace)
    except SystemExit as stop:
        global_except_hook.abort_on_exit(stop)
        raise
    finally:
        if module is not None:
            sys.modules['__main__'] = saved
    return 0


if __name__ == '__main__':
    # Run the importable module's main, not this __main__ copy, so that
    # chainermn_lite.compat.is_installed() sees the finder it installed.
    from chainermn_lite import compat
    sys.exit(compat.main())
