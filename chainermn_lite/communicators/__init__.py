"""Communicators: ChainerMN's communicator API over any mpi4py-like comm."""
