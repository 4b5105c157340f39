"""Call records: which rank made which call, from which line.

Capturing a stack must be cheap (it happens on every send and every
blocking call), so :func:`capture` keeps raw (file, line, function)
triples; :class:`CallRecord` turns them into ``traceback.FrameSummary``
objects only when a report needs them.
"""
import sys
import traceback

from simulator.engine.libraries import is_library_file

__all__ = ['capture', 'CallRecord', 'user_frame']

_MAX_DEPTH = 64


def capture(skip=1):
    """Raw stack of the caller, innermost first: [(file, line, name)]."""
    frame = sys._getframe(skip)
    out = []
    while frame is not None and len(out) < _MAX_DEPTH:
        code = frame.f_code
        out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return out


def user_frame(raw):
    """The innermost frame of the user's own code (or the innermost)."""
    for filename, lineno, name in raw:
        if not is_library_file(filename):
            return filename, lineno, name
    return raw[0] if raw else ('?', 0, '?')


class CallRecord:
    """One MPI call: the op, who made it, its peer/tag/communicator.

    ``stack`` is the full stack as ``traceback.FrameSummary`` objects
    (outermost first, like ``traceback.extract_stack``); ``where`` is the
    user's own ``file:line`` and ``function`` the function it is in.
    """

    __slots__ = ('op', 'rank', 'peer', 'tag', 'comm', 'seq', 'detail',
                 '_raw', 'time')

    def __init__(self, op, rank, peer=None, tag=None, comm=None, seq=None,
                 detail=None, raw=None):
        self.op = op
        self.rank = rank
        self.peer = peer
        self.tag = tag
        self.comm = comm
        self.seq = seq
        self.detail = detail
        self._raw = raw if raw is not None else capture(2)
        self.time = None    # virtual start time (simulator.engine.clock)

    @property
    def stack(self):
        return [traceback.FrameSummary(f, n, name, lookup_line=False)
                for f, n, name in reversed(self._raw)]

    @property
    def where(self):
        filename, lineno, _ = user_frame(self._raw)
        return '{}:{}'.format(filename, lineno)

    @property
    def function(self):
        """The name of the user's function that made the call."""
        return user_frame(self._raw)[2]

    def describe(self):
        """``op(peer=1, tag=5, comm=COMM_WORLD)`` plus the user's line."""
        parts = []
        if self.peer is not None:
            parts.append('peer={}'.format(_peer_text(self.peer)))
        if self.tag is not None:
            parts.append('tag={}'.format(
                'ANY_TAG' if self.tag == -1 else self.tag))
        if self.comm is not None:
            parts.append('comm={}'.format(self.comm))
        if self.seq is not None:
            parts.append('seq={}'.format(self.seq))
        if self.detail:
            parts.append(str(self.detail))
        return '{}({}) at {}'.format(self.op, ', '.join(parts), self.where)

    def __repr__(self):
        return '<CallRecord rank {}: {}>'.format(self.rank, self.describe())


def _peer_text(peer):
    if peer == -1:
        return 'ANY_SOURCE'
    return str(peer)
