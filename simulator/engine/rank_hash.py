"""``hash()`` of strings differs between ranks, as between processes.

Each Python process draws its own hash secret at start (unless
``PYTHONHASHSEED`` fixes it), so under ``mpiexec`` ``hash('key')``
differs from rank to rank, and a program that places work by
``hash(key) % size`` gives each rank a different placement: a bug a
cluster shows and one interpreter, with its single secret, would hide.
While a world runs, the program's own calls of ``hash()`` (not the
libraries', which share their caches between ranks, nor a ``__hash__``
method's, whose objects may sit in a dict built before the run) answer
a value salted per rank for the objects whose hash comes from the
secret: ``str``, ``bytes``, ``memoryview``, ``datetime``'s dates and
times, ``enum`` members and ``pathlib`` paths, and tuples and frozensets
holding one. The salt is drawn from the world's seed, so a run repeats.

What cannot be made per rank: the order in which a ``set`` or
``frozenset`` of strings iterates comes from the interpreter's one
secret, so it is the same in every rank here, where processes would
disagree unless ``PYTHONHASHSEED`` is set (iterate ``sorted(...)`` to
be portable).
"""
import builtins
import datetime
import enum
import pathlib
import sys

from simulator.engine.libraries import is_library_file
from simulator.engine.patches import wrap

__all__ = ['install']

# Hash slots that read the interpreter's secret.
_SECRET_HASHES = {str.__hash__, bytes.__hash__, memoryview.__hash__,
                  datetime.date.__hash__, datetime.datetime.__hash__,
                  datetime.time.__hash__, enum.Enum.__hash__,
                  pathlib.PurePath.__hash__}
_CONTAINERS = {tuple.__hash__, frozenset.__hash__}


def _reads_secret(value, depth=0):
    slot = type(value).__hash__
    if slot in _SECRET_HASHES:
        return True
    if slot in _CONTAINERS and depth < 64:
        return any(_reads_secret(item, depth + 1) for item in value)
    return False


def _hash_for(salt_of):
    def make(real):
        def hash(value, /):     # noqa: A001 -- stands for the builtin
            code = real(value)  # unhashable: the builtin's TypeError
            salt = salt_of()
            if salt is None or not _reads_secret(value):
                return code
            caller = sys._getframe(1).f_code
            # A __hash__ (the program's, or one a dataclass generates)
            # keeps the process's: dicts and sets built outside the rank
            # (at import) must still find their keys inside it.
            if caller.co_name == '__hash__' or \
                    is_library_file(caller.co_filename):
                return code
            return real((salt, code))
        return hash
    return make


def install(salt_of):
    """Answer the program's ``hash()`` per rank while installed
    (``salt_of()``: the calling rank's salt, or None outside a rank or
    when ``PYTHONHASHSEED`` fixes every process's secret). Returns the
    undo function."""
    return wrap(builtins, 'hash', _hash_for(salt_of))
