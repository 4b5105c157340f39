"""Object methods: send_obj/recv_obj and the *_obj collectives."""
import numpy as np
import pytest




def _payload(rank, n=10):
    return {'rank': rank, 'text': 'r' * (rank * n),
            'array': np.arange(rank * n, dtype=np.float32), 'none': None}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k])
        else:
            assert a[k] == b[k]


@pytest.mark.mpi(sizes=(2, 3, 4, 8))
def test_send_recv_obj(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    r, n = comm.rank, comm.size
    if r == 0:
        for dest in range(1, n):
            comm.send_obj(_payload(dest, 5000), dest, tag=dest)
            comm.send_obj(None, dest)
    else:
        _same(comm.recv_obj(0, tag=r), _payload(r, 5000))
        assert comm.recv_obj(0) is None


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('max_buf_len', [None, 7, 1000])
def test_bcast_obj_chunked(mpi_comm, max_buf_len, make_communicator):
    comm = make_communicator(mpi_comm)
    for root in {0, comm.size - 1}:
        obj = _payload(root + 3, 100) if comm.rank == root else None
        got = comm.bcast_obj(obj, max_buf_len=max_buf_len, root=root)
        _same(got, _payload(root + 3, 100))


@pytest.mark.mpi(sizes=(1, 2, 3, 4, 8))
@pytest.mark.parametrize('max_buf_len', [None, 5])
def test_gather_scatter_allreduce_obj(
        mpi_comm, max_buf_len, make_communicator):
    comm = make_communicator(mpi_comm)
    if max_buf_len:
        comm.set_config('max_buf_len', max_buf_len)
    r, n = comm.rank, comm.size
    got = comm.gather_obj(_payload(r), root=n - 1)
    if r == n - 1:
        assert len(got) == n
        for i, g in enumerate(got):
            _same(g, _payload(i))
    else:
        assert got is None
    everyone = comm.allgather_obj(('x', r))
    assert everyone == [('x', i) for i in range(n)]
    mine = comm.scatter_obj([_payload(i) for i in range(n)]
                            if r == 0 else None)
    _same(mine, _payload(r))
    assert comm.allreduce_obj(r + 1) == n * (n + 1) // 2
    assert comm.allreduce_obj([r]) == list(range(n))
    total = comm.allreduce_obj(np.full(3, r))
    np.testing.assert_array_equal(total, np.full(3, n * (n - 1) // 2))


@pytest.mark.mpi(sizes=(2, 3))
def test_split_of_a_user_subclass_is_that_subclass(mpi_comm):
    from chainermn_lite.communicators.naive_communicator import \
        NaiveCommunicator

    class Counting(NaiveCommunicator):
        def __init__(self, mpi_comm):
            super().__init__(mpi_comm)
            self.made_by_init = True

        def allreduce_obj(self, obj):
            return ('counted', super().allreduce_obj(obj))

    comm = Counting(mpi_comm)
    comm.set_config('max_buf_len', 1000)
    sub = comm.split(comm.rank % 2, comm.rank)
    assert type(sub) is Counting and sub.made_by_init
    assert sub.get_config('max_buf_len') == 1000
    members = [i for i in range(comm.size) if i % 2 == comm.rank % 2]
    assert sub.allreduce_obj(comm.rank) == ('counted', sum(members))
    sub.finalize()


@pytest.mark.mpi(sizes=(1, 2, 4))
def test_split_keeps_kind(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'hierarchical')
    r = comm.rank
    sub = comm.split(r % 2, -r)
    assert sub.name == 'hierarchical'
    assert type(sub) is type(comm)      # ChainerMN: self.__class__(...)
    members = [i for i in range(comm.size) if i % 2 == r % 2]
    assert sub.size == len(members)
    # key -r reverses the order within each color.
    assert sub.rank == sorted(members, reverse=True).index(r)
    assert sub.allreduce_obj(r) == sum(members)
    sub.finalize()
