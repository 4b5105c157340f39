"""Explain broken model-parallel graphs in the simulator's reports.

chainermn_lite's ``functions.send`` / ``recv`` communicate in forward and
again in backward (the gradients go the other way, on their own wire tag,
see :mod:`chainermn_lite.functions._wire`). When a rank's graph does not
reach a ``send`` (its delegate variable was dropped: the model-parallel
guide's forgotten ``delegate_variable`` or two sends without
``pseudo_connect``), that send's backward never runs: the peer's gradient
is never received (eager sends: a message left over; rendezvous: a
deadlock), or a rank waits forever for a gradient. The explainer reads the
recorded stacks of a deadlock or unmatched-message report, recognises the
forward / backward frames of those functions and says which rank's send or
recv was never back-propagated, and how to fix it.

The simulator finds it through the ``simulator.explainers`` entry point
that chainermn_lite declares (see setup.py), once a program has imported
chainermn_lite; this module needs nothing from the simulator: a report is
read through its documented attributes (``pending``, ``unmatched``,
``finished``, ``history``; records' ``op``, ``rank``, ``peer``, ``tag``,
``comm``, ``stack``, ``where``).
"""
import os

from chainermn_lite.functions import _wire, point_to_point

__all__ = ['explain_model_parallel']

_P2P_FILE = os.path.abspath(point_to_point.__file__)
_FIX = ('A send\'s backward only runs if backward reaches its delegate '
        'variable: pass it to the next recv (recv(..., delegate_variable='
        'phi)), or join it to what the model returns with pseudo_connect '
        '(psi = pseudo_connect(phi1, phi2) for two sends), or return it; '
        'MultiNodeChainList does this for you.')


def _phase(record):
    """'forward' / 'backward' if the call comes from functions.send/recv."""
    for frame in reversed(record.stack):       # innermost first
        if os.path.abspath(frame.filename) == _P2P_FILE and \
                frame.name in ('forward', 'backward'):
            return frame.name
    return None


def _user_line(record):
    """The user's function and line that led to the call."""
    return '{} ({})'.format(record.function, record.where)


def _is_send(record):
    return 'send' in record.op.lower()


def _state_of(report, rank):
    record = report.pending.get(rank)
    if record is not None:
        phase = _phase(record)
        return 'is blocked in {}{} at {}'.format(
            record.op, ' ({} phase of a model-parallel function)'.format(
                phase) if phase else '', _user_line(record))
    if rank in report.finished:
        return 'has finished'
    return 'is still running'


def _findings(report):
    """(rank, peer, user tag, what, record) of backward-phase calls."""
    seen = set()
    out = []
    items = [(r, rec, 'blocked') for r, rec in report.pending.items()]
    items += [(msg.record.rank, msg.record, 'left over')
              for _, msg in report.unmatched]
    for rank, record, how in items:
        if record.tag is None or record.tag < 0 or \
                _phase(record) != _wire.BACKWARD:
            continue
        key = (rank, record.peer, record.tag, _is_send(record))
        if key in seen:
            continue
        seen.add(key)
        out.append((rank, record.peer, _wire.user_tag(record.tag)[0], how,
                    record))
    return out


def _forward_send_lines(report, rank, record, tag):
    """Where the peer's forward sends to ``rank`` on ``tag`` were made.

    The last few such messages are remembered by the world; several call
    sites on one tag (two sends, one forgotten) are all named.
    """
    recent = report.history.get((rank, record.comm, record.peer,
                                 _wire.forward_tag(tag)))
    lines = []
    for forward in recent or ():
        line = _user_line(forward)
        if line not in lines:
            lines.append(line)
    return ' or '.join(lines)


def explain_model_parallel(report):
    """Hint for reports involving chainermn_lite.functions send/recv."""
    lines = []
    for rank, peer, tag, how, record in _findings(report):
        if _is_send(record):
            forward = _forward_send_lines(report, rank, record, tag)
            lines.append(
                'rank {r} sent the gradient of its functions.recv(rank={p}, '
                'tag={t}) in backward (from {where}), but rank {p} never ran '
                'the backward of its matching functions.send(x, rank={r}, '
                'tag={t}){sent_at} (the gradient is {how}; rank {p} '
                '{state}).'.format(
                    r=rank, p=peer, t=tag, how=how,
                    where=_user_line(record),
                    sent_at=', sent in forward from ' + forward
                    if forward else '',
                    state=_state_of(report, peer)))
        else:
            lines.append(
                'rank {r} waits in the backward of its functions.send(x, '
                'rank={p}, tag={t}) (from {where}) for a gradient that rank '
                '{p} never sent: rank {p} never back-propagated its '
                'functions.recv(rank={r}, tag={t}) (rank {p} {state}).'.format(
                    r=rank, p=peer, t=tag, where=_user_line(record),
                    state=_state_of(report, peer)))
    if not lines:
        return None
    return 'model parallel: ' + ' '.join(lines) + ' ' + _FIX
