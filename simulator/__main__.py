"""``python -m simulator``: see :mod:`simulator.tools.cli`, which reads
the options and settles the address layout (in virtual time, by
executing the process again) before anything heavy is imported."""
import sys

from simulator.tools.cli import main

__all__ = []

if __name__ == '__main__':
    sys.exit(main())
