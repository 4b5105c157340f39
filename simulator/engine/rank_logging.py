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

A logger that a library's module code makes (its import, which runs in
the rank that imports the library first) keeps what that code sets (a
``NullHandler``, a level, ``propagate``) for every rank: it becomes per
rank at its first use by other code, starting from that configuration,
as each process's import would have made it.

The loggers themselves stay the process's (``getLogger(name)`` is the same
object in every rank, as libraries keep their module's logger, and the
hierarchy of parents is one), so are
the handler objects a rank reaches through them and ``logging``'s own
globals (``setLoggerClass``, ``addLevelName``, ``captureWarnings``).

A handler belongs to the rank that made it: ``logging.shutdown()`` and
the handlers ``logging.config.dictConfig``/``fileConfig`` close before
they configure are the calling rank's own (a process would close its
own; here rank 1's ``dictConfig`` closed rank 0's log file), and a
rank's are flushed and closed when its program ends, as a process's at
exit. Handlers made before the run are the launcher's: no rank closes
them.
"""
import logging
import logging.config
import sys
import weakref

from simulator.engine.actors import current
from simulator.engine.libraries import at_library_import
from simulator.engine.patches import wrap

__all__ = ['install', 'shutdown_rank']

# handler -> the RankContext whose thread made it
_owners = weakref.WeakKeyDictionary()

# The hierarchy is the process's: getLogger('a') made in one rank becomes
# the parent of 'a.b' for every rank.
_STRUCTURE = ('name', 'parent', 'manager', 'root', 'loggerDict')


def install(private_class):
    """Make every logger's and the manager's attributes per rank
    (``private_class(cls, containers)`` gives the subclass whose instances
    keep their attributes per rank). Returns the undo function."""
    manager = logging.Logger.manager
    swapped = {}        # id -> (object, its class before)
    pending = {}        # class -> its subclass for loggers made at imports

    def privatize(obj, containers=True):
        # (type(), not isinstance(): that reads a pending logger's
        # __class__ through its own __getattribute__)
        if issubclass(type(obj), logging.PlaceHolder):
            return
        if id(obj) in swapped:
            cls = swapped[id(obj)][1]
            if type(obj) is not pending.get(cls):
                return
        else:
            cls = type(obj)
            swapped[id(obj)] = (obj, cls)
        object.__setattr__(obj, '__class__',
                           private_class(cls, containers, _STRUCTURE))

    def pending_class(cls):
        """A subclass of ``cls`` whose instance is the process's while
        library module code uses it, and made per rank at any other use."""
        if cls in pending:
            return pending[cls]

        def __getattribute__(self, name):
            if not at_library_import(sys._getframe(1)):
                privatize(self)
            return object.__getattribute__(self, name)

        def __setattr__(self, name, value):
            if not at_library_import(sys._getframe(1)):
                privatize(self)
                return setattr(self, name, value)
            object.__setattr__(self, name, value)

        pending[cls] = type(cls.__name__, (cls,), {
            '__getattribute__': __getattribute__,
            '__setattr__': __setattr__, '__module__': cls.__module__,
            '__qualname__': cls.__qualname__})
        return pending[cls]

    privatize(manager, containers=False)    # its loggerDict stays shared
    privatize(logging.root)
    for logger in list(manager.loggerDict.values()):
        privatize(logger)

    fixup = logging.Manager._fixupParents

    def _fixupParents(self, alogger):
        # Every logger created while worlds run (getLogger's new ones).
        if at_library_import(sys._getframe(1)) and \
                id(alogger) not in swapped:
            swapped[id(alogger)] = (alogger, type(alogger))
            object.__setattr__(alogger, '__class__',
                               pending_class(type(alogger)))
        else:
            privatize(alogger)
        return fixup(self, alogger)
    logging.Manager._fixupParents = _fixupParents

    undo_handlers = [wrap(logging, '_addHandlerRef', _add_handler_ref_for),
                     wrap(logging, 'shutdown', _shutdown_for),
                     wrap(logging.config, '_clearExistingHandlers',
                          _clear_existing_for)]

    def undo():
        logging.Manager._fixupParents = fixup
        for obj, cls in swapped.values():
            object.__setattr__(obj, '__class__', cls)
        swapped.clear()
        for put_back in undo_handlers:
            put_back()
    return undo


def _own_handler_refs(context):
    """The weak references in ``logging``'s cleanup list to the handlers
    ``context``'s rank made."""
    refs = []
    for ref in logging._handlerList[:]:
        handler = ref()
        if handler is not None and _owners.get(handler) is context:
            refs.append(ref)
    return refs


def _add_handler_ref_for(real):
    def _addHandlerRef(handler):
        context = current()
        if context is not None:
            _owners[handler] = context
        real(handler)
    return _addHandlerRef


def _shutdown_for(real):
    def shutdown(handlerList=None):
        if handlerList is None:
            context = current()
            handlerList = logging._handlerList if context is None else \
                _own_handler_refs(context)
        real(handlerList)
    return shutdown


def _clear_existing_for(real):
    def _clearExistingHandlers():
        context = current()
        if context is None:
            return real()
        refs = _own_handler_refs(context)
        own = {id(ref()) for ref in refs}
        for name, handler in list(logging._handlers.items()):
            if id(handler) in own:
                del logging._handlers[name]
        logging.shutdown(refs)
        for ref in refs:
            try:
                logging._handlerList.remove(ref)
            except ValueError:
                pass
    return _clearExistingHandlers


def shutdown_rank(context):
    """Flush and close the handlers ``context``'s rank made, as
    ``logging``'s exit handler does in a process."""
    refs = _own_handler_refs(context)
    if refs:
        logging.shutdown(refs)
