"""Data-parallel MLP training (ChainerMN's train_mnist example, offline).

Runs unmodified both ways, with the same accuracy for the same seed::

    python -m simulator -n 4 examples/mnist/train_mnist.py
    mpiexec -n 4 python examples/mnist/train_mnist.py

Data: MNIST when Chainer's cache already holds it (no download is tried),
otherwise scikit-learn's bundled 8x8 digits (1,797 images; a fixed split
of 1,497 train / 300 test). Rank 0 loads and scatters the data, so one
epoch is one pass over the whole training set across all ranks; the test
set is split without duplicates and evaluated on every rank, reported as
the mean over all test examples. Only rank 0 prints and writes logs.
"""
import argparse
import importlib.util
import os

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
from chainer import training
from chainer.training import extensions

import chainermn_lite as chainermn

DIGITS_TEST_SIZE = 300


class MLP(chainer.Chain):
    """Three fully connected layers, as ChainerMN's example."""

    def __init__(self, n_in, n_units, n_out):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_units)
            self.l2 = L.Linear(n_units, n_units)
            self.l3 = L.Linear(n_units, n_out)

    def forward(self, x):
        h1 = F.relu(self.l1(x))
        h2 = F.relu(self.l2(h1))
        return self.l3(h2)


def seed_params(model, seed):
    """LeCun-normal weights and zero biases from RandomState(seed).

    Chainer's initializers draw from NumPy's global RNG, which simulated
    ranks share; an explicit RandomState keeps runs reproducible."""
    rng = np.random.RandomState(seed)
    for _, param in sorted(model.namedparams()):
        if param.ndim == 2:
            scale = np.sqrt(1.0 / param.shape[1])
            param.array[...] = rng.normal(0, scale, param.shape)
        else:
            param.array[...] = 0


def mnist_cached():
    """True when Chainer's dataset cache already has MNIST."""
    root = os.path.join(chainer.dataset.get_dataset_root(), 'pfnet',
                        'chainer', 'mnist')
    return all(os.path.exists(os.path.join(root, name))
               for name in ('train.npz', 'test.npz'))


def load_digits_split():
    """scikit-learn's digits as two TupleDatasets, fixed split."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.RandomState(0).permutation(len(x))
    test, train = order[:DIGITS_TEST_SIZE], order[DIGITS_TEST_SIZE:]
    return (chainer.datasets.TupleDataset(x[train], y[train]),
            chainer.datasets.TupleDataset(x[test], y[test]))


def load_data(name):
    """(train, test, name) for 'mnist', 'digits' or 'auto'."""
    if name == 'mnist' or (name == 'auto' and mnist_cached()):
        train, test = chainer.datasets.get_mnist()
        return train, test, 'mnist'
    train, test = load_digits_split()
    return train, test, 'digits'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='ChainerMN-style data-parallel MLP training')
    parser.add_argument('--batchsize', '-b', type=int, default=100,
                        help='examples per rank per step')
    parser.add_argument('--communicator', type=str, default='naive')
    parser.add_argument('--epoch', '-e', type=int, default=20)
    parser.add_argument('--gpu', '-g', action='store_true',
                        help='not supported by this example (CPU only)')
    parser.add_argument('--out', '-o', default='result')
    parser.add_argument('--resume', '-r', default='')
    parser.add_argument('--unit', '-u', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--dataset', choices=('auto', 'mnist', 'digits'),
                        default='auto')
    parser.add_argument('--double-buffering', action='store_true')
    parser.add_argument('--overlap', action='store_true',
                        help='average gradients while backward runs')
    parser.add_argument('--no-progress', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.gpu:
        raise SystemExit('this example runs on CPU only; drop --gpu')
    comm = chainermn.create_communicator(args.communicator)

    train = test = None
    data_name = None
    if comm.rank == 0:
        train, test, data_name = load_data(args.dataset)
        print('Num process (COMM_WORLD): {}'.format(comm.size))
        print('Using {} communicator'.format(args.communicator))
        print('Data: {} ({} train, {} test)'.format(
            data_name, len(train), len(test)))
        print('Num unit: {}'.format(args.unit))
        print('Num Minibatch-size (per rank): {}'.format(args.batchsize))
        print('Num epoch: {}'.format(args.epoch))
        print('==========================================')
    n_in, n_out = comm.bcast_obj(
        None if comm.rank else (train[0][0].size, 10), root=0)

    model = L.Classifier(MLP(n_in, args.unit, n_out))
    seed_params(model, args.seed)
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm,
        double_buffering=args.double_buffering, overlap=args.overlap)
    optimizer.setup(model)

    # Train shards are padded to equal length (a few examples seen twice
    # per epoch) so every rank makes the same number of steps; test shards
    # are disjoint so the metric counts every example exactly once.
    train = chainermn.scatter_dataset(train, comm, shuffle=True,
                                      seed=args.seed)
    test = chainermn.scatter_dataset(test, comm, force_equal_length=False)

    order = chainer.iterators.ShuffleOrderSampler(
        np.random.RandomState(args.seed * 1000 + comm.rank))
    train_iter = chainer.iterators.SerialIterator(
        train, args.batchsize, order_sampler=order)
    test_iter = chainer.iterators.SerialIterator(
        test, args.batchsize, repeat=False, shuffle=False)

    updater = training.StandardUpdater(train_iter, optimizer)
    trainer = training.Trainer(updater, (args.epoch, 'epoch'), out=args.out)

    evaluator = extensions.Evaluator(test_iter, model)
    trainer.extend(chainermn.create_multi_node_evaluator(evaluator, comm))

    if comm.rank == 0:
        trainer.extend(extensions.LogReport())
        # PlotReport needs matplotlib; without it the plot is skipped.
        if importlib.util.find_spec('matplotlib') is not None:
            trainer.extend(extensions.PlotReport(
                ['main/loss', 'validation/main/loss'], 'epoch',
                filename='loss.png'))
        trainer.extend(extensions.PrintReport(
            ['epoch', 'main/loss', 'validation/main/loss',
             'main/accuracy', 'validation/main/accuracy', 'elapsed_time']))
        if not args.no_progress:
            trainer.extend(extensions.ProgressBar())

    if args.resume:
        chainer.serializers.load_npz(args.resume, trainer)

    trainer.run()
    final = trainer.observation.get('validation/main/accuracy')
    if comm.rank == 0 and final is not None:
        print('final validation accuracy: {:.4f}'.format(float(final)))
    return None if final is None else float(final)


if __name__ == '__main__':
    main()
