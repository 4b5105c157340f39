"""MultiNodeChainList == the unsplit model (losses, gradients, updates).

Every split model here is checked with chainermn_lite.testing.equivalence
against the same network in one process: the seed MLP on 2 ranks, a 3-rank
pipeline, fan-out + fan-in (rank_out / rank_in lists), a hand-off to
oneself, and two exchanges per iteration.
"""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
import pytest

import chainermn_lite
from chainermn_lite.testing import assert_model_parallel_equivalent

N_IN, N_HID, N_OUT, BATCH = 6, 5, 4, 8


def _needs_size(mpi_comm, size):
    if mpi_comm.Get_size() != size:
        # mpiexec with fewer processes runs a sizes=(3,) test at its size.
        pytest.skip('needs exactly {} ranks'.format(size))


def _batch(step):
    rs = np.random.RandomState(step)
    return (rs.randn(BATCH, N_IN).astype(np.float32),
            rs.randint(0, N_OUT, BATCH).astype(np.int32))


def _loss(y, x, t):
    return F.softmax_cross_entropy(y, t)


class Layers(chainer.Chain):
    """relu(linear) layers applied in order; the last one without relu."""

    def __init__(self, **sizes):
        super().__init__()
        self.order = list(sizes)
        with self.init_scope():
            for name, (n_in, n_out) in sizes.items():
                setattr(self, name, L.Linear(n_in, n_out))

    def forward(self, *xs):
        h = xs[0] if len(xs) == 1 else F.concat(xs, axis=1)
        for i, name in enumerate(self.order):
            h = getattr(self, name)(h)
            if i + 1 < len(self.order):
                h = F.relu(h)
        return h


class Identity(chainer.Chain):
    def forward(self, x):
        return x


def _split(comm, components):
    model = chainermn_lite.MultiNodeChainList(comm)
    for link, rank_in, rank_out in components.get(comm.rank, ()):
        model.add_link(link, rank_in=rank_in, rank_out=rank_out)
    return model


