"""A user package for test_modules.py: module-level state that a process
keeps for itself. Import it only inside a rank (a test body)."""
from rank_state_pkg import shapes

imports = 0
imports += 1
seen = []


def note(value):
    """Remember ``value`` in this process's list; return the list."""
    seen.append(value)
    return list(seen)


__all__ = ['note', 'shapes', 'imports', 'seen']
