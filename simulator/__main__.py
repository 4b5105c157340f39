"""``python -m simulator``: see :mod:`simulator.tools.cli`."""
import sys

from simulator.tools.cli import main

__all__ = []

if __name__ == '__main__':
    sys.exit(main())
