"""simulator: an in-process MPI world, every rank a thread."""
