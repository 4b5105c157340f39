"""Generalized requests' Python completion, address arithmetic and Info's
mapping view of INFO_NULL / INFO_ENV, as mpi4py 4 over Open MPI 5 gives
them. Both ways."""
import pickle

import numpy as np
import pytest

SIZES = (1, 2)


@pytest.mark.mpi(sizes=SIZES)
def test_grequest_complete_gives_the_object(mpi_comm, MPI):
    calls = []
    greq = MPI.Grequest.Start(free_fn=lambda: calls.append('free'))
    assert not greq.Test()
    greq.complete({'rank': mpi_comm.rank})
    status = MPI.Status()
    done, obj = greq.test(status)
    assert done and obj == {'rank': mpi_comm.rank}
    assert (status.source, status.tag) == (MPI.ANY_SOURCE, MPI.ANY_TAG)
    assert calls == ['free'] and greq.wait() is None
    greq = MPI.Grequest.Start()
    greq.complete(7)
    assert greq.wait() == 7


@pytest.mark.mpi(sizes=SIZES)
def test_address_arithmetic(mpi_comm, MPI):
    data = np.arange(8, dtype=np.int32)
    base = MPI.Get_address(data)
    assert base == data.__array_interface__['data'][0]
    assert MPI.Get_address(data[3:]) == MPI.Aint_add(base, 12)
    assert MPI.Aint_diff(MPI.Get_address(data[5:]), base) == 20
    assert MPI.Aint_diff(base, base) == 0
    bottom = MPI.Get_address(MPI.BOTTOM)
    assert MPI.Aint_add(bottom, 0) == bottom
    assert MPI.Aint_add(base, 1.5) == base + 1     # truncated, as C's
    with pytest.raises(TypeError):
        MPI.Aint_add(base, '1')


@pytest.mark.mpi(sizes=SIZES)
def test_info_null_and_env_mapping(mpi_comm, MPI):
    null = MPI.INFO_NULL
    for fn in (lambda: null['k'], lambda: null.__setitem__('k', 'v'),
               lambda: null.update([]), lambda: null.pop('k'),
               lambda: null.popitem()):
        with pytest.raises(KeyError):
            fn()
    assert null.get('k', 'd') == 'd' and null.pop('k', None) is None
    assert (null.keys(), null.values(), null.items()) == ([], [], [])
    assert null.copy() == null
    null.clear()
    env = pickle.loads(pickle.dumps(MPI.Info(MPI.INFO_ENV)))
    assert env is not MPI.INFO_ENV and env == MPI.INFO_ENV
    assert pickle.loads(pickle.dumps(MPI.INFO_ENV)) is MPI.INFO_ENV
    made = MPI.Info.Create({'a': '1'})
    again = pickle.loads(pickle.dumps(made))
    assert again != made and again.items() == [('a', '1')]
    made.Free()
    again.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_buffer_refuses_what_is_not_memory_and_read_only_writes(mpi_comm,
                                                                MPI):
    for obj in (None, 0, 0.0, [], ()):
        with pytest.raises(TypeError):
            MPI.buffer(obj)
        with pytest.raises(TypeError):
            MPI.buffer.frombuffer(obj)
    assert MPI.buffer().nbytes == 0
    ro = MPI.buffer(b'abc')
    assert ro.readonly and ro.tobytes() == b'abc'
    with pytest.raises(TypeError):
        ro[:] = 0
    with pytest.raises(BufferError):
        MPI.Attach_buffer(ro)
    with pytest.raises(TypeError):
        MPI.buffer.allocate(None)
    with pytest.raises(ValueError):
        MPI.buffer.allocate(-1)
    mem = MPI.buffer.allocate(4, clear=True)
    assert memoryview(mem.obj).nbytes == 4 and mem.tobytes() == bytes(4)
    rw = bytearray(b'xyz')
    buf = MPI.buffer(rw)
    buf[1:] = b'ab'
    assert rw == bytearray(b'xab') and buf.obj == rw

