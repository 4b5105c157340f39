"""What ``simulator.mpi`` names but does not simulate.

Such calls exist as names (mpi4py programs and its
test suite reference them at import time) whose every use raises
:class:`NotSimulated`, a ``NotImplementedError`` that says what is
missing. mpi4py's own tests treat ``NotImplementedError`` as "not
provided by this MPI".
"""

__all__ = ['NotSimulated', 'not_simulated', 'mpi41_missing', 'Unsupported',
           'CLASSES', 'FUNCTIONS']


class NotSimulated(NotImplementedError):
    """A part of MPI the simulator does not model."""


def not_simulated(what):
    """The error for an unsimulated ``what`` (e.g. ``'MPI.Win.Create'``)."""
    return NotSimulated('simulator.mpi: {} is not simulated (outside the '
                        'simulated subset: derived '
                        'datatypes in RMA, user data representations; see '
                        'the README)'.format(what))


def mpi41_missing(what):
    """The error for an MPI 4.1 call that Open MPI 5.0 lacks (mpi4py
    raises NotImplementedError for it there)."""
    return NotSimulated('simulator.mpi: MPI.{} is MPI 4.1, which Open MPI '
                        '5.0 (the library the simulator reproduces) does '
                        'not provide'.format(what))


class _Refusing(type):
    def __getattr__(cls, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise not_simulated('MPI.{}.{}'.format(cls.__name__, name))


class Unsupported(metaclass=_Refusing):
    """Base of the unsimulated handle types: constructors and methods raise
    :class:`NotSimulated`; the null handles compare and test false."""

    __module__ = 'simulator.mpi'

    def __init__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and args[0] is not None and \
                not isinstance(args[0], type(self)):
            # a copy takes only its own kind, as mpi4py's (TypeError)
            from simulator.mpi.handles import handle_argument_error
            raise handle_argument_error(type(self).__name__, args[0])
        if kwargs or len(args) > 1:
            raise not_simulated('MPI.{}()'.format(type(self).__name__))

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise not_simulated('MPI.{}.{}'.format(type(self).__name__, name))

    def __bool__(self):
        return False

    # Only the null handle exists: its int is 0, as every null's.
    handle = property(lambda self: 0, doc='0: the null handle.')

    def toint(self):
        """0: the null handle."""
        return 0

    py2f = toint

    def free(self):
        """Nothing to free: only the null handle exists."""

    @classmethod
    def fromhandle(cls, handle):
        """The null handle for 0 (no other handle exists)."""
        if handle != 0:
            raise not_simulated('MPI.{}.fromhandle({!r})'.format(
                cls.__name__, handle))
        return cls()

    fromint = f2py = fromhandle

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = None     # unhashable, as mpi4py's handles

    def __repr__(self):
        return '<simulator.mpi.{} (not simulated)>'.format(
            type(self).__name__)


def _handle_type(name):
    return _Refusing(name, (Unsupported,), {'__module__': 'simulator.mpi'})


CLASSES = {name: _handle_type(name) for name in (
    'Win', 'Session', 'memory')}


def _refuse(name):
    def call(*args, **kwargs):
        raise not_simulated('MPI.{}'.format(name))
    call.__name__ = name
    call.__doc__ = 'Not simulated: raises NotSimulated.'
    return call


FUNCTIONS = {name: _refuse(name) for name in (
    'Register_datarep', 'Remove_error_class',
    'Remove_error_code', 'Remove_error_string', 'Get_hw_resource_info')}
