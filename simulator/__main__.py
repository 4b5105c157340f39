"""``python -m simulator``: see :mod:`simulator.tools.cli`, which reads
the options and settles the address layout (in virtual time, by
executing the process again) before anything heavy is imported."""
import os
import sys
import threading

from simulator.tools.cli import main

__all__ = []


def _exit(status):
    """Exit with ``status``, as mpiexec does once its job has ended: a
    thread a failed rank left running (its program still sleeping or
    computing) is not waited for, and cannot exit the launcher with a
    status of its own (its ``os._exit`` then is the process's)."""
    left = [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and
            t.is_alive()]
    if not left:
        sys.exit(status)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status if isinstance(status, int) else 1)


if __name__ == '__main__':
    _exit(main())
