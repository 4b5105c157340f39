"""The MPI module behind a communicator, and NumPy dtype <-> MPI datatypes.

chainermn_lite takes any mpi4py-like communicator: real ``mpi4py.MPI.Comm``
objects or the simulator's. Constants (ops, ``IN_PLACE``, datatypes) must
come from the communicator's own module, never from a global import.
"""
import importlib
import inspect
import os
import sys
import weakref

import numpy

__all__ = ['mpi_module_of', 'world_comm', 'reduce_datatype',
           'REDUCIBLE_DTYPES', 'check_movable_dtype', 'INT_MAX',
           'env_flag']

# MPI counts are C ints: one call moves at most this many elements.
INT_MAX = 2 ** 31 - 1

# dtype name -> names of the MPI constant, first found wins. Built from
# public constants only (mpi4py's private typedict is not an API).
_REDUCE_TYPE_NAMES = {
    'int8': ('INT8_T', 'SIGNED_CHAR'),
    'int16': ('INT16_T', 'SHORT'),
    'int32': ('INT32_T', 'INT'),
    'int64': ('INT64_T', 'LONG'),
    'uint8': ('UINT8_T', 'UNSIGNED_CHAR'),
    'uint16': ('UINT16_T', 'UNSIGNED_SHORT'),
    'uint32': ('UINT32_T', 'UNSIGNED'),
    'uint64': ('UINT64_T', 'UNSIGNED_LONG'),
    'float32': ('FLOAT', 'FLOAT32_T'),
    'float64': ('DOUBLE', 'FLOAT64_T'),
}

REDUCIBLE_DTYPES = tuple(numpy.dtype(name) for name in _REDUCE_TYPE_NAMES)


# class -> its MPI module (a few classes; weak: programs make subclasses)
_MODULES = weakref.WeakKeyDictionary()


def mpi_module_of(comm):
    """The MPI module that ``type(comm)`` belongs to: mpi4py.MPI, or the
    simulator's ``simulator.mpi``, whose classes bear mpi4py.MPI's names
    (so the name alone cannot tell them apart)."""
    kind = type(comm)
    module = _MODULES.get(kind)
    if module is None:
        module = _MODULES[kind] = _home_module(kind)
    return module


def register_module(kind, module):
    """Make ``module`` the MPI module of the class ``kind`` (a wrapper
    class around another module's communicator)."""
    _MODULES[kind] = module


def _home_module(kind):
    # The first class of the MRO whose module is an MPI module: a
    # program's subclass of Intracomm belongs to Intracomm's.
    for klass in kind.__mro__:
        module = _holder(klass)
        if module is not None and hasattr(module, 'COMM_WORLD'):
            return module
    return importlib.import_module(kind.__module__)


def _holder(klass):
    """The module that holds ``klass`` under its name: the outermost
    package along the module its Python methods are written in, else the
    module it names (a compiled class, mpi4py's, has no Python methods)."""
    names = [klass.__module__]
    for value in vars(klass).values():
        function = getattr(value, '__func__', value)
        if inspect.isfunction(function):
            parts = function.__module__.split('.')
            names[:0] = ['.'.join(parts[:depth])
                         for depth in range(1, len(parts) + 1)]
            break
    for name in names:
        module = sys.modules.get(name)
        if getattr(module, klass.__name__, None) is klass:
            return module
    return None


def world_comm():
    """``mpi4py.MPI.COMM_WORLD``, importing mpi4py only now."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            'chainermn_lite needs mpi4py when no mpi_comm is given ({}); '
            'install mpi4py or pass mpi_comm= (e.g. a simulator.mpi '
            'communicator)'.format(e)) from e
    return MPI.COMM_WORLD


def reduce_datatype(module, dtype):
    """The MPI datatype of ``module`` that reduces arrays of ``dtype``.

    Raises TypeError naming the dtype when MPI cannot reduce it (float16
    has no MPI type: callers reduce it as float32, like ChainerMN).
    """
    dtype = numpy.dtype(dtype)
    for name in _REDUCE_TYPE_NAMES.get(dtype.name, ()):
        datatype = getattr(module, name, None)
        if datatype is not None:
            return datatype
    raise TypeError(
        'dtype {} cannot be reduced over MPI ({}); supported: {}'.format(
            dtype, module.__name__,
            ', '.join(d.name for d in REDUCIBLE_DTYPES)))


def check_movable_dtype(dtype, what):
    """Raise TypeError unless arrays of ``dtype`` can travel as raw bytes."""
    dtype = numpy.dtype(dtype)
    if dtype.hasobject or dtype.fields is not None or dtype.kind in 'OSUVMm':
        raise TypeError(
            '{}: dtype {} cannot be sent as an array (only numeric and bool '
            'dtypes); use the *_obj methods for Python objects'.format(
                what, dtype))


def env_flag(name, default=False):
    """The boolean value of environment variable ``name`` (``default`` when
    it is unset or empty)."""
    value = os.environ.get(name, '').strip().lower()
    if not value:
        return default
    return value in ('1', 'true', 'yes', 'on')
