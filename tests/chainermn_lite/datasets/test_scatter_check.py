"""check_scattered: disjoint shards that cover the dataset, or an error
naming ranks and indices on every rank."""
import re

import chainer
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.datasets import ScatterError
from chainermn_lite.datasets import check_scattered
from chainermn_lite.datasets import scatter



@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('n', [0, 1, 7, 10])
def test_scatter_dataset_parts_pass_and_padding_is_named(
        mpi_comm, n, make_communicator):
    comm = make_communicator(mpi_comm)
    data = list(range(n)) if comm.rank == 0 else None
    part = chainermn_lite.scatter_dataset(data, comm, shuffle=True, seed=1,
                                          check=True)
    duplicates = check_scattered(part, comm)
    ranges = scatter.index_ranges(n, comm.size, True)
    expected = {}
    for rank, (begin, end) in enumerate(ranges):
        for i in range(begin, end):
            expected.setdefault(i, []).append(rank)
    assert duplicates == {i: r for i, r in expected.items() if len(r) > 1}
    exact = chainermn_lite.scatter_dataset(data, comm, check=True,
                                           force_equal_length=False)
    assert check_scattered(exact, comm, force_equal_length=False) == {}
    mine = chainermn_lite.scatter_index(n if comm.rank == 0 else None, comm,
                                        check=True)
    assert mine == ranges[comm.rank]


@pytest.mark.mpi(sizes=(2, 3, 4))
def test_overlapping_hand_made_shards_name_ranks_and_indices(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    n = 10
    # Rank 1 starts at 0 like rank 0: examples 0, size, ... twice, and
    # 1, 1 + size, ... on no rank.
    start = 0 if comm.rank == 1 else comm.rank
    with pytest.raises(ScatterError, match=r'indices \[1(, \d+)*\] of 10 '
                       r'examples are on no rank'):
        check_scattered(np.arange(start, n, comm.size), comm, n)
    overlap = np.arange(n) if comm.rank == 0 else np.array([n - 1])
    # Every other rank holds example 9 too.
    holders = str(list(range(comm.size)))
    with pytest.raises(ScatterError, match=r'index 9 on ranks ' +
                       re.escape(holders)):
        check_scattered(overlap, comm, n, force_equal_length=False)


@pytest.mark.mpi(sizes=(2, 3))
def test_missing_and_outside_indices_are_named(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    k = 3
    missed = ', '.join(str(k * r + k - 1) for r in range(comm.size))
    with pytest.raises(ScatterError, match=re.escape(
            'indices [{}] of {} examples'.format(missed, k * comm.size))):
        # Each rank forgets the last example of its block.
        check_scattered((comm.rank * k, comm.rank * k + k - 1), comm,
                        k * comm.size)
    shard = [comm.rank, comm.size] if comm.rank == comm.size - 1 \
        else [comm.rank]
    with pytest.raises(ScatterError, match=r'rank {} holds indices \[{}\] '
                       r'outside the dataset of {}'.format(
                           comm.size - 1, comm.size, comm.size)):
        check_scattered(shard, comm, comm.size)


@pytest.mark.mpi(sizes=(2, 3))
def test_ranks_shuffling_differently_are_caught(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    data = list(range(12))
    order = np.random.RandomState(comm.rank).permutation(12)  # per rank!
    begin, end = scatter.index_ranges(12, comm.size, False)[comm.rank]
    part = chainer.datasets.SubDataset(data, begin, end, order)
    with pytest.raises(ScatterError, match='different orders'):
        check_scattered(part, comm)
    bad = chainer.datasets.SubDataset(data, begin, end, np.zeros(12, int))
    with pytest.raises(ScatterError, match=r'rank \d: its shuffle order is '
                       r'not a permutation of range\(12\)'):
        check_scattered(bad, comm)


@pytest.mark.mpi(sizes=(2,))
def test_overlap_beyond_padding_is_refused(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    shard = (0, 4) if comm.rank == 0 else (1, 5)  # 5 examples, 3 shared
    with pytest.raises(ScatterError, match=r'beyond the padding.*every '
                       r'rank 3 examples\): lengths \[4, 4\]'):
        check_scattered(shard, comm, 5)
    with pytest.raises(ScatterError, match='disagree on the dataset length'):
        check_scattered((0, 3), comm, 5 + comm.rank)


class _BrokenScatter:
    """A communicator whose scatter_obj hands every rank the whole range."""

    def __init__(self, comm):
        self._comm = comm

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def scatter_obj(self, objs, root=0):
        self._comm.scatter_obj(objs, root=root)
        return (0, 6)


@pytest.mark.mpi(sizes=(2, 3))
def test_check_is_on_by_default_and_check_false_skips_it(
        mpi_comm, make_communicator):
    comm = _BrokenScatter(make_communicator(mpi_comm))
    with pytest.raises(ScatterError, match=r'index 0 on ranks \[0, 1'):
        chainermn_lite.scatter_index(6, comm, check=True,
                                     force_equal_length=False)
    with pytest.raises(ScatterError, match=r'index 0 on ranks \[0, 1'):
        chainermn_lite.scatter_dataset(list(range(6)), comm,
                                       force_equal_length=False)
    part = chainermn_lite.scatter_dataset(list(range(6)), comm, check=False,
                                          force_equal_length=False)
    assert len(part) > 0
