"""``chainermn.nccl``: CuPy's NCCL binding when it is importable.

Without CuPy/NCCL the type ids keep NCCL's own values (so dtype checks
still work) and ``get_version()`` / ``get_build_version()`` return 0, which
scripts read as "no NCCL 2" (``if nccl.get_build_version() < 2000``).
"""
try:
    from cupy.cuda.nccl import get_build_version
    from cupy.cuda.nccl import get_unique_id  # noqa: F401
    from cupy.cuda.nccl import get_version
    from cupy.cuda.nccl import NCCL_FLOAT
    from cupy.cuda.nccl import NCCL_FLOAT16
    from cupy.cuda.nccl import NCCL_FLOAT32
    from cupy.cuda.nccl import NCCL_FLOAT64
    from cupy.cuda.nccl import NCCL_SUM
    from cupy.cuda.nccl import NcclCommunicator  # noqa: F401
    from cupy.cuda.nccl import NcclError  # noqa: F401
    _available = True
except Exception:  # any import failure means no NCCL
    _available = False
    # ncclDataType_t / ncclRedOp_t values of NCCL 2.
    NCCL_FLOAT16 = 6
    NCCL_FLOAT32 = NCCL_FLOAT = 7
    NCCL_FLOAT64 = 8
    NCCL_SUM = 0

    def get_version():
        """get_version(): 0, no NCCL library is loaded."""
        return 0

    def get_build_version():
        """get_build_version(): 0, no NCCL library is loaded."""
        return 0
