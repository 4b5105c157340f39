"""The user's modules are executed once per rank, as once per process
(simulator.engine.modules); libraries stay shared. The mpi-marked tests
run the same body under mpiexec, where each rank is a real process.

``rank_state_pkg`` (next to this file) must be imported only inside test
bodies: imported before a run, outside the ranks, it would be shared."""
import importlib
import sys

import numpy as np
import pytest

import simulator
from simulator.engine import modules


@pytest.mark.mpi(sizes=(1, 3))
def test_module_globals_are_per_rank(mpi_comm):
    import rank_state_pkg
    assert rank_state_pkg.imports == 1
    before = len(rank_state_pkg.seen)
    mine = rank_state_pkg.note(mpi_comm.rank)
    # Each rank's list grew by its own entry only (one shared module
    # would hold every rank's).
    assert mine[before:] == [mpi_comm.rank]
    mpi_comm.Barrier()
    assert len(rank_state_pkg.seen) == before + 1


@pytest.mark.mpi(sizes=(2,))
def test_objects_of_user_classes_pickle_between_ranks(mpi_comm):
    from rank_state_pkg import shapes
    point = mpi_comm.bcast(shapes.Point(7) if mpi_comm.rank == 0 else None)
    assert type(point) is shapes.Point and point.x == 7
    # Rank 0 made one; the others made none (unpickling calls no __init__).
    assert shapes.made == (1 if mpi_comm.rank == 0 else 0)


@pytest.mark.mpi(sizes=(1, 2))
def test_submodule_imported_by_one_rank_is_run_by_each(mpi_comm):
    if mpi_comm.rank == 0:
        import rank_state_pkg.late
        assert rank_state_pkg.late.loads >= 1
    mpi_comm.Barrier()
    late = importlib.import_module('rank_state_pkg.late')
    before = late.loads
    late.loads += 1
    mpi_comm.Barrier()
    # One shared module would have counted every rank's increment.
    assert late.loads == before + 1


@pytest.mark.mpi(sizes=(1, 3))
def test_a_modules_docstring_repr_and_reload_are_a_processs(mpi_comm):
    from rank_state_pkg import late
    assert late.__doc__ == 'A submodule no other module imports.'
    assert repr(late) == "<module 'rank_state_pkg.late' from {!r}>".format(
        late.__file__)
    late.loads = 10 + mpi_comm.rank
    mpi_comm.Barrier()
    # Every rank reloads at once; each runs its own copy again.
    assert importlib.reload(late) is late
    assert late.loads == 1
    mpi_comm.Barrier()
    late.loads = 20 + mpi_comm.rank
    mpi_comm.Barrier()
    assert late.loads == 20 + mpi_comm.rank


@pytest.mark.mpi(sizes=(1, 2))
def test_a_modules_globals_named_like_sys_attributes_are_its_own(mpi_comm):
    # A module imported in a rank was made as type(sys)(name) and, with
    # sys's class answering path/argv/streams per rank, read as sys's.
    from rank_state_pkg import names
    import wave     # a library module imported by the rank
    assert (names.path, names.argv, names.stdout, names.excepthook) == (
        'data/', ['--mine'], 'a file name', None)
    assert not hasattr(wave, 'argv') and not hasattr(wave, 'excepthook')


def test_libraries_stay_shared_and_copies_die_with_the_world():
    def body(comm):
        import rank_state_pkg
        return rank_state_pkg, sys.modules['numpy'], rank_state_pkg.note(1)
    (a, numpy_a, seen_a), (b, numpy_b, seen_b) = simulator.run(body, 2)
    assert numpy_a is numpy_b is np
    assert seen_a == seen_b == [1]
    assert isinstance(sys.modules['rank_state_pkg'], modules.RankModule)
    # A new world is a new set of processes.
    assert simulator.run(lambda comm: __import__('rank_state_pkg').note(2),
                         1) == [[2]]


def test_registered_library_module_is_private(tmp_path, monkeypatch):
    (tmp_path / 'forced_private_mod.py').write_text('hits = []\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    modules.register_private_module('forced_private_mod')
    monkeypatch.setattr(modules, 'is_library_file', lambda path: True)
    try:
        def body(comm):
            import forced_private_mod
            forced_private_mod.hits.append(comm.rank)
            comm.Barrier()
            return list(forced_private_mod.hits)
        assert simulator.run(body, 2) == [[0], [1]]
    finally:
        modules._forced.discard('forced_private_mod')
        sys.modules.pop('forced_private_mod', None)
