"""``python -m simulator``: see :mod:`simulator.cli`."""
import sys

from simulator.cli import main

__all__ = []

if __name__ == '__main__':
    sys.exit(main())
