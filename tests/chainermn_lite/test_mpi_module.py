"""``_mpi.mpi_module_of``: the MPI module a communicator's class belongs
to, told by the class (the simulator's classes bear mpi4py.MPI's names,
so ``type(comm).__module__`` cannot tell them from mpi4py's)."""
import sys
import types

import pytest

from chainermn_lite import _mpi
from chainermn_lite.testing import counting


@pytest.mark.mpi(sizes=(1, 2))
def test_the_module_holds_the_communicators_class(mpi_comm, MPI):
    module = _mpi.mpi_module_of(mpi_comm)
    assert getattr(module, type(mpi_comm).__name__) is type(mpi_comm)
    assert module.SUM is MPI.SUM and module.COMM_WORLD is MPI.COMM_WORLD

    class Mine(type(mpi_comm)):
        def extra(self):
            return 1
    # a program's subclass belongs to its base's module
    assert _mpi.mpi_module_of(Mine(mpi_comm)) is module
    # the counting wrapper passes for the communicator's module
    assert _mpi.mpi_module_of(counting(mpi_comm)) is module


def test_a_class_written_by_hand_names_its_module(monkeypatch):
    module = types.ModuleType('hand_mpi')
    monkeypatch.setitem(sys.modules, 'hand_mpi', module)
    comm = type('Comm', (), {'__module__': 'hand_mpi'})()
    assert _mpi.mpi_module_of(comm) is module
