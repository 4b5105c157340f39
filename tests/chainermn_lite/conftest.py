"""Fixtures of the chainermn_lite tests.

A multi-rank test cannot receive a ready communicator from a fixture: on
the simulator the ``mpi_comm`` fixture is only the world's description and
the test body runs once per rank thread, each with its own ``mpi_comm``
(see ``simulator.pytest_plugin``). So the fixture hands out the function
that makes one, to be called in the body::

    @pytest.mark.mpi(sizes=(1, 2))
    def test_something(mpi_comm, make_communicator):
        comm = make_communicator(mpi_comm)          # 'naive'

    @pytest.mark.mpi(sizes=(1, 2))
    @pytest.mark.parametrize('communicator_name', ('naive', 'flat'))
    def test_each_kind(mpi_comm, make_communicator):
        comm = make_communicator(mpi_comm)          # one run per name
"""
import pytest

import chainermn_lite
from chainermn_lite.testing import counting


@pytest.fixture
def communicator_name():
    """The communicator kind ``make_communicator`` builds by default;
    parametrise a test over ``communicator_name`` to run it per kind."""
    return 'naive'


@pytest.fixture
def make_communicator(communicator_name):
    """``make_communicator(mpi_comm, name=None, **kwargs)``: a
    chainermn_lite communicator over this rank's ``mpi_comm``, of kind
    ``name`` (default: the ``communicator_name`` fixture); ``kwargs`` go to
    ``create_communicator``."""

    def make(mpi_comm, name=None, **kwargs):
        return chainermn_lite.create_communicator(
            name or communicator_name, mpi_comm=mpi_comm, **kwargs)

    return make


@pytest.fixture
def counting_comm():
    """``counting_comm(mpi_comm)``: ``mpi_comm`` wrapped so that a test can
    count the messages a communicator over it sends (``.sends``; see
    ``chainermn_lite.testing.counting``)."""
    return counting
