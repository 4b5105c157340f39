"""Bad input gets an error naming the value and the rank."""
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite import communicators


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_peer_out_of_range_and_self(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    n, r = comm.size, comm.rank
    with pytest.raises(ValueError, match='rank {} is out of range.*size {}'
                       .format(n, n)):
        comm.send(np.ones(2), n, 0)
    with pytest.raises(ValueError, match='rank -7 is out of range'):
        comm.recv(-7, 0)
    with pytest.raises(ValueError, match='rank {} is out of range'.format(
            n + 3)):
        comm.send_obj(1, n + 3)
    with pytest.raises(ValueError, match='sends to itself.*deadlock'):
        comm.send(np.ones(2), r, 0)
    with pytest.raises(ValueError, match='tag must be an int >= 0'):
        comm.send(np.ones(2), (r + 1) % n, -5)
    with pytest.raises(ValueError, match='bcast root.*rank {}'.format(n)):
        comm.bcast(np.ones(1), root=n)


@pytest.mark.mpi(sizes=(1, 2))
def test_unsupported_dtypes_are_named(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    with pytest.raises(TypeError, match='dtype object'):
        comm.send(np.array([None, 1]), (comm.rank + 1) % comm.size, 0)
    if comm.size > 1:
        # ... and what the previous rank failed to send is said so here
        with pytest.raises(TypeError, match='could not send its input'):
            comm.recv((comm.rank - 1) % comm.size, 0)
    with pytest.raises(TypeError, match='dtype <U3'):
        comm.allgather(np.array(['abc']))


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_allreduce_rejects_bool_on_every_rank(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm, 'flat')
    with pytest.raises(TypeError, match='dtype bool cannot be reduced'):
        comm.allreduce(np.ones(3, dtype=bool))


@pytest.mark.mpi(sizes=(2, 3, 4))
def test_allreduce_shape_mismatch_names_each_rank(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    x = np.ones((2, 1 + (comm.rank == 1)), dtype=np.float32)
    with pytest.raises(ValueError) as info:
        comm.allreduce(x)
    assert 'rank 0: shape (2, 1)' in str(info.value)
    assert 'rank 1: shape (2, 2)' in str(info.value)
    # still in step afterwards
    np.testing.assert_array_equal(comm.allreduce(np.ones(2)),
                                  np.full(2, comm.size))


@pytest.mark.mpi(sizes=(2,))
def test_recv_obj_of_an_array_message_says_so(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    if comm.rank == 0:
        comm.send(np.ones(3), 1, 4)
    else:
        with pytest.raises(TypeError, match='expected a Python object from '
                           'rank 0 .tag 4. but received an array'):
            comm.recv_obj(0, tag=4)


@pytest.mark.mpi(sizes=(1, 2))
def test_scatter_and_alltoall_need_one_item_per_rank(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    with pytest.raises(ValueError, match='expecting {} arrays.*got {}'
                       .format(comm.size, comm.size + 1)):
        comm.alltoall([np.ones(1)] * (comm.size + 1))
    if comm.size == 1:
        with pytest.raises(ValueError, match='expecting 1 arrays'):
            comm.scatter((np.ones(1), np.ones(1)))


def test_unknown_name_lists_available():
    with pytest.raises(ValueError) as info:
        chainermn_lite.create_communicator('fastest', mpi_comm=object())
    for name in communicators.COMMUNICATOR_NAMES:
        assert name in str(info.value)


def test_allreduce_grad_dtype_only_for_pure_nccl():
    with pytest.raises(ValueError, match="only available with the "
                       "'pure_nccl'"):
        chainermn_lite.create_communicator('flat', mpi_comm=object(),
                                           allreduce_grad_dtype='float16')


def test_default_name_without_gpu_is_flat():
    try:
        import cupy  # noqa: F401
        pytest.skip('CuPy installed: the default depends on the GPU')
    except ImportError:
        pass
    assert communicators.default_communicator_name() == 'flat'


@pytest.mark.mpi(sizes=(1, 2, 3))
@pytest.mark.parametrize('call, bad, raised, others', [
    ('bcast', lambda: (np.ones(2),), TypeError, TypeError),
    ('bcast', lambda: 'text', TypeError, TypeError),
    ('scatter', lambda: (np.ones(1),) * 9, ValueError, ValueError),
    ('scatter', lambda: np.float32(1), ValueError, ValueError),
    ('bcast_obj', lambda: (lambda: 1), AttributeError, RuntimeError),
    ('scatter_obj', lambda: [1] * 9, ValueError, ValueError),
])
def test_a_roots_bad_input_raises_on_every_rank(
        mpi_comm, make_communicator, call, bad, raised, others):
    # The root raises on its own input; the others are told through the
    # first word it broadcasts anyway, and raise instead of waiting for
    # data that never comes. The communicator is usable after.
    comm = make_communicator(mpi_comm, 'naive')
    root = comm.size - 1
    data = bad() if comm.rank == root else None
    if comm.rank == root:
        with pytest.raises(raised):
            getattr(comm, call)(data, root=root)
    else:
        with pytest.raises(others, match='root {} could not send its input'
                           .format(root)):
            getattr(comm, call)(data, root=root)
    assert comm.allreduce_obj(1) == comm.size


@pytest.mark.mpi(sizes=(1, 2, 3))
@pytest.mark.parametrize('call', ['gather_obj', 'allgather_obj',
                                  'allreduce_obj'])
def test_an_object_that_does_not_pickle_raises_on_every_rank(
        mpi_comm, make_communicator, call):
    comm = make_communicator(mpi_comm, 'naive')
    last = comm.size - 1
    if comm.rank == last:
        with pytest.raises(AttributeError, match='pickle'):
            getattr(comm, call)(lambda: comm.rank)
    else:
        with pytest.raises(RuntimeError, match='rank {} could not send its '
                           'input'.format(last)):
            getattr(comm, call)(comm.rank)
    assert comm.allreduce_obj(1) == comm.size


@pytest.mark.mpi(sizes=(1, 2, 3))
@pytest.mark.parametrize('call, bad, good, raised', [
    ('allgather', lambda: np.array(['abc']), lambda: np.ones(2), TypeError),
    ('allgather', lambda: [1, 2], lambda: np.ones(2), TypeError),
    ('gather', lambda: np.array([None]), lambda: np.ones(2), TypeError),
    ('allreduce', lambda: (np.ones(2),), lambda: np.ones(2), TypeError),
    ('allreduce', lambda: np.array([None]), lambda: np.ones(2), TypeError),
    ('alltoall', lambda n: [np.ones(1)] * (n + 1),
     lambda n: [np.ones(1)] * n, ValueError),
    ('alltoall', lambda n: ['x'] * n, lambda n: [np.ones(1)] * n, TypeError),
])
def test_one_ranks_bad_array_raises_on_every_rank(
        mpi_comm, make_communicator, call, bad, good, raised):
    # Every rank describes its own array: the bad one still joins the
    # descriptor exchange with a failure word there, so the others raise
    # the same kind of error naming it instead of waiting for its data.
    comm = make_communicator(mpi_comm, 'naive')
    last = comm.size - 1
    arg = (comm.size,) if call == 'alltoall' else ()
    if comm.rank == last:
        with pytest.raises(raised) as info:
            getattr(comm, call)(bad(*arg))
        assert 'could not send' not in str(info.value)
    else:
        with pytest.raises(raised, match=r'{} \(rank {}\): rank {} could '
                           'not send its input'.format(call, comm.rank, last)):
            getattr(comm, call)(good(*arg))
    assert comm.allreduce_obj(1) == comm.size


@pytest.mark.mpi(sizes=(2, 3))
@pytest.mark.parametrize('call, bad, raised, others', [
    ('send', lambda: np.array([None, 1]), TypeError, TypeError),
    ('send', lambda: (np.ones(2), 'text'), TypeError, TypeError),
    ('send', lambda: [np.ones(2), np.array(['a'])], TypeError, TypeError),
    ('send_obj', lambda: (lambda: 1), AttributeError, RuntimeError),
])
def test_a_senders_bad_input_raises_in_its_receiver(
        mpi_comm, make_communicator, call, bad, raised, others):
    # The sender raises on its input and sends a failure notice in place
    # of the message, so the receiver raises too instead of waiting (under
    # MPI alone it would wait forever). Both go on in step after.
    comm = make_communicator(mpi_comm, 'flat')
    last = comm.size - 1
    receive = comm.recv if call == 'send' else comm.recv_obj
    if comm.rank == 0:
        with pytest.raises(raised):
            getattr(comm, call)(bad(), last, 5)
        comm.send(np.arange(3), last, 5)
    elif comm.rank == last:
        with pytest.raises(others, match=r'recv \(rank {}\): rank 0 could '
                           'not send its input'.format(last)):
            receive(0, tag=5)
        np.testing.assert_array_equal(comm.recv(0, 5), np.arange(3))
