"""scatter_dataset / scatter_index: coverage, padding, shuffling."""
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.datasets import scatter


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('n', [0, 1, 7, 10, 13])
def test_unpadded_parts_are_disjoint_and_cover(mpi_comm, n, make_communicator):
    comm = make_communicator(mpi_comm)
    data = list(range(n)) if comm.rank == 0 else None
    part = chainermn_lite.scatter_dataset(data, comm,
                                          force_equal_length=False)
    parts = comm.allgather_obj([part[i] for i in range(len(part))])
    flat = [x for p in parts for x in p]
    assert sorted(flat) == list(range(n))
    lengths = [len(p) for p in parts]
    assert max(lengths) - min(lengths) <= 1


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_padded_parts_have_equal_length_and_cover(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    n = 10
    data = np.arange(n) * 3 if comm.rank == 0 else None
    part = chainermn_lite.scatter_dataset(data, comm, shuffle=True, seed=5)
    parts = comm.allgather_obj([int(part[i]) for i in range(len(part))])
    assert len({len(p) for p in parts}) == 1
    assert len(parts[0]) == -(-n // comm.size)
    assert set(x for p in parts for x in p) == set(range(0, 3 * n, 3))
    # The same seed gives the same assignment.
    again = chainermn_lite.scatter_dataset(data, comm, shuffle=True, seed=5)
    assert [int(again[i]) for i in range(len(again))] == parts[comm.rank]


@pytest.mark.mpi(sizes=(2, 3))
def test_scatter_index_from_a_non_zero_root(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    root = comm.size - 1
    n = 11 if comm.rank == root else None
    b, e = chainermn_lite.scatter_index(n, comm, root=root,
                                        force_equal_length=False)
    ranges = comm.allgather_obj((b, e))
    assert ranges == scatter.index_ranges(11, comm.size, False)
    assert ranges[0][0] == 0 and ranges[-1][1] == 11


@pytest.mark.mpi(sizes=(2,))
def test_large_dataset_goes_in_small_pieces(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    data = np.arange(5000, dtype=np.float64) if comm.rank == 0 else None
    part = chainermn_lite.scatter_dataset(data, comm, max_buf_len=1000,
                                          force_equal_length=False)
    assert part[0] == 2500 * comm.rank and len(part) == 2500


def test_bad_root_and_buffer_are_refused():
    class _Comm:
        rank, size = 0, 2
    with pytest.raises(ValueError, match='root 2'):
        chainermn_lite.scatter_index(4, _Comm(), root=2)
    with pytest.raises(chainermn_lite.DataSizeError, match='max_buf_len'):
        chainermn_lite.scatter_dataset([1], _Comm(), max_buf_len=0)


def test_empty_dataset_keeps_the_length():
    assert chainermn_lite.datasets.create_empty_dataset([5, 6, 7]) == \
        [(), (), ()]
