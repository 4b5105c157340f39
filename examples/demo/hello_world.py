"""A 4-rank tour of the MPI subset: split, point-to-point, a collective.

Runs unmodified both ways::

    python -m simulator -n 4 --nodes 2 examples/demo/hello_world.py
    mpiexec -n 4 python examples/demo/hello_world.py
"""
import numpy as np
from mpi4py import MPI


def main():
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()

    # Ranks that share a host form one intra-node communicator.
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    print('rank {}/{} on {}: intra-node rank {}/{}'.format(
        rank, size, MPI.Get_processor_name(), node.Get_rank(),
        node.Get_size()))

    # Even and odd ranks split into two groups, ordered by world rank.
    half = world.Split(color=rank % 2, key=rank)

    # A ring: everyone passes its rank to the right, receives from the left.
    right, left = (rank + 1) % size, (rank - 1) % size
    got = world.sendrecv(rank, dest=right, source=left)
    print('rank {}: received {} from rank {}'.format(rank, got, left))

    # A buffer collective inside each half.
    total = np.zeros(3, dtype=np.float64)
    half.Allreduce(np.full(3, rank, dtype=np.float64), total, op=MPI.SUM)
    print('rank {}: sum of ranks in group {} = {}'.format(
        rank, rank % 2, total[0]))

    world.Barrier()
    if rank == 0:
        print('done: {} ranks split, exchanged and reduced'.format(size))
    half.Free()
    node.Free()


if __name__ == '__main__':
    main()
