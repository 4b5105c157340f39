"""Reports for the checks: deadlocks, unmatched messages, explainers.

A :class:`Report` lists, per rank, the pending call (a
:class:`simulator.engine.trace.CallRecord`: op, peer, tag, communicator and
the recorded stack) and the messages nobody received.

Libraries add hints to reports, the simulator's extension point:
``fn(report) -> str or None``, registered with :func:`register_explainer`,
or declared without importing the simulator as an entry point of the group
``simulator.explainers`` (``name = package.module:function``). An entry
point is loaded when a report is formatted and only if its package is
already imported by the program (a library nobody uses has nothing to
explain).
"""
import importlib.metadata
import sys
import threading

__all__ = ['Report', 'register_explainer', 'unregister_explainer',
           'explainers', 'ENTRY_POINT_GROUP']

ENTRY_POINT_GROUP = 'simulator.explainers'
_explainers = []
_explainers_lock = threading.Lock()
_entry_points = None        # not yet loaded: [EntryPoint]
_loaded_entry_points = set()


def register_explainer(fn):
    """Add ``fn(report) -> hint or None`` to every deadlock/unmatched report.

    Returns ``fn`` so it can be used as a decorator. Registering the same
    function twice has no effect.
    """
    with _explainers_lock:
        if fn not in _explainers:
            _explainers.append(fn)
    return fn


def unregister_explainer(fn):
    """Remove an explainer added by :func:`register_explainer`."""
    with _explainers_lock:
        if fn in _explainers:
            _explainers.remove(fn)


def _load_entry_points():
    """Register the explainers of installed packages the program uses."""
    global _entry_points
    if _entry_points is None:
        _entry_points = list(importlib.metadata.entry_points(
            group=ENTRY_POINT_GROUP))
    for entry in _entry_points:
        if entry.name in _loaded_entry_points or \
                entry.module.split('.')[0] not in sys.modules:
            continue
        _loaded_entry_points.add(entry.name)
        try:
            register_explainer(entry.load())
        except Exception as e:  # a broken plugin must not hide the report
            register_explainer(_broken(entry, e))


def _broken(entry, error):
    def explain(report):
        return 'explainer {} could not be loaded: {!r}'.format(
            entry.value, error)
    return explain


def explainers():
    """The registered explainers (a copy), entry points included."""
    _load_entry_points()
    with _explainers_lock:
        return list(_explainers)


