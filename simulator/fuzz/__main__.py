"""``python -m simulator.fuzz``: see :mod:`simulator.fuzz.runner`."""
import sys

from simulator.fuzz.runner import main

if __name__ == '__main__':
    sys.exit(main())
