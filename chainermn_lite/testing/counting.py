"""Count the messages a communicator sends: ``counting(mpi_comm)``.

The tests and the benchmarks that claim "one message per send" count
them with this wrapper, in both worlds: it passes for a communicator of
``mpi_comm``'s own module (``mpi4py.MPI`` or ``simulator.mpi``), notes
every ``Send`` as ``(dest, tag, bytes)`` in ``sends`` and forwards
everything else.
"""

from chainermn_lite import _mpi

__all__ = ['counting']


class _Counting:

    def __init__(self, mpi_comm):
        self._comm = mpi_comm
        self.sends = []

    def Send(self, buf, dest, tag=0):
        data = buf[0] if isinstance(buf, list) else buf
        self.sends.append((dest, tag, memoryview(data).nbytes))
        return self._comm.Send(buf, dest, tag)

    def __getattr__(self, name):
        return getattr(self._comm, name)


def counting(mpi_comm):
    """``mpi_comm`` wrapped so that its ``Send`` calls are counted in the
    wrapper's ``sends`` list; pass it as ``create_communicator``'s
    ``mpi_comm``."""
    cls = type('Counting', (_Counting,), {})
    _mpi.register_module(cls, _mpi.mpi_module_of(mpi_comm))
    return cls(mpi_comm)
