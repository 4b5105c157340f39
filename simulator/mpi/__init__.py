"""An mpi4py-compatible ``MPI`` module over simulated rank threads.

Use it like ``mpi4py.MPI``: ``COMM_WORLD`` resolves to the calling rank's
world communicator (inside :func:`simulator.run` or ``python -m
simulator``). Constants, datatypes, ops, ``Request``, ``Status`` and
``Exception`` behave as in mpi4py.

``__all__`` is the part of mpi4py's ``MPI`` namespace implemented here,
and only that: a program importing ``mpi4py.MPI`` gets a module holding
exactly these names (:func:`simulator.tools.standin.program_module`),
not this package's submodules and helpers, which the simulator's own
code imports from here as before.
"""
import time

from simulator.engine.actors import current, current_actor
from simulator.engine.process import OPEN_MPI_VERSION
from simulator.engine.ranks import host_name
from simulator.engine.communicator import CommState  # noqa: F401
from simulator.mpi import constants as _constants
from simulator.mpi import commattr as _commattr
from simulator.mpi.comm import (COMM_NULL, COMM_SELF, COMM_WORLD, Comm,
                                Intercomm, Intracomm, _rank_context,
                                world_comm)  # noqa: F401 -- launch uses it
from simulator.mpi import fatal as _fatal  # noqa: F401 -- its watch
from simulator.mpi import finalization as _finalization
from simulator.mpi import initialization as _initialization
from simulator.mpi.commattr import (ERRHANDLER_NULL, ERRORS_ABORT,
                                    ERRORS_ARE_FATAL, ERRORS_RETURN,
                                    INFO_ENV, INFO_NULL, Errhandler, Info)
from simulator.mpi.commctx import (_comm_lock, _comm_lock_table,
                                   _commctx_inter, _commctx_intra)
from simulator.mpi.constants import *  # noqa: F401,F403 -- the namespace
from simulator.mpi.datatypes import (DATATYPE_NAMES, DATATYPE_NULL,
                                     Compute_dims, Datatype)
from simulator.mpi.docstrings import shape as _shape_docstrings
from simulator.mpi.group import GROUP_EMPTY, GROUP_NULL, Group
from simulator.mpi.memory import Aint_add, Aint_diff, buffer
from simulator.mpi.cobjects import addressof as _addressof
from simulator.mpi.cobjects import handleof as _handleof
from simulator.mpi.cobjects import sizeof as _sizeof
from simulator.mpi.abi import (Get_abi_fortran_info, Get_abi_info,
                               Get_abi_version)
from simulator.mpi.dynamic import (Close_port, Lookup_name, Open_port,
                                   Publish_name, Unpublish_name)
from simulator.mpi.file import FILE_NULL as _FILE_NULL
from simulator.mpi.file import File as _File
from simulator.mpi.errors import (Add_error_class, Add_error_code,
                                  Add_error_string, Get_error_class,
                                  Get_error_string)
from simulator.mpi.message import MESSAGE_NO_PROC, MESSAGE_NULL, Message
from simulator.mpi.naming import publish as _publish
from simulator.mpi.ops import OP_NAMES, Op
from simulator.mpi.p2p import wait_for_buffered_sends as _wait_buffered
from simulator.mpi.pickling import Pickle, pickle
from simulator.mpi.packing import install as _install_packing
from simulator.mpi.prequest import Prequest
from simulator.mpi.request import REQUEST_NULL, Grequest, Request, Status
from simulator.mpi.session import SESSION_NULL
from simulator.mpi.topocomm import (Cartcomm, Distgraphcomm, Graphcomm,
                                    Topocomm)
from simulator.mpi.session import Session as _Session
from simulator.mpi.typecode import (_typealign, _typecode, _typedict,
                                    _typedict_c, _typedict_f)
from simulator.mpi.unsupported import CLASSES as _UNSUPPORTED
from simulator.mpi.unsupported import FUNCTIONS as _REFUSED
from simulator.mpi.unsupported import (NotSimulated,  # noqa: F401
                                       mpi41_missing)
from simulator.mpi.values import VALUES as _VALUES
from simulator.mpi.win import WIN_NULL
from simulator.mpi.win import Win as _Win

