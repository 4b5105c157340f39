"""Conformance: persistent collectives (``Allreduce_init`` ... with
``Start``), as mpi4py on Open MPI runs them. Every test runs in-process on
the simulator and under ``mpiexec`` with the same assertions."""
import numpy as np
import pytest

SIZES = (1, 2, 3, 4)


@pytest.mark.mpi(sizes=SIZES)
def test_persistent_collectives_restart_with_new_contents(mpi_comm, MPI):
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    send, total = np.zeros(2, 'i8'), np.zeros(2, 'i8')
    block = np.zeros(1, 'i4')
    gathered = np.zeros(size, 'i4')
    data = np.zeros(3, 'f8')
    requests = [mpi_comm.Allreduce_init(send, total, op=MPI.SUM),
                mpi_comm.Allgather_init(block, gathered),
                mpi_comm.Bcast_init(data, root=size - 1),
                mpi_comm.Barrier_init()]
    assert all(isinstance(q, MPI.Prequest) for q in requests)
    for round_ in range(3):
        send[:] = [rank + round_, 1]
        block[0] = 10 * rank + round_
        if rank == size - 1:
            data[:] = round_
        MPI.Prequest.Startall(requests)
        for q in reversed(requests) if rank % 2 else requests:
            q.Wait()
        assert total.tolist() == [size * round_ + size * (size - 1) // 2,
                                  size]
        assert gathered.tolist() == [10 * r + round_ for r in range(size)]
        assert data.tolist() == [round_] * 3
        # Inactive between rounds, not null.
        assert all(q != MPI.REQUEST_NULL for q in requests)
    for q in requests:
        q.Free()
        assert q == MPI.REQUEST_NULL


@pytest.mark.mpi(sizes=SIZES)
def test_persistent_reductions_sum_like_the_nonblocking_ones(mpi_comm, MPI):
    # Open MPI serves both from coll/libnbc with the same schedules.
    rank = mpi_comm.Get_rank()
    rng = np.random.RandomState(rank + 3)
    send = rng.standard_normal(7) * 10.0 ** rng.randint(-6, 7, 7)
    a, b, c, d = (np.zeros(7) for _ in range(4))
    for q in (mpi_comm.Reduce_init(send, a, op=MPI.SUM, root=0),
              mpi_comm.Scan_init(send, c, op=MPI.SUM)):
        q.Start()
        q.Wait()
        q.Free()
    mpi_comm.Ireduce(send, b, op=MPI.SUM, root=0).Wait()
    mpi_comm.Iscan(send, d, op=MPI.SUM).Wait()
    if rank == 0:
        assert a.tobytes() == b.tobytes()
    assert c.tobytes() == d.tobytes()
