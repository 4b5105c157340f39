"""Timelines of real runs: ``CHAINERMN_LITE_TIMELINE=FILE mpiexec ...``.

With the environment variable set, every communicator that
:func:`~chainermn_lite.create_communicator` makes records its
communicating calls (the watchdog's list: p2p, collectives, ``*_obj``,
``bcast_data``, ``multi_node_mean_grad``, ``split``) in wall time, per
rank. At exit each process writes its ranks' part, ``FILE.rank<N>.json``;
the last part written merges them all into ``FILE``, a Chrome trace
(Trace Event format, the one ``python -m simulator --timeline`` writes
in virtual time): one track per rank, a span per call (op, peer, tag,
root, bytes, communicator), the gaps between calls as compute spans, and
an arrow from each ``send`` to the ``recv`` that got it (matched in
order per sender, receiver and tag, as MPI delivers them). Parts left
unmerged (a rank died) merge with::

    python -m chainermn_lite.timeline FILE

Off (the variable unset), communicators keep their plain methods. Ranks
on several hosts compare ``time.time()`` readings, so the hosts' clocks
should be synchronised (NTP) for the arrows to point forward.
"""
import atexit
import functools
import glob
import inspect
import json
import os
import sys
import threading
import time

__all__ = ['TIMELINE_ENV', 'record', 'flush', 'merge', 'main']

TIMELINE_ENV = 'CHAINERMN_LITE_TIMELINE'
_US = 1e6


class _Recorder:
    """This process's recorded calls for one file: rank -> [event]."""

    def __init__(self, path):
        self.path = path
        self.size = None
        self.ranks = {}
        self.local = threading.local()
        self.lock = threading.Lock()

    def write(self):
        """Write each rank's part; merge when every part is there."""
        with self.lock:
            ranks, self.ranks = self.ranks, {}
        for rank, events in sorted(ranks.items()):
            part = '{}.rank{}.json'.format(self.path, rank)
            _dump({'rank': rank, 'size': self.size, 'events': events}, part)
        parts = _parts(self.path)
        if ranks and len(parts) >= (self.size or 0):
            try:
                merge(self.path)
                for part in parts:
                    os.remove(part)
            except (OSError, ValueError):
                pass    # another rank merged, or `python -m ... FILE` will


_recorders = {}         # path -> _Recorder
_recorders_lock = threading.Lock()


def flush():
    """Write the recorded ranks' parts now (normally done at exit) and
    merge those complete; recording goes on into new parts."""
    with _recorders_lock:
        recorders = list(_recorders.values())
    for recorder in recorders:
        recorder.write()


atexit.register(flush)


def _dump(data, path):
    tmp = '{}.{}.{}.tmp'.format(path, os.getpid(), threading.get_ident())
    with open(tmp, 'w') as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _parts(path):
    return sorted(glob.glob(glob.escape(path) + '.rank*.json'))


def _nbytes(value):
    if hasattr(value, 'nbytes'):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0


_PEER = ('dest', 'source', 'root')


def _recorded(comm, name, rank, recorder):
    method = getattr(comm, name)
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        signature = None
    local = recorder.local

    @functools.wraps(method)
    def call(*args, **kwargs):
        depth = getattr(local, 'depth', 0)
        if depth:                   # a call inside a recorded call
            return method(*args, **kwargs)
        local.depth = 1
        start = time.time()
        try:
            return method(*args, **kwargs)
        finally:
            end = time.time()
            local.depth = 0
            info = {'comm': getattr(comm, 'name', None)}
            if signature is not None:
                try:
                    bound = signature.bind(*args, **kwargs).arguments
                except TypeError:
                    bound = {}
                for key in _PEER + ('tag',):
                    if isinstance(bound.get(key), int):
                        info[key] = bound[key]
                if name == 'send':
                    info['bytes'] = _nbytes(bound.get('data'))
                elif name == 'send_exact':
                    info['bytes'] = _nbytes(bound.get('arrays'))
            recorder.ranks.setdefault(rank, []).append(
                (name, start, end, info))
    return call


