"""create_multi_node_n_step_rnn: an encoder on rank 0 hands its LSTM state
to a decoder on rank 1; the split model equals the one-process model."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

from chainermn_lite.links import create_multi_node_n_step_rnn
from chainermn_lite.testing import assert_model_parallel_equivalent

N_IN, N_UNITS = 3, 4


def _batch(step):
    rs = np.random.RandomState(step)
    xs = [rs.randn(n, N_IN).astype(np.float32) for n in (4, 3, 2)]
    ys = [rs.randn(n, N_IN).astype(np.float32) for n in (3, 3, 1)]
    return xs, ys


def _loss(out, xs, ys):
    w = np.linspace(-1, 1, out.size, dtype=np.float32).reshape(out.shape)
    return F.sum(out * w)


def _lstm():
    return L.NStepLSTM(2, N_IN, N_UNITS, 0.0)


class Full(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.enc = _lstm()
            self.dec = _lstm()

    def forward(self, xs, ys):
        hy, cy, _ = self.enc(None, None, xs)
        _, _, os = self.dec(hy, cy, ys)
        return F.concat(os, axis=0)


class Encoder(chainer.Chain):
    def __init__(self, comm):
        super().__init__()
        with self.init_scope():
            self.enc = create_multi_node_n_step_rnn(_lstm(), comm,
                                                    rank_out=1)

    def forward(self, xs, ys):
        *_, delegate = self.enc(xs)
        return delegate


class Decoder(chainer.Chain):
    def __init__(self, comm):
        super().__init__()
        with self.init_scope():
            self.dec = create_multi_node_n_step_rnn(_lstm(), comm,
                                                    rank_in=0)

    def forward(self, xs, ys):
        _, _, os, delegate = self.dec(ys)
        assert delegate is None
        return F.concat(os, axis=0)


def _param_map(rank, path):
    return '/' + '/'.join(p for p in path.split('/')
                          if p and p != 'actual_rnn')


@pytest.mark.mpi(sizes=(2,))
def test_encoder_decoder_split_over_two_ranks(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    split = Encoder(comm) if comm.rank == 0 else Decoder(comm)
    report = assert_model_parallel_equivalent(
        split, Full(), _batch, _loss, comm, steps=3, n_model_args=2,
        output_ranks=(1,), param_map=_param_map)
    assert report.compared_params == 2 * 2 * 8   # 2 layers x (8 W + 8 b)


def test_refuses_a_link_that_is_not_an_n_step_rnn():
    with pytest.raises(ValueError, match='got Linear'):
        create_multi_node_n_step_rnn(L.Linear(2, 2), object(), rank_in=0)
