"""Timelines and scaling tables from a virtual-time run.

:func:`write_timeline` writes a run's spans as a Chrome trace (the Trace
Event format that Perfetto and ``chrome://tracing`` open): one process
(the job), one track (thread) per rank, a span for each stretch of
computation and for each MPI call (op, peer, tag, bytes, communicator,
the collective algorithm charged), and a flow arrow from each send to
its receive. chainermn_lite writes the same format from a real run
(``CHAINERMN_LITE_TIMELINE``), so the two open side by side.
:func:`scaling_table` formats runs at several sizes; :func:`to_svg`
draws a trace as a picture (``python -m simulator.tools.timeline FILE.json
-o FILE.svg``), for documents that cannot embed Perfetto.
"""
import argparse
import json
import sys
import zlib

__all__ = ['trace_events', 'write_timeline', 'scaling_table', 'to_svg',
           'main']

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
    ``rows`` of (size, VirtualTime), relative to the first size.

    The time is the slowest rank's, from its first MPI call to its end:
    start-up before it (imports, which a simulation pays only in its
    first run) is left out."""
    lines = ['{:>6} {:>12} {:>10} {:>10} {:>12} {:>12} {:>9}'.format(
        'ranks', 'time s', 'speed-up', 'efficiency', 'compute s',
        'comm s', 'waiting s')]
    base_size, base = rows[0][0], None
    for size, clock in rows:
        c = max(clock.clocks, key=lambda c: c.since_first_call())
        t = c.since_first_call()
        if base is None:
            base = t
        speedup = base / t if t > 0 else float('nan')
        efficiency = speedup * base_size / size
        lines.append('{:>6} {:>12.6f} {:>10.2f} {:>9.0f}% {:>12.6f} '
                     '{:>12.6f} {:>9.6f}'.format(
                         size, t, speedup, efficiency * 100, c.compute,
                         c.comm, c.wait))
    lines.append('(predicted by virtual time on {}: the slowest rank from '
                 'its first MPI call to its end; speed-up relative to {} '
                 'ranks)'.format(rows[0][1].machine.name, base_size))
    return '\n'.join(lines)


_COMPUTE = '#c8c8c8'
_ROW, _LABEL = 24, 60


def _colour(name):
    hue = zlib.crc32(name.encode()) % 360
    return 'hsl({},60%,55%)'.format(hue)


def _window(events, start, stop):
    """Events within [start, stop) microseconds, shifted to start at 0."""
    kept = []
    for e in events:
        if 'ts' not in e:
            kept.append(e)
            continue
        end = e['ts'] + e.get('dur', 0)
        if end < start or e['ts'] >= stop:
            continue
        e = dict(e)
        if e['ph'] == 'X':
            e['dur'] = min(end, stop) - max(e['ts'], start)
        e['ts'] = max(e['ts'], start) - start
        kept.append(e)
    return kept


def to_svg(trace, width=1000, window=None):
    """An SVG picture of a Trace Event dict: one row per track, a box per
    span (grey: compute; one colour per MPI call), lines for arrows;
    ``window`` = (start, stop) seconds draws only that stretch."""
    events = trace['traceEvents']
    if window is not None:
        events = _window(events, window[0] * _US, window[1] * _US)
    spans = [e for e in events if e['ph'] == 'X']
    tids = sorted({e['tid'] for e in events if 'tid' in e})
    row = {tid: i for i, tid in enumerate(tids)}
    end = max((e['ts'] + e['dur'] for e in spans), default=1.0) or 1.0
    scale = (width - _LABEL - 10) / end
    height = _ROW * len(tids) + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
           'font-family="sans-serif" font-size="11">'.format(width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    for tid, i in row.items():
        out.append('<text x="4" y="{}">rank {}</text>'.format(
            i * _ROW + 16, tid))
    for e in spans:
        x = _LABEL + e['ts'] * scale
        w = max(e['dur'] * scale, 0.5)
        fill = _COMPUTE if e.get('cat') == 'compute' else _colour(e['name'])
        out.append('<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" '
                   'fill="{}"><title>{} {:.1f} us</title></rect>'.format(
                       x, row[e['tid']] * _ROW + 4, w, _ROW - 8, fill,
                       e['name'], e['dur']))
    starts = {e['id']: e for e in events if e['ph'] == 's'}
    for e in events:
        if e['ph'] == 'f' and e['id'] in starts:
            a = starts[e['id']]
            out.append('<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" '
                       'stroke="black" stroke-width="0.6"/>'.format(
                           _LABEL + a['ts'] * scale,
                           row[a['tid']] * _ROW + _ROW // 2,
                           _LABEL + e['ts'] * scale,
                           row[e['tid']] * _ROW + _ROW // 2))
    names = sorted({e['name'] for e in spans if e.get('cat') != 'compute'})
    x = _LABEL
    for name in ['compute'] + names:
        out.append('<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
                   '<text x="{}" y="{}">{}</text>'.format(
                       x, height - 18, _COMPUTE if name == 'compute' else
                       _colour(name), x + 13, height - 9, name))
        x += 20 + 7 * len(name)
    out.append('</svg>')
    return '\n'.join(out)


def main(argv=None):
    """``python -m simulator.tools.timeline FILE.json -o FILE.svg``."""
    parser = argparse.ArgumentParser(
        prog='python -m simulator.tools.timeline',
        description='Draw a Chrome trace (from --timeline or '
        'CHAINERMN_LITE_TIMELINE) as an SVG picture.')
    parser.add_argument('trace')
    parser.add_argument('-o', '--output', required=True)
    parser.add_argument('--width', type=int, default=1000)
    parser.add_argument('--window', default=None, metavar='START,STOP',
                        help='draw only these seconds of the run')
    options = parser.parse_args(argv)
    window = None
    if options.window is not None:
        try:
            window = tuple(float(x) for x in options.window.split(','))
        except ValueError:
            window = ()
        if len(window) != 2 or window[0] >= window[1]:
            parser.error('--window takes START,STOP seconds, got '
                         '{!r}'.format(options.window))
    with open(options.trace) as f:
        trace = json.load(f)
    with open(options.output, 'w') as f:
        f.write(to_svg(trace, options.width, window))
    return 0


if __name__ == '__main__':
    sys.exit(main())
