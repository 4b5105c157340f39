"""A rank's POSIX record locks shut the other ranks out, as a process's
shut other processes out (simulator.engine.rank_locks)."""
import fcntl
import os
import struct

import pytest


def _open_shared(comm, folder):
    """One file every rank opens on its own (under mpiexec, a test of
    fewer ranks than the job uses the first rank's folder)."""
    path = os.path.join(comm.bcast(folder), 'lockfile')
    if comm.rank == 0:
        open(path, 'w').close()
    comm.Barrier()
    return open(path, 'r+')


@pytest.mark.mpi(sizes=(2, 3))
def test_a_record_lock_held_by_one_rank_is_busy_for_the_others(
        mpi_comm, tmp_path):
    shared_file = _open_shared(mpi_comm, str(tmp_path))
    if mpi_comm.rank == 0:
        fcntl.lockf(shared_file, fcntl.LOCK_EX)
    mpi_comm.Barrier()
    busy = None
    if mpi_comm.rank != 0:
        try:
            fcntl.lockf(shared_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            busy = False
        except OSError:
            busy = True
    mpi_comm.Barrier()
    if mpi_comm.rank == 0:
        fcntl.lockf(shared_file, fcntl.LOCK_UN)
    mpi_comm.Barrier()
    if mpi_comm.rank == 1:      # free now: taken and given back
        fcntl.lockf(shared_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(shared_file, fcntl.LOCK_UN)
    shared_file.close()
    assert mpi_comm.allgather(busy) == [None] + [True] * (mpi_comm.size - 1)


@pytest.mark.mpi(sizes=(2,))
def test_fcntl_record_locks_conflict_between_ranks(mpi_comm, tmp_path):
    shared_file = _open_shared(mpi_comm, str(tmp_path))
    flock = 'hhqqi4x'
    if mpi_comm.rank == 0:
        fcntl.fcntl(shared_file, fcntl.F_SETLK,
                    struct.pack(flock, fcntl.F_WRLCK, 0, 0, 10, 0))
    mpi_comm.Barrier()
    if mpi_comm.rank == 1:
        with pytest.raises(OSError):
            fcntl.fcntl(shared_file, fcntl.F_SETLK,
                        struct.pack(flock, fcntl.F_WRLCK, 0, 5, 1, 0))
        # bytes beyond the lock are free
        fcntl.fcntl(shared_file, fcntl.F_SETLK,
                    struct.pack(flock, fcntl.F_WRLCK, 0, 20, 1, 0))
    mpi_comm.Barrier()
    shared_file.close()
