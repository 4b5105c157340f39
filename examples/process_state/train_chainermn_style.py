"""A ChainerMN-style script that keeps process state: it reads sys.argv,
seeds NumPy and ``random``, imports a sibling module with module-level
state, writes os.environ and Chainer's global config, then trains.

    python -m simulator -n 3 -m chainermn_lite.compat \
        examples/process_state/train_chainermn_style.py --epoch 2
    mpiexec -n 3 python -m chainermn_lite.compat \
        examples/process_state/train_chainermn_style.py --epoch 2

Each rank prints ``OUT rank=R ...`` lines describing its process state;
both commands print the same lines. ``--exit-rank R --exit-status S``
makes rank R call ``sys.exit(S)`` in the middle of training: the job ends
with status S instead of hanging.
"""
import argparse
import os
import random
import sys
import time

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np

import chainermn
import tiny_data


class MLP(chainer.Chain):
    """A two-layer perceptron."""

    def __init__(self, units=16):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, units)
            self.l2 = L.Linear(units, 2)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def report_state(comm):
    """Print what a process keeps for itself, after rank 0 edits some."""
    rank = comm.rank
    if rank == 0:
        sys.argv.append('--edited-by-rank-0')
        chainer.global_config.example_flag = 'set by rank 0'
    os.environ['EXAMPLE_RANK'] = str(rank)
    comm.mpi_comm.Barrier()
    np.random.seed(1234)
    numpy_draw = np.round(np.random.rand(3), 6).tolist()
    random.seed(99)
    python_draw = round(random.random(), 6)
    comm.mpi_comm.Barrier()
    for line in ('argv={}'.format(sys.argv[1:]),
                 'numpy={} random={}'.format(numpy_draw, python_draw),
                 'tiny_data.loads={}'.format(tiny_data.loads),
                 'environ={}'.format(os.environ['EXAMPLE_RANK']),
                 'global_config={!r}'.format(getattr(
                     chainer.global_config, 'example_flag', None))):
        print('OUT rank={} {}'.format(rank, line), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--epoch', '-e', type=int, default=2)
    parser.add_argument('--batchsize', '-b', type=int, default=8)
    parser.add_argument('--exit-rank', type=int, default=None)
    parser.add_argument('--exit-status', type=int, default=3)
    args = parser.parse_args()

    comm = chainermn.create_communicator('naive')
    data = tiny_data.make() if comm.rank == 0 else None
    data = chainermn.scatter_dataset(data, comm, shuffle=True, seed=0)
    report_state(comm)

    model = L.Classifier(MLP())
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.SGD(lr=0.1), comm)
    optimizer.setup(model)
    step = 0
    for _ in range(args.epoch):
        order = np.random.permutation(len(data))
        for start in range(0, len(order) - args.batchsize + 1,
                           args.batchsize):
            batch = [data[i] for i in order[start:start + args.batchsize]]
            x = np.stack([b[0] for b in batch])
            t = np.array([b[1] for b in batch], dtype=np.int32)
            if comm.rank == args.exit_rank and step == 2:
                print('OUT rank={} exits at {:.3f}'.format(
                    comm.rank, time.time()), flush=True)
                sys.exit(args.exit_status)
            optimizer.update(model, x, t)
            step += 1
    print('OUT rank={} trained steps={}'.format(comm.rank, step), flush=True)


if __name__ == '__main__':
    main()
