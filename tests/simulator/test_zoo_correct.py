"""The zoo of correct programs: no check may fire on them.

Each program is valid MPI in any protocol, so it runs in-process at
several sizes in both eager and rendezvous send modes, and (through the
``mpi``-marked test at the end) under ``mpiexec`` on real MPI too.
"""
import numpy as np
import pytest

import simulator

SIZES = (1, 2, 3, 4, 8)
MODES = ('eager', 'rendezvous')


def _mpi_module(comm):
    # By class, not by name: the simulator's classes bear mpi4py.MPI's.
    from simulator import mpi
    if isinstance(comm, mpi.Comm):
        return mpi
    from mpi4py import MPI
    return MPI


def ring_exchange_with_sendrecv(comm):
    """Every rank passes its value around the full ring with Sendrecv."""
    rank, size = comm.Get_rank(), comm.Get_size()
    token = np.array([rank], dtype=np.int64)
    seen = [rank]
    for _ in range(size - 1):
        incoming = np.zeros(1, dtype=np.int64)
        comm.Sendrecv(token, dest=(rank + 1) % size, sendtag=0,
                      recvbuf=incoming, source=(rank - 1) % size, recvtag=0)
        token = incoming
        seen.append(int(token[0]))
    assert sorted(seen) == list(range(size))
    return seen


def symmetric_isend_irecv_waitall(comm):
    """All-pairs exchange posted non-blocking, completed by Waitall."""
    mpi = _mpi_module(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    inbox = np.full((size, 4), -1.0)
    requests = [comm.Irecv(inbox[peer], source=peer, tag=5)
                for peer in range(size)]
    outbox = np.array([[rank, peer, 0, 1] for peer in range(size)],
                      dtype=np.float64)
    requests += [comm.Isend(outbox[peer], dest=peer, tag=5)
                 for peer in range(size)]
    mpi.Request.Waitall(requests)
    for peer in range(size):
        np.testing.assert_array_equal(inbox[peer], [peer, rank, 0, 1])
    return inbox[:, 0].tolist()


def wildcard_gather_with_any_source(comm):
    """Rank 0 collects one object from every other rank in any order."""
    mpi = _mpi_module(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank != 0:
        comm.send(('hello', rank), dest=0, tag=rank)
        return None
    got = {}
    status = mpi.Status()
    for _ in range(size - 1):
        word, sender = comm.recv(source=mpi.ANY_SOURCE, tag=mpi.ANY_TAG,
                                 status=status)
        assert status.Get_source() == sender == status.Get_tag()
        got[sender] = word
    assert got == {r: 'hello' for r in range(1, size)}
    return sorted(got)


def fifo_pipeline(comm, messages=200):
    """A chain 0 -> 1 -> ... -> n-1 forwarding many messages in order."""
    rank, size = comm.Get_rank(), comm.Get_size()
    buf = np.zeros(2, dtype=np.int32)
    received = []
    for index in range(messages):
        if rank == 0:
            buf[:] = (index, 0)
        else:
            comm.Recv(buf, source=rank - 1, tag=11)
            received.append(int(buf[0]))
            buf[1] += 1
        if rank < size - 1:
            comm.Send(buf, dest=rank + 1, tag=11)
    if rank > 0:
        assert received == list(range(messages))
        assert buf[1] == rank
    return len(received)


def nested_split_communicators(comm):
    """Split twice; collectives and p2p on every level stay separate."""
    rank, size = comm.Get_rank(), comm.Get_size()
    outer = comm.Split(rank % 2, -rank)
    inner = outer.Split(outer.Get_rank() // 2, outer.Get_rank())
    dup = inner.Dup()
    try:
        outer_sum = outer.allreduce(rank)
        inner_members = inner.allgather(rank)
        assert outer_sum == sum(r for r in range(size) if r % 2 == rank % 2)
        assert rank in inner_members
        # A ring on the inner communicator and one on its Dup at once.
        right = (inner.Get_rank() + 1) % inner.Get_size()
        left = (inner.Get_rank() - 1) % inner.Get_size()
        a = inner.isend('inner', right, tag=0)
        b = dup.isend('dup', right, tag=0)
        assert dup.recv(source=left, tag=0) == 'dup'
        assert inner.recv(source=left, tag=0) == 'inner'
        a.wait()
        b.wait()
        inner.Barrier()
        outer.Barrier()
        return inner_members
    finally:
        dup.Free()
        inner.Free()
        outer.Free()


PROGRAMS = (ring_exchange_with_sendrecv, symmetric_isend_irecv_waitall,
            wildcard_gather_with_any_source, fifo_pipeline,
            nested_split_communicators)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('size', SIZES)
@pytest.mark.parametrize('program', PROGRAMS, ids=lambda p: p.__name__)
def test_correct_program_raises_nothing(program, size, mode):
    results = simulator.run(program, size, send_mode=mode, timeout=60)
    assert len(results) == size


def test_correct_programs_at_large_size_in_rendezvous():
    for program in PROGRAMS:
        results = simulator.run(program, 32, send_mode='rendezvous',
                                timeout=60)
        assert len(results) == 32


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('program', PROGRAMS, ids=lambda p: p.__name__)
def test_correct_program_on_either_world(mpi_comm, MPI, program):
    program(mpi_comm)
