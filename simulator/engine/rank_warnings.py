"""Warning filters per rank: each process has its own ``warnings`` state.

``warnings.catch_warnings`` saves ``warnings.filters`` on entry and puts
it back on exit; with ranks as threads sharing one list, a rank leaving
its block would undo the filters another rank set inside its own (an
``ignore`` turning back into printed warnings, an ``error`` filter
vanishing under ``assertRaises(UserWarning)``). While worlds run, the
``warnings`` module answers ``filters``, ``showwarning`` and
``_showwarnmsg_impl`` per rank (each rank starts from the process's
values), for Python code and for the C implementation of ``warn``, which
reads them as attributes of the module. ``filterwarnings``,
``simplefilter`` and ``resetwarnings`` change the calling rank's list.

A library's module code runs once in the process, in the rank that
imports it first; the filters it adds there (NumPy's, Chainer's) are
added to every rank's list, as each process would add them at its own
import (but not those added inside a ``catch_warnings`` block, which
ends with the import).

Which warnings were shown already is a process's too: ``warnings.warn``
keeps that in the ``__warningregistry__`` of the module the warning is
attributed to, and the "once" action in ``onceregistry``. A library
module is one for all ranks, so a library's warning showed in the first
rank only (under mpiexec in each process), and a rank whose filter turns
it into an error got nothing once another rank had shown it. In a rank,
``warnings.warn`` (as libraries call it, through the module) keeps its
registries per rank, and ``onceregistry`` is the rank's.
"""
import sys
import threading
import types
import warnings

from simulator.engine.libraries import at_library_import
from simulator.engine.patches import module_class
from simulator.engine.rank_sys import rank_setter
from simulator.engine.trace import program_frames

__all__ = ['install']

_PRIVATE = ('filters', 'showwarning', '_showwarnmsg_impl', 'onceregistry')
_KEY = ('warnings',)


def _module_dict():
    return types.ModuleType.__dict__['__dict__'].__get__(warnings)


def _insert(filters, item, append):
    """Add filter ``item`` to the list ``filters`` as warnings does."""
    if not append:
        if item in filters:
            filters.remove(item)
        filters.insert(0, item)
    elif item not in filters:
        filters.append(item)


def install(process_state):
    """Make the warnings state per rank; returns the undo function.
    ``process_state()`` gives the calling rank's ProcessState (None
    outside a rank)."""

    # [(filter, append)] that libraries' imports added in some rank while
    # ranks ran, also put in the shared list (ranks yet to start copy it).
    by_imports = []
    lock = threading.Lock()

    def own_state():
        state = process_state()
        if state is None:
            return None
        own = state.objects.get(_KEY)
        if own is None:
            shared = _module_dict()
            with lock:
                own = {name: shared[name] for name in _PRIVATE}
                own['filters'] = list(own['filters'])
                own['seen'] = len(by_imports)
            own['onceregistry'] = dict(own['onceregistry'])
            own['registries'] = {}  # id(module globals) -> (them, registry)
            # The list outside any catch_warnings block.
            own['outer'] = own['filters']
            state.objects[_KEY] = own
        elif own['seen'] < len(by_imports):
            with lock:
                for item, append in by_imports[own['seen']:]:
                    _insert(own['outer'], item, append)
                own['seen'] = len(by_imports)
            warnings._filters_mutated()
        return own

    def attribute(name):
        def get(module):
            own = own_state()
            return _module_dict()[name] if own is None else own[name]

        return property(get, rank_setter(name, own_state, _module_dict))

    private = module_class(type('PrivateWarnings', (types.ModuleType,),
                                {name: attribute(name) for name in _PRIVATE}))

    # The module's own functions change the list they find as a global
    # (the shared one): these go through the attribute instead.
    def _add_filter(*item, append):
        own = own_state()
        filters = warnings.filters
        _insert(filters, item, append)
        if own is not None and filters is own['outer'] and \
                at_library_import(sys._getframe(2)):
            with lock:
                by_imports.append((item, append))
                own['seen'] = len(by_imports)
                _insert(_module_dict()['filters'], item, append)
        warnings._filters_mutated()

    def resetwarnings():
        """Clear the calling rank's warning filters."""
        warnings.filters[:] = []
        warnings._filters_mutated()

    def _showwarnmsg(msg):
        # warnings' own version reads ``showwarning`` and
        # ``_showwarnmsg_impl`` as globals (the shared ones), so
        # catch_warnings(record=True) in a rank recorded nothing.
        sw = warnings.showwarning
        if sw is not warnings._showwarning_orig:
            if not callable(sw):
                raise TypeError('warnings.showwarning() must be set to a '
                                'function or method')
            sw(msg.message, msg.category, msg.filename, msg.lineno,
               msg.file, msg.line)
            return
        warnings._showwarnmsg_impl(msg)

    shared = _module_dict()
    real_warn, real_warn_explicit = shared['warn'], shared['warn_explicit']

    def warn(message, category=None, stacklevel=1, source=None):
        own = own_state()
        if own is None:
            return real_warn(message, category, stacklevel + 1, source)
        frame = _attributed_frame(stacklevel)
        if frame is None:       # above the stack, as warnings says it
            module_globals, filename, lineno = sys.__dict__, 'sys', 1
        else:
            module_globals = frame.f_globals
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
        registries = own['registries']
        entry = registries.get(id(module_globals))
        if entry is None or entry[0] is not module_globals:
            entry = registries[id(module_globals)] = (module_globals, {})
        return real_warn_explicit(
            message, _category(message, category), filename, lineno,
            module_globals.get('__name__', '<string>'), entry[1],
            module_globals, source)

    saved = {name: shared[name] for name in ('_add_filter',
                                             'resetwarnings',
                                             '_showwarnmsg', 'warn')}
    shared['_add_filter'] = _add_filter
    shared['resetwarnings'] = resetwarnings
    shared['_showwarnmsg'] = _showwarnmsg
    shared['warn'] = warn
    original_class = warnings.__class__
    warnings.__class__ = private

    def undo():
        warnings.__class__ = original_class
        shared.update(saved)
    return undo


def _internal(frame):
    filename = frame.f_code.co_filename
    return 'importlib' in filename and '_bootstrap' in filename


def _attributed_frame(stacklevel):
    """The frame a warning of ``stacklevel`` is attributed to, as the
    interpreter's ``warn`` finds it (import machinery frames skipped),
    from the caller of the ``warn`` that called this; None above the
    stack. To a program's or library's warning the simulator's frames
    are as mpi4py's C code is to a process's: not there (a rank's stack
    ends at its program, a callback's caller is the code that called
    MPI)."""
    frame = sys._getframe(2)
    skip = stacklevel > 0 and not _internal(frame)
    outwards = program_frames(frame)
    frame = next(outwards)
    for _ in range(stacklevel - 1):
        frame = next(outwards, None)
        while skip and frame is not None and _internal(frame):
            frame = next(outwards, None)
        if frame is None:
            break
    return frame


def _category(message, category):
    """The warning's category, as ``warnings.warn`` decides it."""
    if isinstance(message, Warning):
        return type(message)
    if category is None:
        return UserWarning
    if not (isinstance(category, type) and issubclass(category, Warning)):
        raise TypeError('category must be a Warning subclass, not '
                        "'{}'".format(type(category).__name__))
    return category
