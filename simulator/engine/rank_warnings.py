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
"""
import types
import warnings

from simulator.engine.rank_sys import rank_setter

__all__ = ['install']

_PRIVATE = ('filters', 'showwarning', '_showwarnmsg_impl')
_KEY = ('warnings',)


def _module_dict():
    return types.ModuleType.__dict__['__dict__'].__get__(warnings)


def install(process_state):
    """Make the warnings state per rank; returns the undo function.
    ``process_state()`` gives the calling rank's ProcessState (None
    outside a rank)."""

    def own_state():
        state = process_state()
        if state is None:
            return None
        own = state.objects.get(_KEY)
        if own is None:
            shared = _module_dict()
            own = state.objects[_KEY] = {name: shared[name]
                                         for name in _PRIVATE}
            own['filters'] = list(own['filters'])
        return own

    def attribute(name):
        def get(module):
            own = own_state()
            return _module_dict()[name] if own is None else own[name]

        return property(get, rank_setter(name, own_state, _module_dict))

    private = type('PrivateWarnings', (types.ModuleType,),
                   {name: attribute(name) for name in _PRIVATE})

    # The module's own functions change the list they find as a global
    # (the shared one): these go through the attribute instead.
    def _add_filter(*item, append):
        filters = warnings.filters
        if not append:
            if item in filters:
                filters.remove(item)
            filters.insert(0, item)
        elif item not in filters:
            filters.append(item)
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
    saved = {name: shared[name] for name in ('_add_filter',
                                             'resetwarnings',
                                             '_showwarnmsg')}
    shared['_add_filter'] = _add_filter
    shared['resetwarnings'] = resetwarnings
    shared['_showwarnmsg'] = _showwarnmsg
    original_class = warnings.__class__
    warnings.__class__ = private

    def undo():
        warnings.__class__ = original_class
        shared.update(saved)
    return undo
