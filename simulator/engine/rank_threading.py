"""``threading.excepthook`` per rank.

A process that sets ``threading.excepthook`` (an MPI abort hook for its
helper threads, a custom report) has it called for its own threads'
uncaught exceptions, never another process's. While worlds run,
``threading``'s class answers ``excepthook`` per rank (a rank starts with
the process's), and the module's namespace, where ``threading``'s own
code looks the hook up when a thread fails, holds a dispatcher that calls
the failing thread's rank's hook.

(A rank's ``Thread-1``, ``Thread-2``... numbering is its own too: see
:func:`simulator.engine.process.register_private_counter`.)
"""
import threading
import types

from simulator.engine.patches import module_class
from simulator.engine.rank_sys import rank_setter

__all__ = ['install']

_KEY = ('threading',)     # the rank's values in its ProcessState.objects


def install(process_state):
    """Serve ``threading.excepthook`` per rank (``process_state()``: the
    calling rank's ProcessState, None outside a rank). Returns the undo
    function."""
    namespace = vars(threading)
    shared = {'excepthook': namespace['excepthook']}   # the process's hook

    def own():
        state = process_state()
        if state is None:
            return None
        return state.objects.setdefault(_KEY, {})

    def hook_of_caller():
        mine = own()
        if mine is None or 'excepthook' not in mine:
            return shared['excepthook']
        return mine['excepthook']

    def dispatch(args):
        hook = hook_of_caller()
        # threading falls back to its own report when the hook is None.
        return (hook or threading.__excepthook__)(args)

    def get(module):
        return hook_of_caller()

    private = module_class(type('PrivateThreading', (types.ModuleType,), {
        'excepthook': property(get, rank_setter('excepthook', own,
                                                lambda: shared))}))
    namespace['excepthook'] = dispatch
    threading.__class__ = private

    def undo():
        threading.__class__ = types.ModuleType
        namespace['excepthook'] = shared['excepthook']
    return undo
