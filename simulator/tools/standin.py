"""The ``mpi4py`` package, and its ``MPI``, that a simulated program imports.

When mpi4py is installed, the stand-in *is* the installed package's
``__init__`` (``rc``, ``get_include``, ``get_config``, ``profile``,
``__path__``, ``__version__``: exactly the real ones), executed with
``mpi4py.MPI`` already bound to :mod:`simulator.mpi`, so the package's
pure-Python modules (``mpi4py.util.pkl5``, ``util.sync``, ``util.dtlib``,
``run``...) import and run over the simulated MPI, as they run over the
real one. ``mpi4py.util`` is made private per rank (a process each, with
its own module globals: ``pkl5._bigmpi``, ``pkl5.pickle``...) through the
engine's module privatization. Without mpi4py, a small package stands in
(``rc`` with the same options and checks).

``mpi4py.MPI`` is a module of its own (:func:`program_module`) holding
what mpi4py's holds: the names in ``simulator.mpi.__all__``, the same
objects, and none of :mod:`simulator.mpi`'s submodules and helpers, so a
program's ``dir(MPI)``, ``vars(MPI)`` and ``from mpi4py.MPI import *`` see
mpi4py's namespace. Each install builds it afresh (a program that
replaces one of its names, as a process may, changes its own run only);
the simulator's code keeps importing :mod:`simulator.mpi`.
"""
import importlib.machinery
import importlib.util
import builtins
import os
import sys
import types

from simulator import mpi
from simulator.engine.modules import register_private_module
from simulator.tools.mpiextension import installed_extension

__all__ = ['make_package', 'program_module', 'RcStandIn']

# The docstring of mpi4py.MPI as the simulator gives it.
_MODULE_DOC = ('The Message Passing Interface, simulated: every rank is a '
               'thread of this process.')

# One ``mpi4py._mpiabi`` for every install: its import adds a finder to
# sys.meta_path once per module object.
_kept = {}


class RcStandIn:
    """``mpi4py.rc`` when mpi4py is not installed: the same options,
    set by keyword or attribute; unknown names are TypeErrors."""

    initialize = True
    threads = True
    thread_level = 'multiple'
    finalize = None
    fast_reduce = True
    recv_mprobe = True
    irecv_bufsz = 32768
    errors = 'exception'

    def __init__(self, **options):
        self(**options)

    def __call__(self, **options):
        unknown = sorted(set(options) - set(dir(type(self))))
        if unknown:
            raise TypeError('unexpected argument {!r}'.format(unknown[0]))
        for name, value in options.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if not hasattr(type(self), name) or name.startswith('_'):
            raise TypeError('mpi4py.rc has no option {!r}'.format(name))
        object.__setattr__(self, name, value)

    def __repr__(self):
        return '<mpi4py.rc>'


def _installed_spec():
    spec = importlib.machinery.PathFinder.find_spec('mpi4py')
    if spec is None or spec.loader is None or not str(
            spec.origin).endswith('__init__.py'):
        return None
    return spec


def _minimal_package():
    package = types.ModuleType('mpi4py')
    package.__path__ = [os.path.dirname(mpi.__file__)]
    package.__version__ = '4.1.2'
    package.rc = RcStandIn()
    sys.modules['mpi4py.rc'] = package.rc
    return package


def program_module():
    """A new ``mpi4py.MPI`` module for programs: ``simulator.mpi``'s
    public names (``__all__``) and their values (:func:`make_package`
    adds the ``__file__`` of the installed mpi4py's)."""
    module = types.ModuleType('mpi4py.MPI', _MODULE_DOC)
    module.__package__ = 'mpi4py'
    module.__builtins__ = builtins      # as in a compiled module's namespace
    vars(module).update((name, getattr(mpi, name)) for name in mpi.__all__)
    return module


def _as_the_package_left(abi):
    """A rank's own ``mpi4py._mpiabi`` (its registry and cached ABI are a
    process's, and mpi4py's tests change them), in the state the package's
    ``__init__`` left the process's copy: each process ran that too."""
    shared = _kept.get('abi')
    if shared is None:
        return
    for name, abis in shared._registry.items():
        for each in abis:
            abi._register(name, each)
    abi.MPIABI, abi.LIBMPI = shared.MPIABI, shared.LIBMPI
    abi.LIBMPI_MODE = shared.LIBMPI_MODE
    abi.LIBMPI_PATH[:] = shared.LIBMPI_PATH
    cached = getattr(shared._get_mpiabi, 'mpiabi', None)
    if cached is not None:
        abi._get_mpiabi.mpiabi = cached


def make_package():
    """Put the stand-in ``mpi4py`` (and ``mpi4py.MPI``) in sys.modules."""
    # Submodules imported over the real MPI module import again over ours.
    for name in [n for n in sys.modules if n.startswith('mpi4py.')]:
        del sys.modules[name]
    module = sys.modules['mpi4py.MPI'] = program_module()
    spec = _installed_spec()
    if spec is None:
        package = _minimal_package()
        sys.modules['mpi4py'] = package
    else:
        package = importlib.util.module_from_spec(spec)
        sys.modules['mpi4py'] = package
        if 'abi' in _kept:
            sys.modules['mpi4py._mpiabi'] = _kept['abi']
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules['mpi4py']
            raise
        abi = sys.modules.get('mpi4py._mpiabi')
        if abi is not None:
            _kept.setdefault('abi', abi)
        # The compiled MPI the package's ABI finder (just installed) finds.
        extension = installed_extension(package)
        if extension is not None:
            module.__file__ = extension
            module.__spec__ = importlib.machinery.ModuleSpec(
                'mpi4py.MPI', None, origin=extension)
    package.MPI = module
    register_private_module('mpi4py.util')
    register_private_module('mpi4py.futures')
    register_private_module('mpi4py._mpiabi', _as_the_package_left)
    return package
