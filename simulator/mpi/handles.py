"""``Info`` and ``Errhandler``: handles the simulator accepts and keeps
simple (hints are ignored; errors always raise ``MPI.Exception``)."""

__all__ = ['Info', 'Errhandler', 'INFO_NULL', 'ERRORS_RETURN',
           'ERRORS_ARE_FATAL']


class Info:
    """``MPI.Info``: hints are accepted and ignored by the simulator."""

    __module__ = 'simulator.mpi'

    @classmethod
    def Create(cls):
        """A fresh, empty Info."""
        return cls()

    def Free(self):
        """Nothing to free."""


class Errhandler:
    """``MPI.Errhandler``: errors always raise ``MPI.Exception`` here."""

    __module__ = 'simulator.mpi'

    def __init__(self, name):
        self.name = name

    def Free(self):
        """Predefined handlers cannot be freed; a no-op."""


INFO_NULL = Info()
ERRORS_RETURN = Errhandler('MPI_ERRORS_RETURN')
ERRORS_ARE_FATAL = Errhandler('MPI_ERRORS_ARE_FATAL')
