"""Activities: what a rank waits for, and the ways it waits.

An :class:`Activity` is the engine's side of a request: a send to be
received, a receive to be matched, a collective to complete. ``ready()``
and ``hopeless()`` are asked under the world lock. The facade's requests
(``simulator.mpi.Request``) wrap activities and wait through the
functions here, so every wait of the program passes one place.
"""

__all__ = ['Activity', 'Condition', 'wait', 'test', 'wait_any',
           'wait_some', 'test_some', 'test_any', 'ready_indices']


class Activity:
    """Something one rank can wait for; subclasses define ``ready()``.

    ``world`` and ``rank`` (the owner's world rank) locate it, ``record``
    (a CallRecord) says which call made it, for reports.
    """

    __slots__ = ('world', 'rank', 'record')

    def __init__(self, world, rank, record):
        self.world = world
        self.rank = rank
        self.record = record

    def ready(self):
        """True once complete (world lock held)."""
        raise NotImplementedError

    def hopeless(self):
        """True when it can never complete: a rank it needs finished."""
        return False


class Condition(Activity):
    """An activity whose readiness is a function (``ready_fn()``)."""

    __slots__ = ('ready_fn', 'hopeless_fn')

    def __init__(self, world, rank, record, ready_fn, hopeless_fn=None):
        super().__init__(world, rank, record)
        self.ready_fn = ready_fn
        self.hopeless_fn = hopeless_fn

    def ready(self):
        return self.ready_fn()

    def hopeless(self):
        return self.hopeless_fn is not None and self.hopeless_fn()


def wait(activity):
    """Block the calling thread until ``activity`` is ready."""
    world = activity.world
    with world.lock:
        world.block(activity.ready, activity.record, activity.hopeless)


def test(activity):
    """True when ``activity`` is ready; never blocks. A rank that keeps
    testing an unchanging world is reported as stuck (see note_poll)."""
    world = activity.world
    with world.lock:
        world.raise_if_broken(activity.rank)
        world.check_poll(activity.record)
        if world.schedule is not None:     # answered at the next fence
            return world.schedule.poll(world, activity.rank,
                                       activity.record, activity.ready)
        if activity.ready():
            return True
        world.note_poll(activity.record)
        return False


def ready_indices(activities):
    """Indices of the ready ones among ``activities`` (lock held)."""
    return [i for i, a in enumerate(activities) if a.ready()]


def wait_any(activities):
    """Block until one of ``activities`` is ready; return its index."""
    first = activities[0]
    world = first.world
    with world.lock:
        if world.schedule is not None and len(activities) > 1:
            # Which complete request it reports is the schedule's choice.
            return world.schedule.await_choice(
                world, first.rank, first.record,
                lambda: ready_indices(activities),
                hopeless=lambda: all(a.hopeless() for a in activities))
        world.block(lambda: any(a.ready() for a in activities),
                    first.record,
                    lambda: all(a.hopeless() for a in activities))
        return ready_indices(activities)[0]


def _some(activities):
    """What Waitsome/Testsome may report: every ready one, or (when
    several are) any single one, the others completing a moment later."""
    ready = ready_indices(activities)
    if len(ready) < 2:
        return [ready] if ready else []
    return [ready] + [[i] for i in ready]


def wait_some(activities):
    """Block until some of ``activities`` are ready; return their indices."""
    first = activities[0]
    world = first.world
    with world.lock:
        if world.schedule is not None:
            return world.schedule.await_choice(
                world, first.rank, first.record, lambda: _some(activities),
                hopeless=lambda: all(a.hopeless() for a in activities))
        world.block(lambda: any(a.ready() for a in activities),
                    first.record,
                    lambda: all(a.hopeless() for a in activities))
        return ready_indices(activities)


def _poll(activities, choose_scheduled):
    """Ready indices now, never blocking; under a schedule its choice
    (``choose_scheduled``) answers instead."""
    first = activities[0]
    world = first.world
    with world.lock:
        world.raise_if_broken(first.rank)
        world.check_poll(first.record)
        if world.schedule is not None:
            return True, world.schedule.await_choice(
                world, first.rank, first.record, choose_scheduled,
                poll=True)
        ready = ready_indices(activities)
        if not ready:
            world.note_poll(first.record)
        return False, ready


def test_some(activities):
    """Indices of ready ``activities`` (maybe none); never blocks."""
    scheduled, answer = _poll(activities, lambda: _some(activities))
    return (answer or []) if scheduled else answer


def test_any(activities):
    """Index of one ready activity, or None; never blocks."""
    scheduled, answer = _poll(activities,
                              lambda: ready_indices(activities))
    if scheduled:
        return answer
    return answer[0] if answer else None
