"""neon's ConvnetDist in Chainer: four ways to spread a convnet over ranks.

    python -m simulator -n 4 examples/neon_parallel/train_convnet.py \
        --dist-mode halopar
    mpiexec -n 4 python examples/neon_parallel/train_convnet.py \
        --dist-mode halodatapar --data-replicas 2

The network: conv 3x3 -> relu -> max pool 2 -> conv 3x3 -> relu -> max
pool 2 -> fully connected -> relu -> fully connected, on scikit-learn's
bundled 8x8 digits upsampled to 16x16. ``--dist-mode`` (neon's switches):

- ``datapar``: every rank a different micro-batch of each global batch,
  gradients averaged by ``create_multi_node_optimizer``;
- ``vecpar``: convolutions replicated, fully connected layers split by
  features (``VecparLinear``);
- ``halopar``: convolutions and pooling on image tiles over a grid of all
  ranks (``HaloConvolution2D``, halo pooling), then ``VecparLinear``;
- ``halodatapar``: ``--data-replicas`` replicas of a ``halopar`` grid, one
  micro-batch each, aligned within a replica.

Every mode trains the same weights (drawn from ``--seed``) on the same
global batches, so its loss curve equals the one-process run's: with
``--reference`` rank 0 also trains the plain network in-process and prints
the largest difference.
"""
import argparse

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np

import chainermn_lite
from chainermn_lite.functions import gather_features
from chainermn_lite.functions import gather_tiles
from chainermn_lite.functions import halo_max_pooling_2d
from chainermn_lite.functions import split_features
from chainermn_lite.functions import split_tiles
from chainermn_lite.links import HaloConvolution2D
from chainermn_lite.links import VecparLinear
from chainermn_lite.parallel import split_halo_data_grid

MODES = ('datapar', 'vecpar', 'halopar', 'halodatapar')
CONV_CHANNELS = (1, 8, 16)
HIDDEN, CLASSES, IMAGE = 64, 10, 16


def load_digits():
    """(images, labels): float32 NCHW 16x16 digits, int32 labels.

    The 8x8 images are upsampled bilinearly, plus a fixed faint jitter:
    pixel-replicated images would give max pooling exact ties, whose
    winner (and so the gradient) hangs on float rounding that differs
    between a whole batch and its micro-batches."""
    from sklearn.datasets import load_digits as sklearn_digits
    digits = sklearn_digits()
    small = digits.images.astype(np.float64) / 16.0
    # Linear interpolation as a (16, 8) matrix, applied to rows and cols.
    spread = np.linspace(0, 7, IMAGE)[:, None] - np.arange(8)[None, :]
    upsample = np.clip(1 - np.abs(spread), 0, None)
    images = upsample @ small @ upsample.T
    images += np.random.RandomState(1234).normal(0, 0.01, images.shape)
    return (images[:, None].astype(np.float32),
            digits.target.astype(np.int32))


