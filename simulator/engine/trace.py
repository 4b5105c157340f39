"""Call records: which rank made which call, from which line.

Capturing a stack must be cheap (it happens on every MPI call), so
:func:`capture` keeps only each frame's code object and instruction
offset; :func:`resolve` turns them into (file, line, function) triples
(a line-table lookup per frame, several times the cost of the capture),
and :class:`CallRecord` into ``traceback.FrameSummary`` objects, only
when a report or an error message needs them.
"""
import os
import sys
import threading
import traceback

from simulator.engine.libraries import (SIMULATOR_DIR, is_library_file,
                                        is_simulator_file)

__all__ = ['capture', 'resolve', 'CallRecord', 'user_frame', 'user_site',
           'as_processes_traceback', 'program_frames']

_MAX_DEPTH = 64
_getframe = sys._getframe


def capture(skip=1):
    """Raw stack of the caller, innermost first: code objects and their
    instruction offsets (``f_lasti``), alternating; see :func:`resolve`.

    A frame's line number is not read here: ``f_lineno`` searches the
    code's line table, while the offset is a field; the offset pins the
    line as it is now (the frame moves on after the call).
    """
    frame = _getframe(skip)
    out = []
    append = out.append
    depth = _MAX_DEPTH
    while frame is not None and depth:
        append(frame.f_code)
        append(frame.f_lasti)
        frame = frame.f_back
        depth -= 1
    return out


def _line(code, offset):
    """The line of instruction ``offset`` in ``code`` (what ``f_lineno``
    said while the frame was there)."""
    if offset < 0:
        return code.co_firstlineno      # not started yet
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


def resolve(raw):
    """``[(file, line, name)]`` of a :func:`capture`, innermost first."""
    return [(raw[i].co_filename, _line(raw[i], raw[i + 1]), raw[i].co_name)
            for i in range(0, len(raw), 2)]


def user_frame(frames):
    """The innermost frame of the user's own code (or the innermost) among
    ``frames`` as :func:`resolve` gives them."""
    for filename, lineno, name in frames:
        if not is_library_file(filename):
            return filename, lineno, name
    return frames[0] if frames else ('?', 0, '?')


def user_site(skip=1):
    """``'file:line'`` of the user's code that called (``skip`` frames
    up from the caller of this) into the simulator."""
    filename, lineno, _ = user_frame(resolve(capture(skip + 1)))
    return '{}:{}'.format(filename, lineno)


class CallRecord:
    """One MPI call: the op, who made it, its peer/tag/communicator.

    ``stack`` is the full stack as ``traceback.FrameSummary`` objects
    (outermost first, like ``traceback.extract_stack``); ``where`` is the
    user's own ``file:line`` and ``function`` the function it is in.
    """

    __slots__ = ('op', 'rank', 'peer', 'tag', 'comm', 'seq', 'detail',
                 '_raw', '_frames', 'time')

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
        self._frames = None
        self.time = None    # virtual start time (simulator.engine.clock)

    @property
    def frames(self):
        """``[(file, line, name)]``, innermost first (resolved once)."""
        if self._frames is None:
            self._frames = resolve(self._raw)
        return self._frames

    @property
    def stack(self):
        return [traceback.FrameSummary(f, n, name, lookup_line=False)
                for f, n, name in reversed(self.frames)]

    @property
    def where(self):
        filename, lineno, _ = user_frame(self.frames)
        return '{}:{}'.format(filename, lineno)

    @property
    def function(self):
        """The name of the user's function that made the call."""
        return user_frame(self.frames)[2]

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


_PLUMBING = tuple(os.path.join(SIMULATOR_DIR, d, '')
                  for d in ('engine', 'tools'))


def as_processes_traceback(tb):
    """The traceback a process would print: none of the launcher's
    leading frames (python has none), one frame for each call into the
    simulated MPI (mpi4py's compiled call is one frame; a program's
    callback, called from it, keeps its own frames), and none for the
    engine's own plumbing (a rank's import of its copy of a module, its
    ``warnings.warn``: in a process, the import system hides its frames
    and ``warn`` is compiled)."""
    kept, chunk = [], []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if is_simulator_file(filename):
            chunk.append(tb)
        else:
            _close_chunk(kept, chunk)
            chunk = []
            kept.append(tb)
        tb = tb.tb_next
    _close_chunk(kept, chunk)
    for tb, after in zip(kept, kept[1:]):
        tb.tb_next = after
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def _close_chunk(kept, chunk):
    """Keep the first frame of the simulated MPI in ``chunk`` (consecutive
    simulator frames after ``kept``); an engine-only chunk leaves nothing,
    nor do the import system's frames that led to it."""
    if not chunk or not kept:
        return      # none, or the launcher's leading frames
    for tb in chunk:
        if not tb.tb_frame.f_code.co_filename.startswith(_PLUMBING):
            kept.append(tb)
            return
    while kept and kept[-1].tb_frame.f_code.co_filename.startswith(
            '<frozen importlib._bootstrap'):
        kept.pop()


# -- the stack a program sees -------------------------------------------
_THREADING = threading.__file__
_RANKS = os.path.join('engine', 'ranks.py')


def _simulator_frame(frame):
    """Whether ``frame`` runs the simulator's own code."""
    return frame.f_code.co_filename.startswith(SIMULATOR_DIR)


def _starts_the_rank(frame):
    """Whether ``frame``, a simulator frame, and those below it only
    start the rank's main thread: to the program, the bottom of its
    stack, as a process's begins at its ``<module>``."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == '_rank_main' and \
                code.co_filename.endswith(_RANKS):
            return True
        if not (_simulator_frame(frame) or code.co_filename == _THREADING):
            return False
        frame = frame.f_back
    return False


def program_frames(frame):
    """``frame`` and those it was called from, outwards, as a process's
    program would see them: the simulator's frames are as mpi4py's C
    code is there, absent, and the stack of a rank's main thread ends at
    its program. (From a simulator frame: all of them.)"""
    hide = not _simulator_frame(frame)
    while frame is not None:
        if not (hide and _simulator_frame(frame)):
            yield frame
        elif _starts_the_rank(frame):
            return
        frame = frame.f_back
