"""Process-wide patches, held while at least one world runs.

Worlds may overlap (a test runner's threads, a run inside a run), so a set
of patches counts its holders: it is installed when the first enters and
undone when the last leaves.
"""
import contextlib
import functools
import threading

__all__ = ['PatchSet', 'wrap', 'module_class', 'MODULE_CLASSES']

# Every class module_class named: the modules' classes while worlds run.
MODULE_CLASSES = []


def module_class(cls):
    """A ``types.ModuleType`` subclass that stands in for a module's class
    while worlds run, named as the module type itself: a program that
    prints ``type(sys)`` or ``type(numpy)`` sees ``<class 'module'>``, as
    in a process."""
    cls.__name__ = cls.__qualname__ = 'module'
    cls.__module__ = 'builtins'
    MODULE_CLASSES.append(cls)
    return cls


class PatchSet:
    """``install()`` patches the process and returns the callables that
    undo it, in the order they were applied."""

    def __init__(self, install):
        self._install = install
        self._lock = threading.Lock()
        self._depth = 0
        self._undo = []

    @property
    def active(self):
        """True while at least one holder is inside :meth:`held`."""
        return self._depth > 0

    @contextlib.contextmanager
    def held(self):
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._undo = list(self._install())
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    for undo in reversed(self._undo):
                        undo()
                    self._undo = []


def wrap(owner, name, make):
    """Replace ``owner.name`` (``owner[name]`` for a dict) by
    ``make(original)``, which keeps the original's name and docstring;
    return the callable that puts the original back (for an install
    function's undo list)."""
    is_dict = isinstance(owner, dict)
    original = owner[name] if is_dict else getattr(owner, name)
    wrapper = functools.update_wrapper(make(original), original)
    if is_dict:
        owner[name] = wrapper
        return lambda: owner.__setitem__(name, original)
    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, original)
