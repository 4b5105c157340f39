"""simulator.engine.rank_builtins: a function a rank puts in ``builtins``
is that rank's, as each process's own under mpiexec."""
import builtins
import io

import pytest


def _setup_for_distributed(is_master):
    """The training scripts' idiom: print on the master rank only, or
    with force=True."""
    builtin_print = builtins.print

    def print(*args, **kwargs):
        force = kwargs.pop('force', False)
        if is_master or force:
            builtin_print(*args, **kwargs)
    builtins.print = print
    return print


@pytest.mark.mpi(sizes=(1, 3))
def test_print_replaced_by_each_rank_is_its_own(mpi_comm):
    rank = mpi_comm.rank
    original = builtins.print
    out = io.StringIO()
    try:
        mine = _setup_for_distributed(rank == 0)
        mpi_comm.Barrier()      # every rank has replaced print
        seen = builtins.print
        print('plain', rank, file=out)
        print('forced', rank, file=out, force=True)
        mpi_comm.Barrier()
    finally:
        builtins.print = original
    assert seen is mine
    assert out.getvalue() == ('plain 0\nforced 0\n' if rank == 0 else
                              'forced {}\n'.format(rank))


@pytest.mark.simulator_only('checks the process keeps its own builtins')
def test_the_process_keeps_its_builtins_and_a_value_is_reported():
    import simulator
    from simulator.engine.shared_state import SharedStateWarning
    real_print = builtins.print

    def body(comm):
        builtins.print = lambda *args, **kwargs: None
        try:
            del builtins.simulator_test_flag
        except AttributeError:
            pass
        builtins.simulator_test_flag = comm.rank    # a value: shared
        return builtins.print is real_print
    try:
        with pytest.warns(SharedStateWarning, match='builtins.'
                          'simulator_test_flag = '):
            assert simulator.run(body, 2) == [False, False]
    finally:
        del builtins.simulator_test_flag
    assert builtins.print is real_print
    assert type(builtins).__name__ == 'module'
