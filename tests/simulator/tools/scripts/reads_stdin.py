"""Ranks read their standard input (argv[1]: 'all', or 'others' than
rank 0), then ask input() for more; one OUT line each."""
import sys

from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
if sys.argv[1] == 'all' or rank != 0:
    data = sys.stdin.read()
    try:
        input()
        eof = False
    except EOFError:
        eof = True
    print('OUT rank={} read={!r} tty={} eof={}'.format(
        rank, data, sys.stdin.isatty(), eof))
