"""Collectives of Python objects, built once on the buffer calls.

Each object is pickled; sizes travel first as int64, then the bytes in
rounds of at most ``max_buf_len`` bytes per rank, so objects over 2 GiB
(MPI's int count limit) pass too.
"""
import functools
import operator
import pickle

import numpy

from chainermn_lite import _mpi
from chainermn_lite import _wire

__all__ = ['bcast_obj', 'gather_obj', 'allgather_obj', 'scatter_obj',
           'allreduce_obj', 'check_max_buf_len']


def check_max_buf_len(max_buf_len):
    """Validate a chunk size in bytes (1 .. INT_MAX)."""
    if not 0 < max_buf_len <= _mpi.INT_MAX:
        raise ValueError('max_buf_len must be in 1..{}, got {}'.format(
            _mpi.INT_MAX, max_buf_len))
    return int(max_buf_len)


def _dumps(obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return numpy.frombuffer(data, dtype=numpy.uint8)


def _send_failure(comm, sizes, error, root):
    """The root's input failed: tell every rank through the sizes it
    broadcasts first (_wire.failure_word)."""
    sizes[:] = _wire.failure_word(error)
    comm.Bcast(sizes, root=root)


def bcast_obj(comm, obj, max_buf_len, root=0):
    """Broadcast a picklable object from ``root``."""
    _wire.check_root(root, comm.Get_size(), comm.Get_rank(), 'bcast_obj')
    is_root = comm.Get_rank() == root
    size = numpy.zeros(1, dtype=numpy.int64)
    if is_root:
        try:
            data = _dumps(obj)
        except Exception as error:
            _send_failure(comm, size, error, root)
            raise
        size[0] = data.size
    comm.Bcast(size, root=root)
    if not is_root:
        _wire.raise_if_failed(size[0], 'bcast_obj', comm.Get_rank(), root)
        data = numpy.empty(int(size[0]), dtype=numpy.uint8)
    for start in range(0, data.size, max_buf_len):
        comm.Bcast(data[start:start + max_buf_len], root=root)
    return obj if is_root else pickle.loads(data)


def _exchange_rounds(comm, mine, sizes, collect, max_buf_len):
    """Move per-rank byte strings (``sizes`` bytes each) in rounds.

    Each round every rank moves at most ``step`` bytes, so that counts and
    displacements of the whole round stay below INT_MAX; ``collect(
    chunk_start, counts, displs)`` performs the round's v-collective, where
    ``chunk_start`` is where this rank's piece starts in ``mine`` (0 when
    ``mine`` is None) and ``counts`` / ``displs`` are per rank, in bytes.
    """
    nranks = len(sizes)
    step = max(1, min(max_buf_len, _mpi.INT_MAX // max(nranks, 1)))
    done = [0] * nranks
    total_rounds = max([(s + step - 1) // step for s in sizes] + [1])
    for _ in range(total_rounds):
        counts = [min(step, s - d) for s, d in zip(sizes, done)]
        displs, _ = _wire.offsets(counts)
        chunk_start = done[comm.Get_rank()] if mine is not None else 0
        collect(chunk_start, counts, displs)
        done = [d + c for d, c in zip(done, counts)]


def _pickled_and_sizes(comm, obj, what):
    """(this rank's pickle of ``obj``, every rank's pickle size), from one
    Allgather. A rank whose object does not pickle sends the failure
    marker (see _wire.ROOT_FAILED) and raises its error; every other rank
    raises too, naming the first such rank, instead of waiting for it."""
    size = numpy.zeros(1, dtype=numpy.int64)
    mine, error = None, None
    try:
        mine = _dumps(obj)
        size[0] = mine.size
    except Exception as e:
        error = e
        size[0] = _wire.failure_word(e)
    sizes = numpy.zeros(comm.Get_size(), dtype=numpy.int64)
    comm.Allgather(size, sizes)
    if error is not None:
        raise error
    sizes = sizes.tolist()
    _wire.raise_if_any_failed(sizes, what, comm.Get_rank())
    return mine, sizes


def allgather_obj(comm, obj, max_buf_len):
    """Every rank's object, in rank order, on every rank."""
    mine, sizes = _pickled_and_sizes(comm, obj, 'allgather_obj')
    outs = [numpy.empty(s, dtype=numpy.uint8) for s in sizes]
    starts = [0] * len(sizes)

    def collect(chunk_start, counts, displs):
        recv = numpy.empty(sum(counts), dtype=numpy.uint8)
        send = mine[chunk_start:chunk_start + counts[comm.Get_rank()]]
        comm.Allgatherv(send, [recv, (counts, displs)])
        for r, (c, d) in enumerate(zip(counts, displs)):
            outs[r][starts[r]:starts[r] + c] = recv[d:d + c]
            starts[r] += c

    _exchange_rounds(comm, mine, sizes, collect, max_buf_len)
    return [pickle.loads(o) for o in outs]


def gather_obj(comm, obj, max_buf_len, root=0):
    """Every rank's object as a list at ``root``; None elsewhere."""
    _wire.check_root(root, comm.Get_size(), comm.Get_rank(), 'gather_obj')
    rank = comm.Get_rank()
    is_root = rank == root
    mine, sizes = _pickled_and_sizes(comm, obj, 'gather_obj')
    outs = [numpy.empty(s, dtype=numpy.uint8) for s in sizes] \
        if is_root else None
    starts = [0] * len(sizes)

    def collect(chunk_start, counts, displs):
        send = mine[chunk_start:chunk_start + counts[rank]]
        if is_root:
            recv = numpy.empty(sum(counts), dtype=numpy.uint8)
            comm.Gatherv(send, [recv, (counts, displs)], root=root)
            for r, (c, d) in enumerate(zip(counts, displs)):
                outs[r][starts[r]:starts[r] + c] = recv[d:d + c]
                starts[r] += c
        else:
            comm.Gatherv(send, None, root=root)

    _exchange_rounds(comm, mine, sizes, collect, max_buf_len)
    return [pickle.loads(o) for o in outs] if is_root else None


def scatter_obj(comm, objs, max_buf_len, root=0):
    """Rank i receives ``objs[i]`` from ``root``."""
    _wire.check_root(root, comm.Get_size(), comm.Get_rank(), 'scatter_obj')
    rank, nranks = comm.Get_rank(), comm.Get_size()
    is_root = rank == root
    sizes = numpy.zeros(nranks, dtype=numpy.int64)
    if is_root:
        try:
            objs = list(objs)
            if len(objs) != nranks:
                raise ValueError('scatter_obj: expecting {} objects (one '
                                 'per rank), got {} at root {}'.format(
                                     nranks, len(objs), root))
            datas = [_dumps(o) for o in objs]
        except Exception as error:
            _send_failure(comm, sizes, error, root)
            raise
        sizes[:] = [d.size for d in datas]
    comm.Bcast(sizes, root=root)
    if not is_root:
        _wire.raise_if_failed(sizes[0], 'scatter_obj', comm.Get_rank(),
                              root)
    sizes = sizes.tolist()
    out = numpy.empty(sizes[rank], dtype=numpy.uint8)
    got = [0]

    def collect(_chunk_start, counts, displs):
        recv = out[got[0]:got[0] + counts[rank]]
        if is_root:
            send = numpy.empty(sum(counts), dtype=numpy.uint8)
            for r, (c, d) in enumerate(zip(counts, displs)):
                send[d:d + c] = datas[r][sent[r]:sent[r] + c]
                sent[r] += c
            comm.Scatterv([send, (counts, displs)], recv, root=root)
        else:
            comm.Scatterv(None, recv, root=root)
        got[0] += counts[rank]

    sent = [0] * nranks
    _exchange_rounds(comm, None, sizes, collect, max_buf_len)
    return pickle.loads(out)


def allreduce_obj(comm, obj, max_buf_len):
    """Sum (``+``) of every rank's object, in rank order, on every rank."""
    return functools.reduce(operator.add,
                            allgather_obj(comm, obj, max_buf_len))
