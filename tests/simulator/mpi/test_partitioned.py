"""Partitioned point-to-point (``Psend_init``/``Precv_init``, ``Pready*``,
``Parrived``) as Open MPI 5 gives it: partitions arrive one by one,
rounds repeat, the data lands whole.

The multi-rank tests run in-process on the simulator and under
``mpiexec`` with the same assertions; the errors Open MPI does not check
(it crashes on a partition out of range) are the simulator's alone.
"""
import os

import numpy as np
import pytest

SIZES = (1, 2, 3)


@pytest.fixture(scope='module', autouse=True)
def _partitioned_ready_everywhere():
    """Open MPI 5.0 sets its partitioned component up at the first use,
    collectively over all processes: under mpiexec every process makes
    that first use here (as mpi4py's own test module does at import),
    not only the ranks of a smaller test world."""
    if 'OMPI_COMM_WORLD_SIZE' not in os.environ:
        return
    from mpi4py import MPI
    sreq = MPI.COMM_SELF.Psend_init(bytearray(1), 1, 0)
    rreq = MPI.COMM_SELF.Precv_init(bytearray(1), 1, 0)
    sreq.Start()
    rreq.Start()
    sreq.Pready(0)
    rreq.Wait()
    sreq.Wait()
    sreq.Free()
    rreq.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_partitions_arrive_one_by_one_around_a_ring(mpi_comm, MPI):
    size, rank = mpi_comm.size, mpi_comm.rank
    dest, source = (rank + 1) % size, (rank - 1) % size
    parts = 3
    send = np.zeros(2 * parts, 'i')
    recv = np.full(2 * parts, -1, 'i')
    sreq = mpi_comm.Psend_init(send, parts, dest, tag=7)
    rreq = mpi_comm.Precv_init(recv, parts, source, tag=7)
    for round_ in range(3):
        send[:] = 100 * rank + 10 * round_ + np.arange(2 * parts)
        rreq.Start()
        assert not any(rreq.Parrived(i) for i in range(parts))
        mpi_comm.Barrier()
        sreq.Start()
        sreq.Pready(0)
        mpi_comm.Barrier()
        while not rreq.Parrived(0):
            pass
        # partition 0 is in the buffer already; the others are not sent
        assert recv[:2].tolist() == [100 * source + 10 * round_,
                                     100 * source + 10 * round_ + 1]
        assert not rreq.Parrived(2)
        mpi_comm.Barrier()
        sreq.Pready_list([2, 1])
        rreq.Wait()
        sreq.Wait()
        assert recv.tolist() == (100 * source + 10 * round_ +
                                 np.arange(2 * parts)).tolist()
        mpi_comm.Barrier()
    for req in (sreq, rreq):
        assert req != MPI.REQUEST_NULL
        req.Free()
        assert req == MPI.REQUEST_NULL


@pytest.mark.mpi(sizes=SIZES)
def test_pready_range_and_different_partitionings(mpi_comm, MPI):
    size, rank = mpi_comm.size, mpi_comm.rank
    dest, source = (rank + 1) % size, (rank - 1) % size
    send = np.arange(8.0) + rank
    recv = np.zeros(8)
    sreq = mpi_comm.Psend_init(send, 4, dest)
    rreq = mpi_comm.Precv_init(recv, 2, source)
    rreq.Start()
    sreq.Start()
    sreq.Pready_range(0, 3)
    MPI.Request.Waitall([sreq, rreq])
    assert recv.tolist() == (np.arange(8.0) + source).tolist()
    sreq.Free()
    rreq.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_proc_null_partners_complete_at_once(mpi_comm, MPI):
    recv = np.full(4, -1, 'i')
    sreq = mpi_comm.Psend_init(np.ones(4, 'i'), 2, MPI.PROC_NULL)
    rreq = mpi_comm.Precv_init(recv, 2, MPI.PROC_NULL)
    rreq.Start()
    sreq.Start()
    sreq.Pready_list([0, 1])
    assert rreq.Parrived(1)
    sreq.Wait()
    status = MPI.Status()
    rreq.Wait(status)
    assert status.source == MPI.PROC_NULL and recv.tolist() == [-1] * 4
    sreq.Free()
    rreq.Free()


@pytest.mark.simulator_only('Open MPI 5.0 does not check partition '
                            'numbers (it crashes)')
def test_bad_partitions_name_the_value():
    import simulator
    from simulator import mpi as MPI

    def body(comm):
        sreq = comm.Psend_init(np.zeros(4), 2, 0)
        rreq = comm.Precv_init(np.zeros(4), 2, 0)
        errors = []
        with pytest.raises(MPI.Exception, match='Start it first'):
            sreq.Pready(0)
        rreq.Start()
        sreq.Start()
        for call, args in ((sreq.Pready, (2,)), (sreq.Pready, (-1,)),
                           (rreq.Parrived, (5,)), (rreq.Pready, (0,)),
                           (sreq.Parrived, (0,))):
            try:
                call(*args)
            except MPI.Exception as error:
                # the simulator's detail is a note (str is mpi4py's)
                errors.append((error.Get_error_class(),
                               '; '.join(error.__notes__)))
        sreq.Pready_list([0, 1])
        with pytest.raises(MPI.Exception, match='partition 1 is already'):
            sreq.Pready(1)
        rreq.Wait()
        sreq.Wait()
        with pytest.raises(ValueError, match='5 elements'):
            comm.Psend_init(np.zeros(5), 2, 0)
        with pytest.raises(MPI.Exception, match='not partitioned'):
            comm.Send_init(np.zeros(1), 0).Pready(0)
        return errors
    errors = simulator.run(body, 1)[0]
    assert [c for c, _ in errors] == [MPI.ERR_ARG, MPI.ERR_ARG, MPI.ERR_ARG,
                                      MPI.ERR_REQUEST, MPI.ERR_REQUEST]
    assert 'partition 2 is not in 0..1' in errors[0][1]
    assert 'partition 5' in errors[2][1]


@pytest.mark.simulator_only('a deadlock report is the simulator\'s')
def test_waiting_for_partitions_never_marked_is_a_deadlock():
    import simulator
    from simulator.errors import DeadlockError

    def body(comm):
        rreq = comm.Precv_init(np.zeros(4), 2, 0)
        sreq = comm.Psend_init(np.zeros(4), 2, 0)
        rreq.Start()
        sreq.Start()
        sreq.Pready(0)
        rreq.Wait()
    with pytest.raises(DeadlockError, match='Precv_init'):
        simulator.run(body, 1)
