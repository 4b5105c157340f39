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
import importlib
import importlib.abc
import importlib.util
import runpy
import sys

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


def main(argv=None):
    """main(argv): install(), then run a script or ``-m module`` with the
    remaining arguments as its ``sys.argv``, like ``python`` does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help') or argv == ['-m']:
        print(_USAGE, file=sys.stderr)
        return 2
    install()
    if argv[0] == '-m':
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name='__main__')
    return 0


if __name__ == '__main__':
    # Run the importable module's main, not this __main__ copy, so that
    # chainermn_lite.compat.is_installed() sees the finder it installed.
    from chainermn_lite import compat
    sys.exit(compat.main())