class Report:
    """What each rank was doing when a check fired.

    ``pending``: {world rank: CallRecord} of blocked ranks (the main
    thread's call first); ``threads``: [(world rank, thread name,
    CallRecord)] of the other blocked threads of those ranks;
    ``running``: ranks still in user code; ``finished``: ranks that
    returned; ``unmatched``: list of (dest world rank, Message) never
    received; ``missing``: {(comm name, seq): [comm ranks not joined]}
    for collectives; ``history``: {(receiver, comm name, source, tag):
    [CallRecord]} of the last sends received on each channel; ``kind``:
    'deadlock', 'timeout' or 'unmatched'; ``send_mode``: the world's.
    """

    def __init__(self, kind, size):
        self.kind = kind
        self.size = size
        self.pending = {}
        self.threads = []
        self.running = []
        self.finished = []
        self.unmatched = []
        self.unreceived = []    # posted receives never matched
        self.missing = {}
        self.history = {}       # see World.history
        self.hints = []
        self.send_mode = None   # the world's (see World.send_waits)

    @classmethod
    def from_world(cls, world, kind):
        """Snapshot a world's blocked ranks (``world.lock`` held)."""
        report = cls(kind, world.size)
        report.send_mode = world.send_mode
        for rank in range(world.size):
            waiting = sorted((a for a in world.actors[rank]
                              if a.waiting is not None),
                             key=lambda a: not a.main)
            if waiting:
                report.pending[rank] = waiting[0].waiting
                report.threads += [(rank, a.name, a.waiting)
                                   for a in waiting[1:]]
            elif world.finished[rank]:
                report.finished.append(rank)
            else:
                report.running.append(rank)
        for (_ctx, seq), slot in world.collectives.items():
            absent = [r for r in range(slot.size) if slot.calls[r] is None]
            if absent:
                report.missing[(slot.comm_name, seq)] = absent
        report._collect_unmatched(world)
        report.history = world.history
        return report

    @classmethod
    def unmatched_from_world(cls, world):
        """Messages and receives left over at the end of a run."""
        report = cls('unmatched', world.size)
        report.finished = list(range(world.size))
        report._collect_unmatched(world)
        report.history = world.history
        return report

    def _collect_unmatched(self, world):
        for dest in range(world.size):
            for queue in world.unexpected[dest].values():
                for msg in queue:
                    self.unmatched.append((dest, msg))
            for queue in world.posted[dest].values():
                for req in queue:
                    self.unreceived.append((dest, req.record))

    def _pending_groups(self):
        return _group_pending(self.pending)

    def format(self, headline):
        """The full text: headline, each rank's state, hints."""
        lines = [headline + ':']
        for ranks, record in self._pending_groups():
            lines.append('  {}: blocked in {}'.format(
                'rank {}'.format(ranks[0]) if len(ranks) == 1 else
                'ranks {}'.format(_ranges(ranks)), record.describe()))
            if record.seq is not None:
                absent = self.missing.get((record.comm, record.seq))
                if absent:
                    lines.append('    (ranks {} of {} never joined this '
                                 'collective)'.format(_ranges(absent),
                                                      record.comm))
        for rank, name, record in self.threads:
            lines.append('  rank {} (thread {!r}): blocked in {}'.format(
                rank, name, record.describe()))
        if self.running:
            lines.append('  ranks still running: {}'.format(
                _ranges(self.running)))
        if self.finished and self.kind != 'unmatched':
            lines.append('  ranks finished: {}'.format(
                _ranges(self.finished)))
        # A rendezvous send still blocked is already listed as pending.
        shown = {id(r) for r in self.pending.values()}
        unmatched = [(d, m) for d, m in self.unmatched
                     if id(m.record) not in shown]
        for dest, msg in unmatched[:50]:
            lines.append('  message from rank {} to rank {} never '
                         'received: {}'.format(msg.record.rank, dest,
                                               msg.record.describe()))
        if len(unmatched) > 50:
            lines.append('  ... and {} more messages'.format(
                len(unmatched) - 50))
        unreceived = [(d, r) for d, r in self.unreceived
                      if d not in self.pending]
        for dest, record in unreceived[:50]:
            lines.append('  receive posted by rank {} never matched: '
                         '{}'.format(dest, record.describe()))
        self.hints = []
        for fn in explainers():
            try:
                hint = fn(self)
            except Exception as e:  # noqa: BLE001 -- a hint must not hide
                hint = 'explainer {} failed: {!r}'.format(
                    getattr(fn, '__name__', fn), e)
            if hint:
                self.hints.append(hint)
        for hint in self.hints:
            lines.append('  hint: {}'.format(hint))
        return '\n'.join(lines)


_GROUP_ABOVE = 16


def _group_pending(pending):
    """[(ranks, record)]: one line per rank, or per identical call when
    many ranks wait (reports at 1,024 ranks stay readable)."""
    if len(pending) <= _GROUP_ABOVE:
        return [([r], pending[r]) for r in sorted(pending)]
    groups = {}
    for rank in sorted(pending):
        record = pending[rank]
        groups.setdefault(record.describe(), ([], record))[0].append(rank)
    return sorted(groups.values(), key=lambda g: g[0][0])


def _ranges(ranks):
    """[0, 1, 2, 5] -> '0-2, 5' (reports at 1,024 ranks stay short)."""
    out, start, prev = [], None, None
    for r in sorted(ranks):
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            out.append(_span(start, prev))
            start = prev = r
    if start is not None:
        out.append(_span(start, prev))
    return ', '.join(out)


def _span(a, b):
    return str(a) if a == b else '{}-{}'.format(a, b)
