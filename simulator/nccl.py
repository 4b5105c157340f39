"""A CuPy-NCCL-compatible subset over host arrays, for simulated ranks.

Like ``cupy.cuda.nccl``: ``get_unique_id()``, ``NcclCommunicator(ndev,
commId, rank)`` with ``allReduce``, ``bcast``, ``reduce``, ``allGather``,
``reduceScatter`` taking raw pointers (over host arrays a pointer is
``arr.ctypes.data``), ``rank_id()``, ``size()``, ``destroy()`` and the
``NCCL_*`` constants. Calls are synchronous; ``stream`` is accepted and
ignored. The ranks of one communicator meet through the engine's
collective matching (keyed by the unique id), so a rank that fails or
never comes is reported by the simulator (RankFailedError /
DeadlockError) instead of hanging, and ranks that call different
collectives get a CollectiveMismatchError.
"""
import ctypes
import uuid

import numpy

from simulator.engine import collectives as coll
from simulator.engine.actors import current
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture

__all__ = ['get_unique_id', 'NcclCommunicator', 'NcclError',
           'get_version', 'get_build_version',
           'NCCL_INT8', 'NCCL_CHAR', 'NCCL_UINT8', 'NCCL_INT32', 'NCCL_INT',
           'NCCL_UINT32', 'NCCL_INT64', 'NCCL_UINT64', 'NCCL_FLOAT16',
           'NCCL_HALF', 'NCCL_FLOAT32', 'NCCL_FLOAT', 'NCCL_FLOAT64',
           'NCCL_DOUBLE', 'NCCL_SUM', 'NCCL_PROD', 'NCCL_MAX', 'NCCL_MIN',
           'NCCL_AVG']

# NCCL's own enum values (nccl.h), as CuPy exposes them.
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4

_DTYPES = {NCCL_INT8: numpy.int8, NCCL_UINT8: numpy.uint8,
           NCCL_INT32: numpy.int32, NCCL_UINT32: numpy.uint32,
           NCCL_INT64: numpy.int64, NCCL_UINT64: numpy.uint64,
           NCCL_FLOAT16: numpy.float16, NCCL_FLOAT32: numpy.float32,
           NCCL_FLOAT64: numpy.float64}
_OP_NAMES = {NCCL_SUM: 'sum', NCCL_PROD: 'prod', NCCL_MAX: 'max',
             NCCL_MIN: 'min', NCCL_AVG: 'avg'}


class NcclError(RuntimeError):
    """Invalid use of the simulated NCCL API (bad argument or state)."""


def get_version():
    """The NCCL version this subset imitates (2.x)."""
    return 2708


def get_build_version():
    """Same as get_version(): nothing is built."""
    return 2708


def get_unique_id():
    """A fresh id (a tuple of 128 ints, like CuPy's) naming one clique."""
    raw = uuid.uuid4().bytes * 8
    return tuple(b - 256 if b > 127 else b for b in raw)


def _view(ptr, count, dtype):
    """An ndarray over ``count`` items of ``dtype`` at address ``ptr``."""
    dtype = numpy.dtype(dtype)
    if count == 0:
        return numpy.empty(0, dtype=dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(ptr))
    return numpy.frombuffer(raw, dtype=dtype)


def _reduce(arrays, op, dtype):
    wide = numpy.float32 if dtype == numpy.float16 else dtype
    stack = numpy.stack([a.astype(wide, copy=False) for a in arrays])
    if op in (NCCL_SUM, NCCL_AVG):
        out = stack.sum(axis=0, dtype=wide)
        if op == NCCL_AVG:
            out = out / len(arrays)
    elif op == NCCL_PROD:
        out = stack.prod(axis=0, dtype=wide)
    elif op == NCCL_MAX:
        out = stack.max(axis=0)
    else:
        out = stack.min(axis=0)
    return out.astype(dtype)


def _signature(**fields):
    """What every rank of a collective must agree on, in the engine's
    form ((name, value) pairs)."""
    return tuple(fields.items())


class _Clique:
    """The ranks joining one NCCL communicator (one unique id)."""

    def __init__(self, ndev):
        self.ndev = ndev
        self.members = {}       # nccl rank -> world rank