def record(comm, methods):
    """Record ``comm``'s ``methods`` into the timeline named by
    ``CHAINERMN_LITE_TIMELINE``; a no-op when it is unset."""
    path = os.environ.get(TIMELINE_ENV, '').strip()
    if not path:
        return comm
    from chainermn_lite._mpi import mpi_module_of
    world = mpi_module_of(comm.mpi_comm).COMM_WORLD
    rank = world.Get_rank()
    path = os.path.abspath(path)
    with _recorders_lock:
        recorder = _recorders.get(path)
        if recorder is None:
            recorder = _recorders[path] = _Recorder(path)
        # Parts expected: the ranks of the largest communicator recorded
        # (a job may run on part of COMM_WORLD); tracks are world ranks.
        recorder.size = max(recorder.size or 0, comm.size)
    for name in methods:
        # object.__setattr__: CommunicatorBase may turn attributes into
        # configs.
        object.__setattr__(comm, name,
                           _recorded(comm, name, rank, recorder))
    return comm


def _flows(parts):
    """Arrows: the n-th send a -> b with tag t reaches b's n-th receive
    from a with tag t."""
    sends, recvs = {}, {}
    for part in parts:
        rank = part['rank']
        for i, (name, _, _, info) in enumerate(part['events']):
            if name in ('send', 'send_obj', 'send_exact') and \
                    'dest' in info:
                key = (rank, info['dest'], info.get('tag'))
                sends.setdefault(key, []).append((rank, i))
            elif name in ('recv', 'recv_obj', 'recv_exact') and \
                    'source' in info:
                key = (info['source'], rank, info.get('tag'))
                recvs.setdefault(key, []).append((rank, i))
    pairs = []
    for key, out in sends.items():
        pairs.extend(zip(out, recvs.get(key, ())))
    return pairs


def merge(path):
    """Merge ``path``'s per-rank parts into one Chrome trace at ``path``;
    returns the number of ranks merged."""
    parts = []
    for name in _parts(path):
        with open(name) as f:
            parts.append(json.load(f))
    if not parts:
        raise ValueError('no timeline parts {}.rank*.json to merge'.format(
            path))
    origin = min((e[1] for p in parts for e in p['events']), default=0.0)
    events = [{'name': 'process_name', 'ph': 'M', 'pid': 0, 'tid': 0,
               'args': {'name': 'measured (wall time)'}}]
    flows = {}
    for n, ((rs, i), (rr, j)) in enumerate(_flows(parts)):
        flows[(rs, i)] = ('s', n)
        flows[(rr, j)] = ('f', n)
    for part in sorted(parts, key=lambda p: p['rank']):
        rank = part['rank']
        events.append({'name': 'thread_name', 'ph': 'M', 'pid': 0,
                       'tid': rank, 'args': {'name': 'rank {}'.format(
                           rank)}})
        events.append({'name': 'thread_sort_index', 'ph': 'M', 'pid': 0,
                       'tid': rank, 'args': {'sort_index': rank}})
        last = origin
        for i, (name, start, end, info) in enumerate(part['events']):
            ts, dur = (start - origin) * _US, (end - start) * _US
            if start > last:
                events.append({'name': 'compute', 'ph': 'X', 'pid': 0,
                               'tid': rank, 'cat': 'compute',
                               'ts': (last - origin) * _US,
                               'dur': (start - last) * _US})
            last = max(last, end)
            events.append({'name': name, 'ph': 'X', 'pid': 0, 'tid': rank,
                           'cat': 'mpi', 'ts': ts, 'dur': dur,
                           'args': {k: v for k, v in info.items()
                                    if v is not None}})
            flow = flows.get((rank, i))
            if flow is not None:
                event = {'name': 'message', 'cat': 'message', 'ph': flow[0],
                         'id': flow[1], 'pid': 0, 'tid': rank,
                         'ts': ts + dur / 2}
                if flow[0] == 'f':
                    event['bp'] = 'e'
                events.append(event)
    _dump({'traceEvents': events, 'displayTimeUnit': 'ms',
           'otherData': {'clock': 'wall', 'ranks': len(parts)}}, path)
    return len(parts)


def main(argv=None):
    """``python -m chainermn_lite.timeline FILE``: merge FILE's parts."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith('-'):
        sys.stderr.write('usage: python -m chainermn_lite.timeline FILE '
                         '(merges FILE.rank*.json into FILE)\n')
        return 2
    try:
        n = merge(argv[0])
    except ValueError as error:
        sys.stderr.write('{}\n'.format(error))
        return 1
    print('merged {} ranks into {}'.format(n, argv[0]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
