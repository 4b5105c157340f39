"""Functions a rank puts in ``builtins`` stay that rank's.

Distributed training scripts silence the other ranks by replacing
``builtins.print`` in each process (``setup_for_distributed(rank == 0)``:
a ``print`` that prints on rank 0 only, or with ``force=True``). In one
interpreter every rank would wrap the previous rank's wrapper, and with
3 ranks nothing printed at all. While worlds run, ``builtins``' class
(:class:`RankBuiltins`) keeps what a rank assigns to a builtin name in the
rank's own values, and the name in ``builtins``' namespace (where code
finds ``print``) becomes a dispatcher that calls the calling rank's
function, or the process's where the rank set none: every module, the
libraries' included, sees its own rank's ``print`` as in a process.
A rank reads ``builtins.print`` as its own. Assigning a value that is not
callable (``builtins.DEBUG = True``) stays the process's, with a
:class:`~simulator.engine.shared_state.SharedStateWarning`.
"""
import builtins
import types

from simulator.engine.patches import module_class

__all__ = ['RankBuiltins', 'install', 'report_shared']

_KEY = ('builtins',)        # the rank's values in its ProcessState.objects
_UNSET = object()           # a name the process's builtins lack
_DELETED = object()         # a name the rank deleted

# While installed: the calling rank's ProcessState getter, the process's
# values of the names some rank set ({name: value or _UNSET}) and the
# dispatchers standing for them in builtins' namespace.
_process_state = [lambda: None]
_shared = {}
_dispatchers = {}
# fn(description) reporting a value a rank set for every rank (installed
# by simulator.engine.shared_state while worlds run).
report_shared = [None]


def _namespace():
    return types.ModuleType.__dict__['__dict__'].__get__(builtins)


def _own(create=False):
    """The calling rank's values ({name: value}), or None (outside a rank,
    or a rank that set none unless ``create``)."""
    state = _process_state[0]()
    return None if state is None else state.own(_KEY, create)


def _value_for_caller(name):
    own = _own()
    value = _UNSET if own is None else own.get(name, _UNSET)
    if value is _UNSET:
        value = _shared[name]
    return value


def _dispatcher(name):
    def dispatch(*args, **kwargs):
        function = _value_for_caller(name)
        if function is _UNSET or function is _DELETED:
            raise NameError('name {!r} is not defined'.format(name))
        return function(*args, **kwargs)
    dispatch.__name__ = dispatch.__qualname__ = name
    dispatch.simulator_rank_builtin = True
    return dispatch


def _stand_in(name):
    """Make ``name`` in builtins' namespace a dispatcher (once)."""
    if name in _dispatchers:
        return
    namespace = _namespace()
    _shared[name] = namespace.get(name, _UNSET)
    _dispatchers[name] = namespace[name] = _dispatcher(name)


@module_class
class RankBuiltins(types.ModuleType):
    """``builtins``' class while worlds run: the names ranks assign
    functions to answer per rank."""

    def __getattribute__(self, name):
        if name not in _dispatchers:
            return super().__getattribute__(name)
        value = _value_for_caller(name)
        if value is _UNSET or value is _DELETED:
            raise AttributeError(
                "module 'builtins' has no attribute {!r}".format(name))
        return value

    def __setattr__(self, name, value):
        own = _own(create=True)
        if own is None:
            if name in _dispatchers:
                _shared[name] = value   # the process's, behind its stand-in
            else:
                super().__setattr__(name, value)
            return
        if not callable(value) and name not in _dispatchers:
            if report_shared[0] is not None:
                report_shared[0]('builtins.{} = {!r}'.format(name, value))
            super().__setattr__(name, value)
            return
        _stand_in(name)
        own[name] = value

    def __delattr__(self, name):
        own = _own(create=True)
        if own is None:
            if name in _dispatchers:
                _shared[name] = _UNSET
            else:
                super().__delattr__(name)
            return
        if name not in _dispatchers:
            if not callable(getattr(builtins, name, None)):
                return super().__delattr__(name)
            _stand_in(name)
        own[name] = _DELETED


def install(process_state):
    """Serve the names ranks assign in ``builtins`` per rank
    (``process_state()``: the calling rank's ProcessState, None outside a
    rank). Returns the undo function."""
    _process_state[0] = process_state
    builtins.__class__ = RankBuiltins

    def undo():
        builtins.__class__ = types.ModuleType
        namespace = _namespace()
        for name, value in _shared.items():
            if value is _UNSET or value is _DELETED:
                namespace.pop(name, None)
            else:
                namespace[name] = value
        _shared.clear()
        _dispatchers.clear()
        _process_state[0] = lambda: None
    return undo
