"""simulator.mpi.finalization: MPI.Finalize() per rank. Under mpiexec a call
after Finalize aborts the whole job (exit status 14: compared in
tests/simulator/tools/test_launcher_scripts.py), so the errors are
checked in-process here."""
import pytest

import simulator
from simulator.errors import FinalizedError, RankFailedError
from simulator.mpi import finalization

pytestmark = pytest.mark.simulator_only(
    'under mpiexec a call after Finalize aborts the job running the tests')


def test_finalized_rank_answers_queries_only():
    def body(comm):
        from simulator import mpi
        before = mpi.Is_finalized()
        mpi.Finalize()
        return (before, mpi.Is_finalized(), mpi.Is_initialized(),
                mpi.Get_version(), mpi.Wtime() > 0)
    for got in simulator.run(body, 2):
        assert got == (False, True, True, (3, 1), True)


@pytest.mark.parametrize('call', ['Get_rank', 'Barrier', 'Dup', 'Finalize'])
def test_a_call_after_finalize_names_the_rank_and_both_lines(call):
    def body(comm):
        from simulator import mpi
        rank = comm.rank
        mpi.Finalize()                      # finalized here
        if rank == 1:
            if call == 'Finalize':
                mpi.Finalize()              # the call
            else:
                getattr(comm, call)()       # the call
    with pytest.raises(FinalizedError) as info:
        simulator.run(body, 2)
    text = str(info.value)
    lines = [n for n, line in enumerate(open(__file__), 1)
             if '# finalized here' in line or '# the call' in line]
    assert text.startswith('rank 1 {} at {}:'.format(
        'called Finalize again' if call == 'Finalize'
        else 'used MPI_COMM_WORLD', __file__))
    assert 'after MPI.Finalize() at {}:{}'.format(__file__, lines[0]) \
        in text
    assert 'exit status 14' in text
    assert info.value.errorcode == 14


def test_other_ranks_are_not_held_by_a_finalized_one():
    # Finalize does not wait: rank 0 finalizes and ends while rank 1
    # still talks to itself; then a rank waiting on a finalized one is
    # released with a report, not left hanging.
    def body(comm):
        from simulator import mpi
        if comm.rank == 0:
            mpi.Finalize()
            return 'done'
        comm.send(1, dest=1, tag=3)
        return comm.recv(source=1, tag=3)
    assert simulator.run(body, 2) == ['done', 1]

    def waits(comm):
        from simulator import mpi
        if comm.rank == 0:
            mpi.Finalize()
            comm.Barrier()      # raises: rank 1's Barrier is released
        else:
            comm.Barrier()
    with pytest.raises((FinalizedError, RankFailedError)):
        simulator.run(waits, 2)


def test_outside_a_rank_finalize_is_nothing():
    finalization.finalize()
    assert not finalization.is_finalized()