__all__ = (['Comm', 'Intracomm', 'Intercomm', 'Request', 'Status',
            'Datatype', 'Op',
            'COMM_WORLD', 'COMM_SELF', 'COMM_NULL', 'REQUEST_NULL',
            'DATATYPE_NULL', 'Get_processor_name', 'Wtime',
            'Wtick', 'Init', 'Init_thread', 'Finalize', 'Is_initialized',
            'Is_finalized', 'Query_thread', 'Is_thread_main', 'Get_version',
            'Get_library_version', 'VERSION', 'SUBVERSION',
            'MAX_PROCESSOR_NAME', 'Info', 'INFO_NULL', 'Errhandler',
            'ERRORS_RETURN', 'ERRORS_ARE_FATAL', 'ERRORS_ABORT',
            'ERRHANDLER_NULL', 'get_vendor', 'WIN_NULL',
            'File', 'FILE_NULL', 'SESSION_NULL', 'Pcontrol', 'Get_error_class',
            'Get_error_string', 'Add_error_class', 'Add_error_code',
            'Add_error_string', 'INFO_ENV', 'KEYVAL_INVALID', 'TAG_UB',
            'IO', 'WTIME_IS_GLOBAL', 'UNIVERSE_SIZE', 'APPNUM',
            'LASTUSEDCODE', 'Group', 'GROUP_NULL', 'GROUP_EMPTY',
            'Message', 'MESSAGE_NULL', 'MESSAGE_NO_PROC', 'Prequest',
            'Grequest', 'Alloc_mem', 'Free_mem', 'Attach_buffer',
            'Detach_buffer', 'Flush_buffer', 'Iflush_buffer', 'Get_address',
            'Aint_add', '_sizeof', '_addressof', '_handleof',
            'Aint_diff', 'Pickle',
            'pickle', '_comm_lock', '_comm_lock_table', '_commctx_intra',
            '_commctx_inter', 'Compute_dims', 'buffer', '_typecode',
            '_typealign', 'Topocomm', 'Cartcomm', 'Graphcomm',
            'Distgraphcomm', 'Get_abi_version', 'Get_abi_info',
            'Get_abi_fortran_info', 'Open_port', 'Close_port',
            'Publish_name', 'Unpublish_name', 'Lookup_name', '_typedict',
            '_typedict_c', '_typedict_f', '_set_abort_status']
           + list(_constants.__all__) + sorted(DATATYPE_NAMES)
           + sorted(OP_NAMES) + sorted(_VALUES) + sorted(_UNSUPPORTED)
           + sorted(_REFUSED))

globals().update(DATATYPE_NAMES)
_install_packing()
globals().update(OP_NAMES)
globals().update(_VALUES)
globals().update(_UNSUPPORTED)
globals().update(_REFUSED)
Win = _Win     # simulated, unlike the other handle types
Session = _Session
memory = buffer
File, FILE_NULL = _File, _FILE_NULL     # simulated too
# Attribute keys with behaviour (values.py only names the others).
KEYVAL_INVALID, TAG_UB, IO = (_commattr.KEYVAL_INVALID, _commattr.TAG_UB,
                              _commattr.IO)
WTIME_IS_GLOBAL, UNIVERSE_SIZE = (_commattr.WTIME_IS_GLOBAL,
                                  _commattr.UNIVERSE_SIZE)
APPNUM, LASTUSEDCODE = _commattr.APPNUM, _commattr.LASTUSEDCODE
VERSION, SUBVERSION = 3, 1
MAX_PROCESSOR_NAME = 256





def Get_processor_name():
    """This rank's host: this one's name, or ``node0``... in a world of
    several simulated nodes."""
    ctx = current()
    return host_name() if ctx is None else ctx.processor_name


def Wtime():
    """Wall-clock seconds since MPI started, as Open MPI 5 counts them
    from ``MPI_Init`` (a process reads about 0 right after it); in
    virtual time, the rank's clock."""
    now = time.perf_counter()
    ctx = current()
    if ctx is None:
        return now
    clock = ctx.world.clock
    return now - (clock.base('perf_counter') if clock is not None else
                  ctx.world.start_time)


def Wtick():
    """Resolution of Wtime."""
    return time.get_clock_info('perf_counter').resolution


def Init():
    """Start MPI in the calling rank (with ``mpi4py.rc.initialize``
    false; otherwise it started at import): ``MPI_THREAD_SINGLE``."""
    _initialization.init()


def Init_thread(required=_constants.THREAD_MULTIPLE):
    """Start MPI in the calling rank at thread level ``required``, which
    is what it provides (as Open MPI)."""
    return _initialization.init(required)


def Finalize():
    """End MPI in the calling rank: later calls but a few queries raise
    FinalizedError (:mod:`simulator.mpi.finalization`); the world ends when
    every rank returns."""
    _finalization.finalize()


def _set_abort_status(status):
    """Abort with ``status`` at exit (mpi4py's hook for ``mpi4py.run``)."""
    _finalization.set_abort_status(status)


def Is_initialized():
    """Whether MPI started in the calling rank (at import, unless
    ``mpi4py.rc.initialize`` is false, else at Init)."""
    return _initialization.is_initialized()


