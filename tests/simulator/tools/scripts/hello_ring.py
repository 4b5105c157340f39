"""An unmodified mpi4py script: ring p2p, a collective and a Split."""
from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    left, right = (rank - 1) % size, (rank + 1) % size
    got = comm.sendrecv({'from': rank}, dest=right, source=left)
    total = comm.allreduce(rank, op=MPI.SUM)
    half = comm.Split(rank % 2, rank)
    print('OUT rank={} size={} got_from={} total={} half_rank={} '
          'half_size={}'.format(rank, size, got['from'], total,
                                half.Get_rank(), half.Get_size()),
          flush=True)
    half.Free()


if __name__ == '__main__':
    main()
