"""The ``logging`` configuration per rank.

Each process configures its own loggers: a program that calls
``logging.basicConfig(level=INFO if rank == 0 else WARNING,
format='rank{}: %(message)s'.format(rank))`` gets one format and one level
per process. In one interpreter the loggers, their handlers and levels are
the process's, so the first rank to configure would configure every rank
(``basicConfig`` does nothing once the root logger has a handler). While
worlds run, each logger's attributes (level, handlers, filters,
``propagate``, ``disabled``, its level cache) and the manager's (the level
``logging.disable`` sets) are per rank: a rank starts from the process's
configuration, and what it sets stays its own; lists and dicts are copied
for the rank, so ``addHandler`` in one rank adds to that rank's list.

The loggers themselves stay the process's (``getLogger(name)`` is the same
object in every rank, as libraries keep their module's logger, and the
hierarchy of parents is one), so are
the handler objects a rank reaches through them and ``logging``'s own
globals (``setLoggerClass``, ``addLevelName``, ``captureWarnings``).
"""
import logging

__all__ = ['install']

# The hierarchy is the process's: getLogger('a') made in one rank becomes
# the parent of 'a.b' for every rank.
_STRUCTURE = ('name', 'parent', 'manager', 'root', 'loggerDict')


def install(private_class):
    """Make every logger's and the manager's attributes per rank
    (``private_class(cls, containers)`` gives the subclass whose instances
    keep their attributes per rank). Returns the undo function."""
    manager = logging.Logger.manager
    swapped = {}        # id -> (object, its class before)

    def privatize(obj, containers=True):
        if id(obj) in swapped or isinstance(obj, logging.PlaceHolder):
            return
        swapped[id(obj)] = (obj, type(obj))
        obj.__class__ = private_class(type(obj), containers, _STRUCTURE)

    privatize(manager, containers=False)    # its loggerDict stays shared
    privatize(logging.root)
    for logger in list(manager.loggerDict.values()):
        privatize(logger)

    fixup = logging.Manager._fixupParents

    def _fixupParents(self, alogger):
        # Every logger created while worlds run (getLogger's new ones).
        privatize(alogger)
        return fixup(self, alogger)
    logging.Manager._fixupParents = _fixupParents

    def undo():
        logging.Manager._fixupParents = fixup
        for obj, cls in swapped.values():
            obj.__class__ = cls
        swapped.clear()
    return undo
