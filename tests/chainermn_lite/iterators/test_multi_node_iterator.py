"""Multi-node and synchronized iterators share batches across ranks."""
import chainer
import numpy as np
import pytest

from chainermn_lite import iterators


def _actual(seed=0, n=10, batch=3, repeat=True):
    order = chainer.iterators.ShuffleOrderSampler(
        np.random.RandomState(seed))
    return chainer.iterators.SerialIterator(
        list(range(n)), batch, repeat=repeat, order_sampler=order)


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_every_rank_gets_the_master_batches(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    master = comm.size - 1
    actual = _actual() if comm.rank == master else None
    it = iterators.create_multi_node_iterator(actual, comm,
                                              rank_master=master, check=True)
    expected = _actual()
    for _ in range(7):
        assert next(it) == next(expected)
        assert it.epoch == expected.epoch
        assert it.is_new_epoch == expected.is_new_epoch
        assert it.epoch_detail == pytest.approx(expected.epoch_detail)


@pytest.mark.mpi(sizes=(2,))
def test_non_repeating_iterator_stops_on_every_rank(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    actual = _actual(repeat=False) if comm.rank == 0 else None
    it = iterators.create_multi_node_iterator(actual, comm)
    batches = list(it)
    assert sorted(x for b in batches for x in b) == list(range(10))


@pytest.mark.mpi(sizes=(2,))
def test_resume_continues_where_the_master_was(
        mpi_comm, tmp_path, make_communicator):
    # Unshuffled: Chainer does not save an order sampler's RNG state.
    def fresh():
        return chainer.iterators.SerialIterator(list(range(10)), 3,
                                                shuffle=False)
    comm = make_communicator(mpi_comm)
    it = iterators.create_multi_node_iterator(
        fresh() if comm.rank == 0 else None, comm)
    for _ in range(5):
        next(it)
    path = str(tmp_path / 'it.{}.npz'.format(comm.rank))
    chainer.serializers.save_npz(path, it)
    following = [next(it) for _ in range(4)]
    again = iterators.create_multi_node_iterator(
        fresh() if comm.rank == 0 else None, comm)
    # Only the master's state is saved; the others get it from the master.
    chainer.serializers.load_npz(path, again)
    assert again.epoch == 1
    assert [next(again) for _ in range(4)] == following


@pytest.mark.mpi(sizes=(1, 2, 3))
def test_order_reads_as_in_chainermn(mpi_comm, make_communicator):
    # ChainerMN's ``_order``: the master's actual order, which loading a
    # snapshot replaces; other ranks keep the order they were given at
    # construction (they never draw batches themselves).
    comm = make_communicator(mpi_comm)
    actual = _actual(n=12) if comm.rank == 0 else None
    it = iterators.create_multi_node_iterator(actual, comm)
    order = it._order.copy()
    assert sorted(order.tolist()) == list(range(12))
    assert order.tolist() == _actual(n=12)._state.order.tolist()
    saved = {}
    chainer.serializers.DictionarySerializer(saved).save(it)
    saved['order'] = np.roll(order, 1)
    chainer.serializers.NpzDeserializer(saved).load(it)
    expected = np.roll(order, 1) if comm.rank == 0 else order
    assert it._order.tolist() == expected.tolist()
    if comm.rank == 0:
        # Other attributes read through to the actual iterator, _state too.
        assert it._state.order.tolist() == expected.tolist()
        assert it._state is actual._state
    unshuffled = iterators.create_multi_node_iterator(
        chainer.iterators.SerialIterator(list(range(4)), 2, shuffle=False)
        if comm.rank == 0 else None, comm)
    assert unshuffled._order is None


@pytest.mark.mpi(sizes=(2, 3))
def test_synchronized_iterators_agree(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    it = iterators.create_synchronized_iterator(
        _actual(seed=comm.rank), comm, check=True)
    seen = [next(it) for _ in range(8)]
    assert all(s == seen for s in comm.allgather_obj(seen))


@pytest.mark.mpi(sizes=(1, 2))
def test_synchronized_order_follows_numpys_seed_as_chainermns(
        mpi_comm, make_communicator):
    # ChainerMN draws the shared seed from rank 0's numpy.random: a
    # program that seeds NumPy gets the same batches in every run, and
    # ChainerMN's.
    comm = make_communicator(mpi_comm)
    np.random.seed(5)
    it = iterators.create_synchronized_iterator(_actual(), comm)
    seed = np.random.RandomState(5).randint(0, 2 ** 32 - 1)
    order = np.random.RandomState(seed).permutation(10).tolist()
    assert next(it) + next(it) + next(it) == order[:9]


@pytest.mark.mpi(sizes=(2, 3))
def test_batch_check_names_the_disagreeing_ranks(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    batch = [np.zeros(3), 1 if comm.rank == 1 else 0]
    with pytest.raises(iterators.BatchMismatchError, match=r'ranks \[1\]'):
        iterators.verify_same_batch(comm, batch, step=4)
    iterators.verify_same_batch(comm, [np.zeros(3), 0], step=4)
