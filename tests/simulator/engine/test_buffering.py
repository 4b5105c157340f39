"""simulator.engine.buffering: an exchange that gets through only because
small sends are buffered is named (a warning: Open MPI buffers them too,
and the run goes on), while a safe one is not."""
import numpy as np
import pytest

from simulator.errors import BufferedExchangeWarning

pytestmark = pytest.mark.simulator_only(
    'Open MPI buffers these sends and says nothing: the warning is the '
    "simulator's own, the runs' results are mpiexec's")


def _neighbours(comm):
    return (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size


@pytest.mark.parametrize('size', [1, 2, 3, 4])
def test_each_rank_sending_before_it_receives_is_named(warnings_of, size):
    got = []

    def body(comm):
        right, left = _neighbours(comm)
        comm.Send(np.full(2, comm.rank, 'i'), dest=right)
        buf = np.empty(2, 'i')
        comm.Recv(buf, source=left)
        got.append((comm.rank, int(buf[0])))

    messages = warnings_of(body, BufferedExchangeWarning, size)
    assert sorted(got) == [(r, (r - 1) % size) for r in range(size)]
    assert len(messages) == 1, messages
    if size == 1:
        assert messages[0].startswith('rank 0 sends to itself (a blocking '
                                      'standard send) before receiving')
    else:
        assert 'each send to the next (a blocking standard send) before ' \
            'receiving' in messages[0]
    for rank in range(size):
        assert 'rank {}: Send(peer={}, tag=0, comm=MPI_COMM_WORLD) at {}:' \
            .format(rank, (rank + 1) % size, __file__) in messages[0]
    assert 'Open MPI does so up to its eager limit' in messages[0]


def test_objects_sent_head_to_head_are_named_too(warnings_of):
    def body(comm):
        right, left = _neighbours(comm)
        comm.send({'from': comm.rank}, dest=right, tag=7)
        assert comm.recv(source=left, tag=7) == {'from': left}

    messages = warnings_of(body, BufferedExchangeWarning)
    assert len(messages) == 1 and 'rank 1: send(peer=0, tag=7' in \
        messages[0]


@pytest.mark.parametrize('size', [2, 4])
def test_safe_exchanges_are_not_named(warnings_of, size):
    def body(comm):
        right, left = _neighbours(comm)
        mine, buf = np.full(2, comm.rank, 'i'), np.empty(2, 'i')
        # the receive first
        request = comm.Irecv(buf, source=left)
        comm.Send(mine, dest=right)
        request.Wait()
        # even ranks send first, odd ones receive first
        if comm.rank % 2 == 0:
            comm.Send(mine, dest=right)
            comm.Recv(buf, source=left)
        else:
            comm.Recv(buf, source=left)
            comm.Send(mine, dest=right)
        comm.Sendrecv(mine, dest=right, recvbuf=buf, source=left)
        # a master hands out work and gathers the results
        if comm.rank == 0:
            for worker in range(1, comm.size):
                comm.send(worker, dest=worker)
            for _ in range(1, comm.size):
                comm.recv(source=-1)    # ANY_SOURCE
        else:
            comm.send(comm.recv(source=0), dest=0)
        comm.Barrier()

    assert warnings_of(body, BufferedExchangeWarning, size) == []
