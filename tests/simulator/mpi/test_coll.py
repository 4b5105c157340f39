"""simulator.mpi.coll: what a deadlock report says of collectives."""
import pytest

import simulator
from simulator.errors import DeadlockError

# Simulated only: the program is erroneous. Under mpiexec the allreduce
# order hangs, and the bcast order gets through on Open MPI's eager
# broadcast of a small object (checked by hand, 2026-11-28).
ERRONEOUS = 'collectives in different orders: mpiexec hangs or gets through'


@pytest.mark.simulator_only(ERRONEOUS)
@pytest.mark.parametrize('op', ['bcast', 'allreduce'])
def test_collectives_called_in_different_orders_are_named_in_the_hint(op):
    def body(comm):
        other = comm.Dup()
        first, second = (comm, other) if comm.rank == 0 else (other, comm)
        for c in (first, second):
            if op == 'bcast':
                c.bcast(c.rank, root=0)
            else:
                c.allreduce(1)

    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    text = str(info.value)
    assert 'hint: rank 0 in {0} on MPI_COMM_WORLD; rank 1 in {0} on ' \
        'MPI_COMM_WORLD.Dup#1: the ranks call collectives on these ' \
        'communicators in different orders'.format(op) in text, text


@pytest.mark.simulator_only(ERRONEOUS)
def test_a_collective_one_rank_skips_is_not_called_an_order():
    def body(comm):
        if comm.rank == 0:
            comm.Barrier()
        else:
            comm.recv(source=0)

    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    assert 'different orders' not in str(info.value)