def whole_weights(seed):
    """The whole network's weights, drawn from RandomState(seed).

    Every rank draws the same arrays: NumPy's global RNG is shared by
    simulated ranks, so Chainer's own initializers are not used."""
    rng = np.random.RandomState(seed)
    weights = {}
    for i in range(2):
        cin, cout = CONV_CHANNELS[i], CONV_CHANNELS[i + 1]
        weights['conv{}'.format(i)] = rng.normal(
            0, np.sqrt(1.0 / (cin * 9)), (cout, cin, 3, 3))
    flat = CONV_CHANNELS[-1] * (IMAGE // 4) ** 2
    weights['fc0'] = rng.normal(0, np.sqrt(1.0 / flat), (HIDDEN, flat))
    weights['fc1'] = rng.normal(0, np.sqrt(1.0 / HIDDEN), (CLASSES, HIDDEN))
    return {k: v.astype(np.float32) for k, v in weights.items()}


class Convnet(chainer.Chain):
    """The network; ``halo`` = (comm, grid) tiles the convolutions,
    ``vec_comm`` splits the fully connected layers by features."""

    def __init__(self, weights, halo=None, vec_comm=None):
        super().__init__()
        self.halo, self.vec_comm = halo, vec_comm
        with self.init_scope():
            self.conv = chainer.ChainList(*[
                self._conv(i, weights['conv{}'.format(i)])
                for i in range(2)])
            self.fc = chainer.ChainList(*[
                self._linear(weights['fc{}'.format(i)]) for i in range(2)])

    def _conv(self, i, W):
        cin, cout = CONV_CHANNELS[i], CONV_CHANNELS[i + 1]
        if self.halo is None:
            return L.Convolution2D(cin, cout, 3, pad=1, initialW=W)
        comm, grid = self.halo
        return HaloConvolution2D(comm, grid, cin, cout, 3, pad=1,
                                 initialW=W)

    def _linear(self, W):
        out_size, in_size = W.shape
        if self.vec_comm is None:
            return L.Linear(in_size, out_size, initialW=W)
        return VecparLinear(self.vec_comm, in_size, out_size, initialW=W)

    def forward(self, x):
        """forward(x): class scores of the whole batch ``x``."""
        h = x
        if self.halo is not None:
            comm, grid = self.halo
            h = split_tiles(h, comm, grid)
        for conv in self.conv:
            h = F.relu(conv(h))
            if self.halo is None:
                h = F.max_pooling_2d(h, 2)
            else:
                h = halo_max_pooling_2d(h, comm, grid, 2)
        if self.halo is not None:
            h = gather_tiles(h, comm, grid)
        h = F.reshape(h, (h.shape[0], -1))
        if self.vec_comm is not None:
            h = split_features(h, self.vec_comm)
        h = self.fc[1](F.relu(self.fc[0](h)))
        if self.vec_comm is not None:
            h = gather_features(h, self.vec_comm)
        return h


def near_square_grid(size):
    """(rows, cols) with rows * cols == size, as square as possible."""
    rows = max(r for r in range(1, int(size ** 0.5) + 1) if size % r == 0)
    return rows, size // rows


def build(mode, comm, weights, replicas):
    """(model, data_comm or None, replica index, replicas)."""
    if mode == 'datapar':
        return Convnet(weights), comm, comm.rank, comm.size
    if mode == 'vecpar':
        return Convnet(weights, vec_comm=comm), None, 0, 1
    if mode == 'halopar':
        grid = near_square_grid(comm.size)
        return Convnet(weights, (comm, grid), comm), None, 0, 1
    if comm.size % replicas:
        raise ValueError('--data-replicas {} does not divide {} ranks'
                         .format(replicas, comm.size))
    grid = near_square_grid(comm.size // replicas)
    spatial, data = split_halo_data_grid(comm, (replicas,) + grid)
    return (Convnet(weights, (spatial, grid), spatial), data,
            comm.rank // (grid[0] * grid[1]), replicas)


def batches(count, batch, steps, seed):
    """Indices of each global batch: the same on every rank."""
    rng = np.random.RandomState(seed + 1)
    order = np.concatenate([rng.permutation(count)
                            for _ in range(steps * batch // count + 1)])
    return [order[i * batch:(i + 1) * batch] for i in range(steps)]


def train(model, data_comm, replica, replicas, args):
    """The loss of each global batch (mean over the replicas)."""
    images, labels = load_digits()
    optimizer = chainer.optimizers.MomentumSGD(args.lr)
    if data_comm is not None:
        optimizer = chainermn_lite.create_multi_node_optimizer(
            optimizer, data_comm)
    optimizer.setup(model)
    if data_comm is not None:
        # The multi-node optimizer's first update only broadcasts rank 0's
        # weights; take it now, so that every update below is a step.
        optimizer.update()
    micro = args.batch // replicas
    curve = []
    for index in batches(len(labels), args.batch, args.steps, args.seed):
        index = index[replica * micro:(replica + 1) * micro]
        loss = F.softmax_cross_entropy(model(images[index]), labels[index])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        value = float(loss.array)
        if data_comm is not None:
            value = data_comm.allreduce_obj(value) / replicas
        curve.append(value)
    return curve


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--dist-mode', choices=MODES, default='halopar')
    parser.add_argument('--data-replicas', type=int, default=2,
                        help='halodatapar: number of data replicas')
    parser.add_argument('--communicator', default='naive')
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--reference', action='store_true',
                        help='rank 0 also trains the one-process network '
                             'and prints the largest loss difference')
    args = parser.parse_args()
    comm = chainermn_lite.create_communicator(args.communicator)
    replicas = args.data_replicas if args.dist_mode == 'halodatapar' else 1
    if args.dist_mode == 'datapar':
        replicas = comm.size
    if args.batch % replicas:
        raise ValueError('--batch {} does not split over {} data replicas'
                         .format(args.batch, replicas))
    weights = whole_weights(args.seed)
    model, data_comm, replica, replicas = build(args.dist_mode, comm,
                                                weights, replicas)
    curve = train(model, data_comm, replica, replicas, args)
    if comm.rank != 0:
        return
    print('{} on {} ranks: loss curve {}'.format(
        args.dist_mode, comm.size, ' '.join('{:.6f}'.format(v)
                                            for v in curve)))
    if args.reference:
        plain = train(Convnet(weights), None, 0, 1, args)
        diff = max(abs(a - b) for a, b in zip(curve, plain))
        print('one-process loss curve {}'.format(
            ' '.join('{:.6f}'.format(v) for v in plain)))
        print('max |loss - one-process loss| = {:.3g} ({})'.format(
            diff, 'equal to 1e-4' if diff <= 1e-4 else 'DIFFERENT'))
        if diff > 1e-4:
            raise SystemExit(1)


if __name__ == '__main__':
    main()
