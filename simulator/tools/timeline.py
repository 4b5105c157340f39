"""Timelines and scaling tables from a virtual-time run.

:func:`write_timeline` writes a run's spans as a Chrome trace (the Trace
Event format that Perfetto and ``chrome://tracing`` open): one process
(the job), one track (thread) per rank, a span for each stretch of
computation and for each MPI call (op, peer, tag, bytes, communicator,
the collective algorithm charged), and a flow arrow from each send to
its receive. chainermn_lite writes the same format from a real run
(``CHAINERMN_LITE_TIMELINE``), so the two open side by side.
:func:`scaling_table` formats runs at several sizes.
"""
import json

__all__ = ['trace_events', 'write_timeline', 'scaling_table']

_US = 1e6       # Trace Event timestamps are microseconds


def trace_events(clock, label='simulated (virtual time)'):
    """The Trace Event list of ``clock``'s recorded spans."""
    events = [{'name': 'process_name', 'ph': 'M', 'pid': 0, 'tid': 0,
               'args': {'name': '{} on {}'.format(label,
                                                  clock.machine.name)}}]
    for rank in range(len(clock.clocks)):
        events.append({'name': 'thread_name', 'ph': 'M', 'pid': 0,
                       'tid': rank, 'args': {'name': 'rank {}'.format(
                           rank)}})
        events.append({'name': 'thread_sort_index', 'ph': 'M', 'pid': 0,
                       'tid': rank, 'args': {'sort_index': rank}})
    for op, rank, start, end, args in clock.events or ():
        ts, dur = start * _US, (end - start) * _US
        event = {'name': op, 'ph': 'X', 'pid': 0, 'tid': rank, 'ts': ts,
                 'dur': dur, 'cat': 'compute' if op == 'compute' else
                 'mpi'}
        if args:
            flow_out = args.pop('flow_out', None)
            flow_in = args.pop('flow_in', None)
            event['args'] = {k: v for k, v in args.items()
                             if v is not None}
            middle = ts + dur / 2
            if flow_out is not None:
                events.append({'name': 'message', 'cat': 'message',
                               'ph': 's', 'id': flow_out, 'pid': 0,
                               'tid': rank, 'ts': middle})
            if flow_in is not None:
                events.append({'name': 'message', 'cat': 'message',
                               'ph': 'f', 'bp': 'e', 'id': flow_in,
                               'pid': 0, 'tid': rank, 'ts': middle})
        events.append(event)
    return events


def write_timeline(clock, path):
    """Write ``clock``'s run to ``path`` as Chrome trace JSON."""
    with open(path, 'w') as f:
        json.dump({'traceEvents': trace_events(clock),
                   'displayTimeUnit': 'ms',
                   'otherData': {'clock': 'virtual',
                                 'machine': clock.machine.name}}, f)


def scaling_table(rows):
    """A table of predicted time, speed-up and parallel efficiency for
    ``rows`` of (size, VirtualTime), relative to the first size."""
    lines = ['{:>6} {:>12} {:>10} {:>10} {:>12} {:>12} {:>9}'.format(
        'ranks', 'time s', 'speed-up', 'efficiency', 'compute s',
        'comm s', 'waiting s')]
    base_size, base = rows[0][0], None
    for size, clock in rows:
        c = clock.clocks[clock.slowest()]
        if base is None:
            base = c.now
        speedup = base / c.now if c.now > 0 else float('nan')
        efficiency = speedup * base_size / size
        lines.append('{:>6} {:>12.6f} {:>10.2f} {:>9.0f}% {:>12.6f} '
                     '{:>12.6f} {:>9.6f}'.format(
                         size, c.now, speedup, efficiency * 100, c.compute,
                         c.comm, c.wait))
    lines.append('(predicted by virtual time on {}; the slowest rank\'s '
                 'run time; speed-up relative to {} ranks)'.format(
                     rows[0][1].machine.name, base_size))
    return '\n'.join(lines)
