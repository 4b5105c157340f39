"""Where each MPI call starts and ends, for virtual time.

Virtual time (:mod:`simulator.engine.clock`) charges a rank's CPU time
between two MPI calls as compute, and none of the simulator's own work
inside a call. :func:`call_boundaries` wraps the facade's communicating
methods (point-to-point, collectives, requests' waits and tests,
communicator construction) so that each call tells the rank's clock when
it starts and ends. The wrappers exist only while a run with virtual
time is on: with it off, the methods are the plain ones.
"""
import functools

from simulator.engine.actors import current
from simulator.engine.patches import PatchSet
from simulator.mpi.coll import Collectives
from simulator.mpi.comm import Comm
from simulator.mpi.p2p import PointToPoint
from simulator.mpi.request import Request
from simulator.mpi.scan import Scans

__all__ = ['call_boundaries']

_CONSTRUCTION = ('Split', 'Split_type', 'Dup', 'Create')
_REQUEST = ('Wait', 'wait', 'Test', 'test', 'Get_status', 'Waitall',
            'waitall', 'Testall', 'testall', 'Waitany', 'waitany',
            'Testany')

def _bounded(fn, op):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        ctx = current()
        clock = None if ctx is None else ctx.world.clock
        if clock is None:
            return fn(*args, **kwargs)
        rank = ctx.rank
        clock.enter(rank, op)
        try:
            return fn(*args, **kwargs)
        finally:
            clock.leave(rank)
    return call


def _targets():
    for mixin in (PointToPoint, Collectives, Scans):
        for name in vars(mixin):
            if not name.startswith('_'):
                yield mixin, name
    for name in _CONSTRUCTION:
        yield Comm, name
    classes, todo = [], [Request]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo.extend(cls.__subclasses__())
    for cls in classes:
        for name in _REQUEST:
            if name in vars(cls):
                yield cls, name


def _install():
    undo = []
    for cls, name in _targets():
        raw = vars(cls)[name]
        if isinstance(raw, staticmethod):
            wrapped = staticmethod(_bounded(raw.__func__, name))
        elif callable(raw):
            wrapped = _bounded(raw, name)
        else:
            continue
        setattr(cls, name, wrapped)
        undo.append(functools.partial(setattr, cls, name, raw))
    return undo


_boundaries = PatchSet(_install)


def call_boundaries():
    """While inside, the facade's MPI calls mark their start and end on
    the calling rank's virtual clock (when its world has one)."""
    return _boundaries.held()
