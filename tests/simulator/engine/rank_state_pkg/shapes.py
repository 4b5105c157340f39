"""A class whose objects travel between ranks (pickle finds it by
module and name)."""
import rank_state_pkg  # noqa: F401 -- a circular import, as packages have

__all__ = ['Point', 'made']

made = 0


class Point:
    """A point that counts how many this process made."""

    def __init__(self, x):
        global made
        made += 1
        self.x = x