class FullMLP(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(N_IN, N_HID)
            self.l2 = L.Linear(N_HID, N_HID)
            self.l3 = L.Linear(N_HID, N_OUT)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


@pytest.mark.mpi(sizes=(2,))
def test_seed_mlp_on_two_ranks(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    # The seed guide's MLP0 / MLP1 (the MultiNodeChainList version).
    split = _split(comm, {
        0: [(Layers(l1=(N_IN, N_HID)), None, 1), (Identity(), 1, None)],
        1: [(Layers(l2=(N_HID, N_HID), l3=(N_HID, N_OUT)), 0, 0)],
    })
    # Layers ends without relu; the seed applies relu after l1.
    if comm.rank == 0:
        split[0].forward = lambda x, _l=split[0]: F.relu(_l.l1(x))
    report = assert_model_parallel_equivalent(
        split, FullMLP(), _batch, _loss, comm, steps=3)
    assert len(report.full_losses) == 3
    assert report.compared_params == {0: 2, 1: 4}[comm.rank]  # W and b
    if comm.rank == 0:
        np.testing.assert_allclose(report.split_losses, report.full_losses,
                                   rtol=1e-5)


class FullChain(chainer.Chain):
    """l1 -> relu -> l2 -> relu -> l3 (the 3-rank pipeline's whole)."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(N_IN, N_HID)
            self.l2 = L.Linear(N_HID, N_HID)
            self.l3 = L.Linear(N_HID, N_OUT)

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class Relu(chainer.Chain):
    def __init__(self, **sizes):
        super().__init__()
        with self.init_scope():
            self.inner = Layers(**sizes)

    def forward(self, *xs):
        return F.relu(self.inner(*xs))


def _drop_inner(rank, path):
    return '/' + '/'.join(p for p in path.split('/')
                          if p and not p.isdigit() and p != 'inner')


@pytest.mark.mpi(sizes=(3,))
def test_three_rank_pipeline(mpi_comm, make_communicator):
    _needs_size(mpi_comm, 3)
    comm = make_communicator(mpi_comm)
    split = _split(comm, {
        0: [(Relu(l1=(N_IN, N_HID)), None, 1), (Identity(), 2, None)],
        1: [(Relu(l2=(N_HID, N_HID)), 0, 2)],
        2: [(Layers(l3=(N_HID, N_OUT)), 1, 0)],
    })
    assert_model_parallel_equivalent(split, FullChain(), _batch, _loss,
                                     comm, steps=3, param_map=_drop_inner)


class FullFan(chainer.Chain):
    """h = relu(l1 x); y = l3(concat(relu(l2a h), relu(l2b h)))."""

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(N_IN, N_HID)
            self.l2a = L.Linear(N_HID, 3)
            self.l2b = L.Linear(N_HID, 2)
            self.l3 = L.Linear(5, N_OUT)

    def forward(self, x):
        h = F.relu(self.l1(x))
        return self.l3(F.concat((F.relu(self.l2a(h)), F.relu(self.l2b(h))),
                                axis=1))


@pytest.mark.mpi(sizes=(3,))
def test_fan_out_and_fan_in(mpi_comm, make_communicator):
    _needs_size(mpi_comm, 3)
    comm = make_communicator(mpi_comm)
    split = _split(comm, {
        0: [(Relu(l1=(N_IN, N_HID)), None, [1, 2]),
            (Layers(l3=(5, N_OUT)), [1, 2], None)],
        1: [(Relu(l2a=(N_HID, 3)), 0, 0)],
        2: [(Relu(l2b=(N_HID, 2)), 0, 0)],
    })
    assert_model_parallel_equivalent(split, FullFan(), _batch, _loss, comm,
                                     steps=3, param_map=_drop_inner)


@pytest.mark.mpi(sizes=(2,))
def test_fan_in_with_a_hand_off_to_oneself(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)

    class FullSelf(FullFan):
        pass

    # l2a runs on rank 0 itself: rank_out=[0, 1], later rank_in=[0, 1].
    split = _split(comm, {
        0: [(Relu(l1=(N_IN, N_HID)), None, [0, 1]),
            (Relu(l2a=(N_HID, 3)), 0, 0),
            (Layers(l3=(5, N_OUT)), [0, 1], None)],
        1: [(Relu(l2b=(N_HID, 2)), 0, 0)],
    })
    assert_model_parallel_equivalent(split, FullSelf(), _batch, _loss, comm,
                                     steps=2, param_map=_drop_inner)


class FullTwice(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            for i, (a, b) in enumerate([(N_IN, N_HID), (N_HID, N_HID),
                                        (N_HID, N_HID), (N_HID, N_OUT)]):
                setattr(self, 'l{}'.format(i + 1), L.Linear(a, b))

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        h = F.relu(self.l3(h))
        return self.l4(h)


@pytest.mark.mpi(sizes=(2,))
def test_ranks_exchange_twice_per_iteration(mpi_comm, make_communicator):
    comm = make_communicator(mpi_comm)
    split = _split(comm, {
        0: [(Relu(l1=(N_IN, N_HID)), None, 1),
            (Relu(l3=(N_HID, N_HID)), 1, 1),
            (Identity(), 1, None)],
        1: [(Relu(l2=(N_HID, N_HID)), 0, 0),
            (Layers(l4=(N_HID, N_OUT)), 0, 0)],
    })
    assert_model_parallel_equivalent(split, FullTwice(), _batch, _loss,
                                     comm, steps=3, param_map=_drop_inner)


class RecordingComm:
    """The communicator, noting (op, peer, tag) of each array message."""

    def __init__(self, comm):
        self._comm = comm
        self.log = []

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def send(self, data, dest, tag):
        self.log.append(('send', dest, tag))
        return self._comm.send(data, dest, tag)

    def recv(self, source, tag):
        self.log.append(('recv', source, tag))
        return self._comm.recv(source, tag)

    # Gradients travel as bare bytes (their layout is known to both sides).
    def send_exact(self, arrays, dest, tag):
        self.log.append(('send', dest, tag))
        return self._comm.send_exact(arrays, dest, tag)

    def recv_exact(self, specs, source, tag):
        self.log.append(('recv', source, tag))
        return self._comm.recv_exact(specs, source, tag)


@pytest.mark.mpi(sizes=(2,))
def test_each_message_has_its_own_tag(mpi_comm, make_communicator):
    comm = RecordingComm(make_communicator(mpi_comm))
    split = _split(comm, {
        0: [(Relu(l1=(N_IN, N_HID)), None, 1),
            (Relu(l2=(N_IN, N_HID)), None, 1)],
        1: [(Layers(l3=(2 * N_HID, 2)), [0, 0], None)],
    })
    x = _batch(0)[0]
    if comm.rank == 0:
        split(x).backward()
        # user tags 0 and 1 -> forward tags 0, 2; gradients on 3, then 1
        assert comm.log == [('send', 1, 0), ('send', 1, 2),
                            ('recv', 1, 3), ('recv', 1, 1)]
    else:
        F.sum(split()).backward()
        assert comm.log == [('recv', 0, 0), ('recv', 0, 2),
                            ('send', 0, 3), ('send', 0, 1)]


def test_add_link_refuses_bad_ranks_and_two_outputs():
    class FakeComm:
        rank, size = 0, 2
    model = chainermn_lite.MultiNodeChainList(FakeComm())
    with pytest.raises(ValueError, match="rank_in contains 5"):
        model.add_link(Identity(), rank_in=5)
    with pytest.raises(ValueError, match='empty list'):
        model.add_link(Identity(), rank_out=[])
    model.add_link(Identity(), rank_in=1, rank_out=None)
    with pytest.raises(ValueError, match='only one component'):
        model.add_link(Identity(), rank_in=1, rank_out=None)