class NcclCommunicator:
    """NcclCommunicator(ndev, commId, rank): one rank of an NCCL clique.

    Its collectives are matched by the engine like an MPI communicator's
    (one slot per call number, signatures compared), on a communicator
    whose context is the unique id.
    """

    def __init__(self, ndev, commId, rank):  # CuPy's name
        ctx = current()
        if ctx is None:
            raise NcclError('simulator.nccl works inside a simulated run '
                            '(simulator.run or python -m simulator) only')
        if not 0 <= rank < ndev:
            raise NcclError('rank {} out of range for ndev {}'.format(
                rank, ndev))
        world = ctx.world
        self._rank = rank
        self._ndev = ndev
        uid = tuple(commId)
        name = 'nccl:{:08x}'.format(hash(uid) & 0xffffffff)
        with world.lock:
            cliques = world.extensions.setdefault('nccl', {})
            clique = cliques.setdefault(uid, _Clique(ndev))
            if clique.ndev != ndev:
                raise NcclError('rank {} joins {} with ndev {} but others '
                                'said {}'.format(rank, name, ndev,
                                                 clique.ndev))
            if rank in clique.members:
                raise NcclError('nccl rank {} of {} joined twice (world '
                                'ranks {} and {})'.format(
                                    rank, name, clique.members[rank],
                                    ctx.rank))
            clique.members[rank] = ctx.rank
            for world_rank in clique.members.values():
                world.wake(world_rank)
            world.block(lambda: len(clique.members) == ndev,
                        CallRecord('ncclCommInitRank', ctx.rank, comm=name,
                                   detail='waiting for {} ranks'.format(
                                       ndev)))
        self._state = CommState(
            world, ('nccl', uid), [clique.members[r] for r in range(ndev)],
            rank, name)

    # -- introspection ---------------------------------------------------
    def rank_id(self):
        """This rank's index in the clique."""
        return self._rank

    def size(self):
        """Number of ranks in the clique."""
        return self._ndev

    def device_id(self):
        """Always 0: host memory."""
        return 0

    def destroy(self):
        """Leave the clique; the object is unusable afterwards."""
        self._state = None

    abort = destroy

    # -- collectives -----------------------------------------------------
    def _collective(self, op_name, signature, send_view, compute):
        """Deposit this rank's input, wait for all, return its result.

        ``compute(views)`` runs once, in the last rank to arrive, on the
        ranks' inputs in nccl rank order; it returns one fresh array (or
        None) per rank, so no rank reads another's memory afterwards.
        """
        state = self._state
        if state is None:
            raise NcclError('{} on a destroyed NcclCommunicator (rank '
                            '{})'.format(op_name, self._rank))
        seq = state.next_seq()
        record = CallRecord(op_name, state.world_rank, comm=state.name,
                            seq=seq, raw=capture(3))
        clock = state.world.clock       # virtual time (None: off)
        if clock is not None:
            clock.enter(state.world_rank, op_name)
            clock.stamp(record)
        try:
            slot = coll.arrive(state, seq, op_name, signature, send_view,
                               record, combine=compute)
            coll.wait_ready(state, slot, record)
            if clock is not None:
                clock.collective(state.world_rank, slot)
            result = slot.result[self._rank]
            coll.leave(state, slot)
        finally:
            if clock is not None:
                clock.leave(state.world_rank)
        return result

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream=0):  # noqa: E501
        """allReduce(sendbuf, recvbuf, count, datatype, op, stream)."""
        dtype = self._dtype(datatype)
        send = _view(sendbuf, count, dtype)

        def compute(views):
            out = _reduce(views, op, dtype)
            return [out] * self._ndev

        out = self._collective(
            'ncclAllReduce', _signature(count=count, datatype=datatype,
                                        op=op), send, compute)
        _view(recvbuf, count, dtype)[...] = out

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root,  # noqa: E501
               stream=0):
        """reduce(sendbuf, recvbuf, count, datatype, op, root, stream)."""
        dtype = self._dtype(datatype)
        self._check_root(root)

        def compute(views):
            out = _reduce(views, op, dtype)
            return [out if r == root else None for r in range(self._ndev)]

        out = self._collective(
            'ncclReduce', _signature(count=count, datatype=datatype, op=op,
                                     root=root),
            _view(sendbuf, count, dtype), compute)
        if self._rank == root:
            _view(recvbuf, count, dtype)[...] = out

    def bcast(self, buff, count, datatype, root, stream=0):
        """bcast(buff, count, datatype, root, stream): in place from root."""
        dtype = self._dtype(datatype)
        self._check_root(root)
        buf = _view(buff, count, dtype)

        def compute(views):
            return [views[root].copy()] * self._ndev

        out = self._collective(
            'ncclBcast', _signature(count=count, datatype=datatype,
                                    root=root), buf, compute)
        if self._rank != root:
            buf[...] = out

    def allGather(self, sendbuf, recvbuf, count, datatype, stream=0):  # noqa: E501
        """allGather(sendbuf, recvbuf, count, datatype, stream)."""
        dtype = self._dtype(datatype)

        def compute(views):
            return [numpy.concatenate(views)] * self._ndev

        out = self._collective(
            'ncclAllGather', _signature(count=count, datatype=datatype),
            _view(sendbuf, count, dtype), compute)
        _view(recvbuf, count * self._ndev, dtype)[...] = out

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op,  # noqa: E501
                      stream=0):
        """reduceScatter(sendbuf, recvbuf, recvcount, datatype, op, stream)."""
        dtype = self._dtype(datatype)
        n = recvcount

        def compute(views):
            out = _reduce(views, op, dtype)
            return [out[r * n:(r + 1) * n] for r in range(self._ndev)]

        out = self._collective(
            'ncclReduceScatter', _signature(count=recvcount,
                                            datatype=datatype, op=op),
            _view(sendbuf, n * self._ndev, dtype), compute)
        _view(recvbuf, n, dtype)[...] = out

    # -- helpers ---------------------------------------------------------
    def _dtype(self, datatype):
        if datatype not in _DTYPES:
            raise NcclError('unknown NCCL datatype {} (rank {})'.format(
                datatype, self._rank))
        return _DTYPES[datatype]

    def _check_root(self, root):
        if not 0 <= root < self._ndev:
            raise NcclError('root {} out of range for {} ranks (rank '
                            '{})'.format(root, self._ndev, self._rank))
