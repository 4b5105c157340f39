"""Communicators: ChainerMN's communicator API over any mpi4py-like comm."""
from chainermn_lite import _mpi, timeline
from chainermn_lite.communicators import _watchdog
from chainermn_lite.communicators.communicator_base import CommunicatorBase
from chainermn_lite.communicators.dummy_communicator import \
    DummyCommunicator
from chainermn_lite.communicators.flat_communicator import FlatCommunicator
from chainermn_lite.communicators.hierarchical_communicator import \
    HierarchicalCommunicator
from chainermn_lite.communicators.mpi_communicator import MpiCommunicator
from chainermn_lite.communicators.mpi_communicator_base import \
    MpiCommunicatorBase
from chainermn_lite.communicators.naive_communicator import \
    NaiveCommunicator
from chainermn_lite.communicators.non_cuda_aware_communicator import \
    NonCudaAwareCommunicator
from chainermn_lite.communicators.pure_nccl_communicator import \
    PureNcclCommunicator

__all__ = ['create_communicator', 'CommunicatorBase', 'MpiCommunicator',
           'MpiCommunicatorBase', 'NaiveCommunicator', 'FlatCommunicator',
           'HierarchicalCommunicator', 'NonCudaAwareCommunicator',
           'DummyCommunicator', 'PureNcclCommunicator',
           'COMMUNICATOR_NAMES', 'default_communicator_name']


# One class per name; each binds a gradient strategy to MpiCommunicator.
_CLASSES = {
    'naive': NaiveCommunicator,
    'flat': FlatCommunicator,
    'hierarchical': HierarchicalCommunicator,
    'non_cuda_aware': NonCudaAwareCommunicator,
    'dummy': DummyCommunicator,
    'pure_nccl': PureNcclCommunicator,
}
COMMUNICATOR_NAMES = tuple(_CLASSES)


def default_communicator_name():
    """'pure_nccl' when CuPy with NCCL sees a GPU, otherwise 'flat'."""
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401 -- presence test
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return 'pure_nccl'
    except Exception:  # any failure means "no usable GPU"
        pass
    return 'flat'


def create_communicator(communicator_name=None, mpi_comm=None,
                        allreduce_grad_dtype=None, **kwargs):
    """create_communicator(communicator_name=None, mpi_comm=None,
    allreduce_grad_dtype=None, batched_copy=True, watchdog=None): a
    ChainerMN communicator.

    Names: ``naive`` (one Allreduce per gradient), ``flat`` (gradients
    packed, chunked Allreduce), ``hierarchical`` (reduce in each node,
    allreduce among node leaders, broadcast in node), ``non_cuda_aware``
    (flat through host buffers), ``pure_nccl`` (NCCL; on the simulator
    through ``simulator.nccl``), ``dummy`` (no gradient communication).
    The default is ``pure_nccl`` when CuPy with NCCL and a GPU are present,
    otherwise ``flat``, the fastest CPU communicator (ChainerMN's default is
    always ``pure_nccl``, which fails on a machine without GPUs).

    ``mpi_comm`` is any mpi4py-like communicator (mpi4py or simulator);
    without it mpi4py's ``COMM_WORLD`` is used. ``allreduce_grad_dtype``
    (float16/32/64) is for ``pure_nccl`` only, as in ChainerMN; ``naive``,
    ``flat`` and friends average float16 gradients in float32.

    On real MPI an uncaught exception in any rank aborts the whole job
    instead of leaving the other ranks hanging; turn that off with
    ``CHAINERMN_LITE_NO_ABORT=1`` (see ``chainermn_lite.global_except_hook``).
    There, freed array memory is also kept in the process for reuse (fresh
    page faults otherwise dominate the cost of received arrays); turn that
    off with ``CHAINERMN_LITE_MALLOC_TUNING=0`` (see
    ``chainermn_lite._malloc``).

    ``watchdog=seconds`` (or the environment variable
    ``CHAINERMN_LITE_WATCHDOG=seconds``; the argument wins, 0 turns it off)
    makes a rank blocked in one of this communicator's calls (p2p,
    collectives, ``*_obj``, ``bcast_data``, ``multi_node_mean_grad``) for
    longer than that print to stderr, once per stuck call, its rank, the
    pending call with its peer/root and tag, how long it has waited and
    its Python stack. Off by default; when off it costs nothing (see
    ``communicators._watchdog``).
    """
    batched_copy = kwargs.pop('batched_copy', True)
    limit = _watchdog.watchdog_limit(kwargs.pop('watchdog', None))
    if kwargs:
        raise TypeError('create_communicator got unexpected arguments: '
                        '{}'.format(sorted(kwargs)))
    if communicator_name is None:
        communicator_name = default_communicator_name()
    if communicator_name not in _CLASSES:
        raise ValueError('Unrecognized communicator: {!r}; available: '
                         '{}'.format(communicator_name,
                                     ', '.join(COMMUNICATOR_NAMES)))
    if communicator_name != 'pure_nccl' and allreduce_grad_dtype is not None:
        raise ValueError('allreduce_grad_dtype is only available with the '
                         "'pure_nccl' communicator (got {!r} with {!r})"
                         .format(allreduce_grad_dtype, communicator_name))
    if mpi_comm is None:
        mpi_comm = _mpi.world_comm()
    configs = {'batched_copy': batched_copy}
    if communicator_name == 'pure_nccl':
        configs['allreduce_grad_dtype'] = allreduce_grad_dtype
    comm = _CLASSES[communicator_name](mpi_comm, **configs)
    if limit is not None:
        _watchdog.watch(comm, limit)
    # CHAINERMN_LITE_TIMELINE=FILE: record the same calls (wall time).
    timeline.record(comm, _watchdog.WATCHED_METHODS)
    _install_abort_hook(mpi_comm)
    _tune_malloc()
    return comm


def _install_abort_hook(mpi_comm):
    from chainermn_lite import global_except_hook
    global_except_hook.add_hook_if_enabled(mpi_comm)


def _tune_malloc():
    from chainermn_lite import _malloc
    _malloc.tune_malloc()
