"""The simulator's objects bear mpi4py.MPI's names (simulator.mpi.naming).

What a launched program prints of them is compared with mpiexec's in
tests/simulator/tools/test_launcher_scripts.py (scripts/names_probe.py).
These tests are in-process only: they check what that renaming must not
break inside the simulator (pickles made where no stand-in mpi4py.MPI
holds the objects, its own messages); chainermn_lite's module lookup
is tested in tests/chainermn_lite/test_mpi_module.py.
"""
import pickle
import sys
import types

import pytest

import simulator
from simulator import mpi
from simulator.mpi.naming import describe

pytestmark = pytest.mark.simulator_only(
    'the simulator\'s own module, messages and pickles')


def _predefined():
    return [mpi.INT, mpi.SUM, mpi.COMM_NULL, mpi.IN_PLACE, mpi.REQUEST_NULL,
            mpi.GROUP_EMPTY, mpi.INFO_NULL, mpi.ERRORS_RETURN,
            mpi.MESSAGE_NULL, mpi.WIN_NULL, mpi.DATATYPE_NULL]


def _copies():
    return [mpi.Datatype(mpi.INT), mpi.Status(), mpi.Exception(mpi.ERR_RANK),
            mpi.Info.Create(), mpi.INT.Create_vector(2, 1, 3)]


@pytest.mark.parametrize('foreign', [False, True])
def test_pickles_made_in_process_round_trip(monkeypatch, foreign):
    # No stand-in mpi4py.MPI: none at all, or another one (the real
    # mpi4py's may be loaded in the same process).
    if foreign:
        other = types.ModuleType('mpi4py.MPI')
        other.INT = object()
        other.Datatype = type('Datatype', (), {})
        monkeypatch.setitem(sys.modules, 'mpi4py.MPI', other)
    else:
        monkeypatch.delitem(sys.modules, 'mpi4py.MPI', raising=False)
    for obj in _predefined():
        assert pickle.loads(pickle.dumps(obj)) is obj, describe(obj)
    for obj in _copies():
        copy = pickle.loads(pickle.dumps(obj))
        assert type(copy) is type(obj)
    assert pickle.loads(pickle.dumps(mpi.Exception(6))).args == (6,)


def test_classes_bear_mpi4pys_names_and_the_simulator_still_tells_them():
    from simulator.mpi.naming import is_ours
    assert mpi.Intracomm.__module__ == 'mpi4py.MPI'
    assert mpi.Comm.Send.__qualname__ == 'Comm.Send'
    assert mpi.Datatype.Pack.__qualname__ == 'Datatype.Pack'
    assert mpi.Get_error_class.__name__ == 'Get_error_class'
    assert is_ours(mpi.Intracomm) and is_ours(mpi.Get_error_class)
    mine = type('Intracomm', (mpi.Intracomm,), {'__module__': 'mpi4py.MPI'})
    assert not is_ours(mine)
    assert type(mpi.COMM_NULL) is mpi.Comm     # as mpi4py's
    assert repr(mpi.INT).startswith('<mpi4py.MPI.Datatype object at 0x')


def test_the_simulators_messages_keep_its_descriptions():
    def body(comm):
        assert describe(comm) == '<simulator.mpi.Comm MPI_COMM_WORLD rank ' \
            '{}/2>'.format(comm.rank)
        assert repr(comm).startswith('<mpi4py.MPI.Intracomm object at ')
        assert describe(mpi.INT) == '<Datatype MPI_INT>'
        assert describe(mpi.SUM) == '<Op MPI_SUM>'
        assert describe(42) == '42'
        dup = comm.Dup()
        with pytest.raises(ValueError, match='MPI_COMM_WORLD.* rank'):
            pickle.dumps(dup)
        dup.Free()
    simulator.run(body, 2)

