"""``chainermn.nccl``: CuPy's NCCL binding when it is importable.

Without CuPy/NCCL the type ids keep NCCL's own values (so dtype checks
still work) and ``get_version()`` / ``get_build_version()`` return 0, which
scripts read as "no NCCL 2" (``if nccl.get_build_version() < 2000``).
"""
try:
    from cupy.cuda.nccl import get_build_version  # NOQA
    from cupy.cuda.nccl import get_unique_id  # NOQA
    from cupy.cuda.nccl import get_version  # NOQA
    from cupy.cuda.nccl import NCCL_FLOAT  # NOQA
    from cupy.cuda.nccl import NCCL_FLOAT16  # NOQA
    from cupy.cuda.nccl import NCCL_FLOAT32  # NOQA
    from cupy.cuda.nccl import NCCL_FLOAT64  # NOQA
    from cupy.cuda.nccl import NCCL_SUM  # NOQA
    from cupy.cuda.nccl import NcclCommunicator  # NOQA
    from cupy.cuda.nccl import NcclError  # NOQA
    _available = True
except Exception:  # noqa: B902 -- any import failure means no NCCL
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
