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


class _Counting:
    """Every ``Send`` of the wrapped communicator, noted as (dest, tag,
    bytes) in ``sends``; everything else is the wrapped one's."""

    def __init__(self, mpi_comm):
        self._comm = mpi_comm
        self.sends = []

    def Send(self, buf, dest, tag=0):
        data = buf[0] if isinstance(buf, list) else buf
        self.sends.append((dest, tag, memoryview(data).nbytes))
        return self._comm.Send(buf, dest, tag)

    def __getattr__(self, name):
        return getattr(self._comm, name)


@pytest.fixture
def counting_comm():
    """``counting_comm(mpi_comm)``: ``mpi_comm`` wrapped so that a test can
    count the messages a communicator over it sends (``.sends``); the
    wrapper passes for a communicator of ``mpi_comm``'s own module."""

    def wrap(mpi_comm):
        cls = type('Counting', (_Counting,),
                   {'__module__': type(mpi_comm).__module__})
        return cls(mpi_comm)

    return wrap
