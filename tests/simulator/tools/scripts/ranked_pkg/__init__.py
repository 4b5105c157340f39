"""A package run with -m: python imports it, once per process, before its
__main__; its state is each rank's own."""
from mpi4py import MPI

runs = ['package imported by rank {}'.format(MPI.COMM_WORLD.Get_rank())]
