"""Where each MPI call starts and ends, for virtual time.

Virtual time (:mod:`simulator.engine.clock`) charges a rank's CPU time
between two MPI calls as compute, and none of the simulator's own work
inside a call. :func:`call_boundaries` wraps the facade's communicating
methods (point-to-point, collectives, requests' waits and tests,
communicator construction) so that each call tells the rank's clock when
it starts and ends. The wrappers exist only while a run with virtual
time is on: with it off, the methods are the plain ones.

The simulator's call path costs CPU time that the clock cannot see from
inside (the call into the wrapper, half of each ``thread_time`` read: a
system call of about 1.5 us on a virtual machine, the facade's code
before the wrapper): :func:`boundary_cost` measures it once per process,
and the clock takes it off each call's compute, or an 8-byte round trip
would be predicted at twice its time.
"""
import functools

import numpy as np

from simulator.engine.actors import current
from simulator.engine.clock import VirtualTime
from simulator.engine.netmodel import Link, Machine
from simulator.engine.patches import PatchSet
from simulator.engine.ranks import run_ranks
from simulator.engine.world import World
from simulator.mpi.coll import Collectives
from simulator.mpi.comm import Comm, world_comm
from simulator.mpi.constants import InPlaceType
from simulator.mpi.naming import with_subclasses
from simulator.mpi.p2p import PointToPoint
from simulator.mpi.request import Request
from simulator.mpi.scan import Scans

__all__ = ['call_boundaries', 'boundary_cost']

_CONSTRUCTION = ('Split', 'Split_type', 'Dup', 'Create')
_REQUEST = ('Wait', 'wait', 'Test', 'test', 'Get_status', 'Waitall',
            'waitall', 'Testall', 'testall', 'Waitany', 'waitany',
            'Testany')

def _allreduce_in_place(args, kwargs):
    # Allreduce(self, sendbuf, ...): None or IN_PLACE there is in place
    # (as simulator.mpi.msgspec.parse_send reads it). The model charges
    # the others the copy of the send buffer.
    sendbuf = args[1] if len(args) > 1 else kwargs.get('sendbuf')
    return sendbuf is None or isinstance(sendbuf, InPlaceType)


# Calls whose cost depends on how they were made: op -> what the clock
# is told (see VirtualTime.enter).
_IN_PLACE = {'Allreduce': _allreduce_in_place}


def _bounded(fn, op):
    in_place = _IN_PLACE.get(op)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        ctx = current()
        clock = None if ctx is None else ctx.world.clock
        if clock is None:
            return fn(*args, **kwargs)
        rank = ctx.rank
        clock.enter(rank, op, in_place and in_place(args, kwargs))
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
    for cls in with_subclasses(Request):
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


_measured = []

# Which of the probe's per-call gaps is the call path's cost: the 90th
# percentile. Every gap the probe sees is the call path alone, and the
# same path costs a program's calls 1-3 us more or less from run to run
# (the machine's state; measured 2026-11-26: the probe's median 5.1-5.4
# us, its 90th percentile 6.0-8.4 us, a round-trip loop's 4-7 us), so
# a stretch between two calls that costs no more than nearly all of them
# is empty: its key's median charges nothing, the same in every run. A
# real MPI's own per-call cost is in the calibrated latency already.
_QUANTILE = 0.9


def _probe(comm, rounds):
    # Round trips between two ranks, as a program makes them: the real
    # wrappers, the real engine path, a wait for the peer at every call
    # (after which the caches are as cold as a program finds them). All
    # the compute the clock charges is the simulator's own, bar a bare
    # loop's: each call's share is one gap.
    clock = comm._s.world.clock.clocks[comm.Get_rank()]
    peer = 1 - comm.Get_rank()
    buf = np.zeros(1)
    gaps = []
    for _ in range(rounds):
        before = clock.compute
        if peer:
            comm.Send(buf, peer)
            middle = clock.compute
            comm.Recv(buf, peer)
        else:
            comm.Recv(buf, peer)
            middle = clock.compute
            comm.Send(buf, peer)
        gaps.append(middle - before)
        gaps.append(clock.compute - middle)
    return gaps[2:]     # the first round trip warms the path up


def boundary_cost(rounds=100):
    """CPU seconds per MPI call that the simulator's call path spends
    where the rank's clock counts it as compute: the 90th percentile of
    both ranks' per-call gaps over ``rounds`` round trips in a two-rank
    world (a quantile, not the least: one lucky gap must not set it),
    measured once per process."""
    if rounds < 2:
        raise ValueError('rounds must be at least 2, got {!r}'.format(
            rounds))
    if not _measured:
        clock = VirtualTime(Machine('probe', Link('intra', 0.0, 1e9)),
                            compute_scale=1.0, estimate='raw')
        world = World(2)
        clock.attach(world)
        with call_boundaries():
            ranks = run_ranks(world, lambda ctx: _probe(
                world_comm(ctx), rounds))
        gaps = sorted(ranks[0] + ranks[1])
        _measured.append(gaps[int(_QUANTILE * (len(gaps) - 1))])
    return _measured[0]