def Is_finalized():
    """Whether the calling rank called Finalize."""
    return _finalization.is_finalized()


def Query_thread():
    """The calling rank's thread level: what ``mpi4py.rc`` asked for
    (``MPI_THREAD_MULTIPLE`` unless set) or ``Init_thread`` was given."""
    return _initialization.query_thread()


def Is_thread_main():
    """True in a rank's main thread (not in threads it started)."""
    return current() is not None and current_actor().main


def Get_version():
    """The MPI standard version the subset follows."""
    return VERSION, SUBVERSION


def Get_library_version():
    """Open MPI's own description of itself, as ``mpiexec``'s processes
    get it (see :mod:`simulator.mpi.library`)."""
    from simulator.mpi.library import library_version
    return library_version()


def get_vendor():
    """Return ("Open MPI", (5, 0, 11)): the simulator reproduces that library's
    semantics (reduction orders, error classes, constants), so code that
    branches on the vendor takes the branch it would take on the cluster."""
    return 'Open MPI', OPEN_MPI_VERSION


def Pcontrol(level):
    """Profiling control: accepted and ignored, as without a profiler."""
    if not isinstance(level, int):
        raise TypeError('Pcontrol level must be an int, got {!r}'.format(
            level))


def Alloc_mem(size, info=None):
    """Allocate ``size`` bytes of memory (an ``MPI.buffer``, as mpi4py's)."""
    if not isinstance(size, int) or size < 0:
        raise _constants.Exception(_constants.ERR_ARG, 'Alloc_mem size '
                                   '{!r} must be an int >= 0'.format(size))
    return buffer.allocate(size)


def Free_mem(mem):
    """Release memory from Alloc_mem: ``mem`` is empty afterwards, as
    mpi4py's (the memory itself goes with its last view)."""
    if not isinstance(mem, buffer):
        # Open MPI frees whatever address it is given (and crashes)
        raise _constants.Exception(_constants.ERR_ARG, 'Free_mem: expected '
                                   'the MPI.buffer of Alloc_mem, got '
                                   '{!r}'.format(type(mem).__name__))
    mem.release()


def Attach_buffer(buf):
    """Attach ``buf`` for buffered sends: as over Open MPI, those above
    the eager limit hold room in it until received (the simulator counts
    the room, and writes nothing there)."""
    if buf is None or isinstance(buf, _constants.BufferAutomaticType):
        # MPI 4.1's automatic buffering (mpi4py reads None as it): Open
        # MPI 5.0 rejects it.
        raise _constants.Exception(_constants.ERR_ARG, 'Attach_buffer: '
                                   'BUFFER_AUTOMATIC is MPI 4.1')
    if buffer(buf).readonly:        # any exporter, device memory too
        raise BufferError('Attach_buffer: the buffer is read-only')
    local = _rank_context('Attach_buffer').local
    if 'mpi.buffer' in local:
        # Open MPI's answer (MPI calls it erroneous).
        raise _constants.Exception(_constants.ERR_UNKNOWN, 'Attach_buffer: '
                                   'a buffer is already attached (detach '
                                   'it first)')
    local['mpi.buffer'] = buf


def Detach_buffer():
    """The buffer Attach_buffer gave, once the buffered messages held in
    it are received."""
    local = _rank_context('Detach_buffer').local
    if 'mpi.buffer' not in local:
        raise _constants.Exception(_constants.ERR_UNKNOWN, 'Detach_buffer: '
                                   'no buffer is attached')
    # As MPI says, it returns once the messages in the buffer are sent:
    # Open MPI's big ones only when received.
    _wait_buffered('Detach_buffer')
    return local.pop('mpi.buffer')


def Flush_buffer():
    """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
    raise mpi41_missing('Flush_buffer')


def Iflush_buffer():
    """Not in Open MPI 5.0 (MPI 4.1): raises NotImplementedError."""
    raise mpi41_missing('Iflush_buffer')


def Get_address(location):
    """The address of a buffer's first byte (BOTTOM's is 0, IN_PLACE's
    1, as Open MPI's)."""
    from simulator.mpi.msgspec import raw_bytes
    if location is None:
        return 0
    if isinstance(location, _constants._AddressConstant):
        return int(location)
    data = raw_bytes(location, 'Get_address')
    return data.__array_interface__['data'][0] if data.size else 0



# mpi4py's names (a program sees <class 'mpi4py.MPI.Intracomm'>); then
# every function, method, property and class of the API documented in
# mpi4py's shape (a signature line made with those names, then our text).
_publish({name: globals()[name] for name in __all__})
_shape_docstrings({name: globals()[name] for name in __all__})
