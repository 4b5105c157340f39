"""The seed guide's model-parallel MLP, split over 2 ranks, on real data.

Rank 0 holds ``l1`` and the classifier; rank 1 holds ``l2`` and ``l3``::

    rank 0: x -> relu(l1) --send--> rank 1: relu(l2) -> l3 --send--> rank 0
            -> softmax cross entropy

Runs unmodified both ways and reaches the same accuracy::

    python -m simulator -n 2 examples/model_parallel/train_mlp.py
    mpiexec -n 2 python examples/model_parallel/train_mlp.py

Data: scikit-learn's bundled 8x8 digits (1,797 images, a fixed split of
1,497 train / 300 test); rank 1 iterates an empty dataset of the same
length, as in the guide. Only rank 0 prints.
"""
import argparse

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
from chainer import training
from chainer.training import extensions

import chainermn_lite as chainermn

TEST_SIZE = 300


class MLP0SubA(chainer.Chain):
    """Rank 0's first component: its output goes to rank 1."""

    def __init__(self, n_in, n_units):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_units)

    def forward(self, x):
        return F.relu(self.l1(x))


class MLP0SubB(chainer.Chain):
    """Rank 0's second component: rank 1's output is the model output."""

    def forward(self, y):
        return y


class MLP0(chainermn.MultiNodeChainList):
    def __init__(self, comm, n_in, n_units):
        super().__init__(comm=comm)
        self.add_link(MLP0SubA(n_in, n_units), rank_in=None, rank_out=1)
        self.add_link(MLP0SubB(), rank_in=1, rank_out=None)


class MLP1Sub(chainer.Chain):
    def __init__(self, n_units, n_out):
        super().__init__()
        with self.init_scope():
            self.l2 = L.Linear(n_units, n_units)
            self.l3 = L.Linear(n_units, n_out)

    def forward(self, h0):
        return self.l3(F.relu(self.l2(h0)))


class MLP1(chainermn.MultiNodeChainList):
    def __init__(self, comm, n_units, n_out):
        super().__init__(comm=comm)
        self.add_link(MLP1Sub(n_units, n_out), rank_in=0, rank_out=0)


def seed_params(model, seed):
    """LeCun-normal weights, zero biases, from RandomState(seed).

    Chainer's initialisers draw from NumPy's global RNG, which simulated
    ranks share; an explicit RandomState keeps both worlds identical."""
    rng = np.random.RandomState(seed)
    for _, param in sorted(model.namedparams()):
        if param.ndim == 2:
            param.array[...] = rng.normal(0, np.sqrt(1.0 / param.shape[1]),
                                          param.shape)
        else:
            param.array[...] = 0


def load_digits():
    """(train, test) TupleDatasets of scikit-learn's digits."""
    from sklearn.datasets import load_digits as sklearn_digits
    digits = sklearn_digits()
    x = (digits.data / 16.0).astype(np.float32)
    t = digits.target.astype(np.int32)
    order = np.random.RandomState(0).permutation(len(x))
    test, train = order[:TEST_SIZE], order[TEST_SIZE:]
    return (chainer.datasets.TupleDataset(x[train], t[train]),
            chainer.datasets.TupleDataset(x[test], t[test]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--batchsize', '-b', type=int, default=32)
    parser.add_argument('--epoch', '-e', type=int, default=8)
    parser.add_argument('--unit', '-u', type=int, default=100)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', '-o', default='result_model_parallel')
    args = parser.parse_args(argv)

    comm = chainermn.create_communicator('naive')
    if comm.size != 2:
        raise SystemExit('train_mlp.py needs exactly 2 ranks, got {}'.format(
            comm.size))
    train, test = load_digits()
    n_in, n_out = train[0][0].size, 10
    if comm.rank == 0:
        model = L.Classifier(MLP0(comm, n_in, args.unit))
    else:
        model = MLP1(comm, args.unit, n_out)
        train = chainermn.datasets.create_empty_dataset(train)
        test = chainermn.datasets.create_empty_dataset(test)
    seed_params(model, args.seed + comm.rank)

    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    # Both ranks draw the same order: the batches line up across ranks.
    sampler = chainer.iterators.ShuffleOrderSampler(
        np.random.RandomState(args.seed))
    train_iter = chainer.iterators.SerialIterator(
        train, args.batchsize, order_sampler=sampler)
    test_iter = chainer.iterators.SerialIterator(
        test, args.batchsize, repeat=False, shuffle=False)
    updater = training.StandardUpdater(train_iter, optimizer)
    trainer = training.Trainer(updater, (args.epoch, 'epoch'), out=args.out)
    # Every rank evaluates (the forward pass communicates); rank 0 reports.
    trainer.extend(extensions.Evaluator(test_iter, model))
    if comm.rank == 0:
        trainer.extend(extensions.LogReport())
        trainer.extend(extensions.PrintReport(
            ['epoch', 'main/loss', 'validation/main/loss',
             'main/accuracy', 'validation/main/accuracy', 'elapsed_time']))
    trainer.run()

    with chainer.no_backprop_mode(), chainer.using_config('train', False):
        if comm.rank == 0:
            x, t = chainer.dataset.concat_examples(test)
            accuracy = float(F.accuracy(model.predictor(x), t).array)
            print('test accuracy: {:.4f}'.format(accuracy))
        else:
            model()
    return 0


if __name__ == '__main__':
    main()
