"""The multi-node evaluator reports the mean over every test example."""
import chainer
import chainer.functions as F
import numpy as np
import pytest

import chainermn_lite


class _Echo(chainer.Link):
    """Reports the mean of its inputs as 'value' (one per example)."""

    def forward(self, x):
        chainer.reporter.report({'value': F.mean(x)}, self)
        return F.mean(x)


@pytest.mark.mpi(sizes=(1, 2, 3, 4))
def test_mean_weighted_by_examples_per_rank(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    values = np.arange(11, dtype=np.float32) ** 2  # uneven split over ranks
    data = values.reshape(-1, 1) if comm.rank == 0 else None
    part = chainermn_lite.scatter_dataset(data, comm,
                                          force_equal_length=False)
    it = chainer.iterators.SerialIterator(part, 2, repeat=False,
                                          shuffle=False)
    target = _Echo()
    evaluator = chainermn_lite.create_multi_node_evaluator(
        chainer.training.extensions.Evaluator(it, target), comm)
    result = evaluator()
    assert result['main/value'] == pytest.approx(values.mean(), rel=1e-6)
    # Runs again from the start (the iterator is reset).
    assert evaluator() == result
