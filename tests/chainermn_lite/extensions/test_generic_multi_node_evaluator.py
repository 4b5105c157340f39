"""GenericMultiNodeEvaluator: root aggregates every rank's batch results."""
import chainer
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.extensions import GenericMultiNodeEvaluator


class _SumCount(GenericMultiNodeEvaluator):
    """Exact global mean and median: not computable from local means."""

    def calc_local(self, x):
        return self.comm.rank, x.ravel().tolist()

    def aggregate(self, results):
        values = [v for _, batch in results for v in batch]
        return {'mean': float(np.mean(values)),
                'median': float(np.median(values)),
                'order': [(rank, batch[0]) for rank, batch in results]}


def _expected_order(parts, batch):
    """ChainerMN's order: batch 0 of ranks 0..n-1, then batch 1, ..."""
    batches = [[(rank, p[i]) for i in range(0, len(p), batch)]
               for rank, p in enumerate(parts)]
    return [b[step] for step in range(max(map(len, batches)))
            for b in batches if step < len(b)]


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
@pytest.mark.parametrize('n,batch', [(11, 2), (41, 1), (5, 3)])
def test_root_gets_every_result_in_chainermn_order(
        mpi_comm, n, batch, make_communicator):
    comm = make_communicator(mpi_comm)
    values = np.arange(n, dtype=np.float64) ** 2
    data = values.reshape(-1, 1) if comm.rank == 0 else None
    # Uneven parts: ranks run out of batches at different steps, some
    # after more than gather_interval (8) batches.
    part = chainermn_lite.scatter_dataset(data, comm,
                                          force_equal_length=False)
    it = chainer.iterators.SerialIterator(part, batch, repeat=False,
                                          shuffle=False)
    hooked = []
    evaluator = _SumCount(comm, it, None, progress_hook=hooked.append)
    result = evaluator()
    again = evaluator()  # the iterator is reset
    parts = comm.allgather_obj([float(part[i][0]) for i in range(len(part))])
    if comm.rank != 0:
        assert result is None and again is None and hooked == []
        return
    assert again == result
    assert result['mean'] == pytest.approx(values.mean())
    assert result['median'] == pytest.approx(np.median(values))
    assert result['order'] == _expected_order(parts, batch)
    assert len(hooked) == 2 * -(-len(parts[0]) // batch)


@pytest.mark.mpi(sizes=(2, 3))
def test_default_calc_local_calls_target_and_root_can_be_any_rank(
        mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    root = comm.size - 1
    data = [np.array([comm.rank * 10 + i], np.float32) for i in range(3)]
    it = chainer.iterators.SerialIterator(data, 1, repeat=False,
                                          shuffle=False)
    evaluator = GenericMultiNodeEvaluator(
        comm, it, lambda x: float(x.sum()), root=root)
    assert evaluator.default_name == 'validation'
    result = evaluator()
    if comm.rank == root:
        assert result == [float(r * 10 + i) for i in range(3)
                          for r in range(comm.size)]
    else:
        assert result is None


def test_without_communicator_evaluates_locally():
    it = chainer.iterators.SerialIterator([np.float32(1), np.float32(2)], 1,
                                          repeat=False, shuffle=False)
    evaluator = GenericMultiNodeEvaluator(None, it, lambda x: float(x[0]))
    assert evaluator() == [1.0, 2.0]


@pytest.mark.mpi(sizes=(2,))
def test_bad_root_is_refused(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    with pytest.raises(ValueError, match='root 2 is not a rank'):
        GenericMultiNodeEvaluator(comm, iter([]), None, root=2)
