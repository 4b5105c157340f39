"""Conformance: ``MPI.pickle`` serializes every object message, and its
out-of-band form (pickle protocol 5) is mpi4py's.

Each test runs in-process on the simulator and under ``mpiexec`` on Open
MPI with the same assertions. A test that changes ``MPI.pickle`` restores
it in ``finally``: on the simulator the change is private to the rank.
"""
import json
import pickle

import numpy as np
import pytest

SIZES = (1, 2, 3)


def _json_dumps(obj):
    return json.dumps(obj).encode()


def _json_loads(data):
    return json.loads(bytes(memoryview(data)).decode())


@pytest.mark.mpi(sizes=SIZES)
def test_object_calls_use_the_chosen_serializer(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    MPI.pickle.__init__(_json_dumps, _json_loads)
    try:
        assert MPI.pickle.PROTOCOL is None      # json takes no protocol
        right, left = (rank + 1) % size, (rank - 1) % size
        request = mpi_comm.isend({'rank': rank}, right, 3)
        assert mpi_comm.recv(source=left, tag=3) == {'rank': left}
        request.wait()
        # A JSON list comes back as a list, where pickle keeps the tuple:
        # the collectives went through the chosen serializer too.
        assert mpi_comm.bcast((1, 2), root=0) == [1, 2]
        assert mpi_comm.allgather((rank,)) == [[r] for r in range(size)]
        assert MPI.pickle.loads(MPI.pickle.dumps([1, 'a'])) == [1, 'a']
    finally:
        MPI.pickle.__init__()
    assert MPI.pickle.PROTOCOL == pickle.HIGHEST_PROTOCOL
    assert mpi_comm.bcast((1, 2), root=0) == (1, 2)


@pytest.mark.mpi(sizes=SIZES)
def test_protocol_and_threshold_defaults(mpi_comm, MPI):
    pkl = MPI.Pickle()
    assert pkl.PROTOCOL == pickle.HIGHEST_PROTOCOL
    assert pkl.THRESHOLD == 262144
    pkl.PROTOCOL = 2
    pkl.THRESHOLD = 10
    assert (pkl.PROTOCOL, pkl.THRESHOLD) == (2, 10)
    pkl.PROTOCOL = None
    pkl.THRESHOLD = None
    assert (pkl.PROTOCOL, pkl.THRESHOLD) == (pickle.HIGHEST_PROTOCOL,
                                             262144)
    assert pickle.loads(pkl.dumps({'a': 1})) == {'a': 1}


@pytest.mark.mpi(sizes=SIZES)
def test_dumps_oob_keeps_large_buffers_out_of_band(mpi_comm, MPI):
    pkl = MPI.Pickle(threshold=64)
    small = np.arange(4, dtype='i')             # 16 bytes: in band
    large = np.arange(32, dtype='i')            # 128 bytes: out of band
    data, bufs = pkl.dumps_oob([small, large])
    assert type(data) is bytes and type(bufs) is list
    assert len(bufs) == 1 and type(bufs[0]) is MPI.buffer
    assert memoryview(bufs[0]).nbytes == large.nbytes
    got = pkl.loads_oob(data, bufs)
    assert np.array_equal(got[0], small) and np.array_equal(got[1], large)
    # Even when asked for an older protocol, out of band means protocol 5.
    pkl.PROTOCOL = 2
    data, bufs = pkl.dumps_oob(large)
    assert len(bufs) == 1
    assert np.array_equal(pkl.loads_oob(data, bufs), large)


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_allocates_and_wraps_memory(mpi_comm, MPI):
    buf = MPI.buffer.allocate(16, clear=True)
    assert type(buf) is MPI.buffer and len(buf) == 16
    assert bytes(memoryview(buf)) == bytes(16)
    memoryview(buf)[:3] = b'abc'
    assert memoryview(buf).tobytes()[:3] == b'abc'
    array = np.zeros(4, 'i')
    wrapped = MPI.buffer(array)
    memoryview(wrapped).cast('i')[1] = 7        # the same memory
    assert array.tolist() == [0, 7, 0, 0]
    assert MPI.memory is MPI.buffer


@pytest.mark.mpi(sizes=SIZES)
def test_handles_of_the_process_refuse_pickling_in_mpi4pys_words(mpi_comm,
                                                                 MPI):
    comm = mpi_comm.Dup()
    group = mpi_comm.Get_group()
    request = mpi_comm.Irecv(np.zeros(1), mpi_comm.Get_rank(), tag=77)
    window = MPI.Win.Allocate(8, comm=MPI.COMM_SELF)
    for handle, kind in ((comm, 'Intracomm'), (group, 'Group'),
                         (request, 'Request'), (window, 'Win')):
        with pytest.raises(ValueError, match=r"^cannot serialize "
                           r"'mpi4py\.MPI\.{}' instance".format(kind)):
            pickle.dumps(handle)
    # Null and predefined handles travel.
    assert pickle.loads(pickle.dumps(MPI.GROUP_EMPTY)) == MPI.GROUP_EMPTY
    assert pickle.loads(pickle.dumps(MPI.REQUEST_NULL)) == MPI.REQUEST_NULL
    mpi_comm.Send(np.zeros(1), mpi_comm.Get_rank(), tag=77)
    request.Wait()
    window.Free()
    group.Free()
    comm.Free()
