"""Check that scattered shards are disjoint and cover their dataset.

A hand-made split (``dataset[rank::size]`` with an off-by-one, a shard
taken from another communicator's rank, ranks shuffling with different
seeds) trains on some examples twice and never on others, silently. The
check exchanges only index ranges (or index arrays for hand-made shards)
and a digest of the shuffle order in one ``allgather_obj``, and every rank
raises the same ``ScatterError`` naming ranks and indices.
``scatter_dataset`` / ``scatter_index`` run it unless ``check=False``: it
runs once, when the data is scattered, in both worlds.
"""
import numpy

from chainermn_lite.iterators import batch_check

__all__ = ['ScatterError', 'check_scattered']

_SHOWN = 8  # indices listed in a message before '...'


class ScatterError(RuntimeError):
    """Scattered shards overlap, miss examples, or disagree on the order."""


def _describe(shard, n_total_samples):
    """(n, what: ('range', b, e) or ('indices', array), order digest or
    None, problem or None) of this rank's shard."""
    order = None
    if hasattr(shard, '_dataset') and hasattr(shard, '_start'):
        # chainer.datasets.SubDataset keeps its bounds in private fields.
        n = len(shard._dataset)
        what = ('range', shard._start, shard._finish)
        order = shard._order
    elif isinstance(shard, tuple) and len(shard) == 2:
        n = n_total_samples
        what = ('range', int(shard[0]), int(shard[1]))
    else:
        n = n_total_samples
        what = ('indices', numpy.asarray(shard, dtype=numpy.int64).ravel())
    if order is None:
        return n, what, None, None
    order = numpy.asarray(order)
    problem = None
    if order.shape != (n,) or not numpy.array_equal(
            numpy.sort(order), numpy.arange(n)):
        problem = 'its shuffle order is not a permutation of range({})' \
            .format(n)
    return n, what, batch_check.batch_digest(order), problem


def _members(what, n):
    if what[0] == 'range':
        return numpy.arange(max(what[1], 0), min(what[2], n))
    return what[1][(what[1] >= 0) & (what[1] < n)]


def _holders_of(index, entries):
    ranks = []
    for rank, entry in enumerate(entries):
        what = entry[1]
        if what[0] == 'range':
            held = what[1] <= index < what[2]
        else:
            held = bool(numpy.count_nonzero(what[1] == index))
        if held:
            ranks.append(rank)
    return ranks


def _outside(what, n):
    if what[0] == 'range':
        return [i for i in (what[1], what[2] - 1)
                if what[2] > what[1] and not 0 <= i < n]
    return what[1][(what[1] < 0) | (what[1] >= n)].tolist()


def _show(indices):
    indices = [int(i) for i in indices]
    tail = ', ...' if len(indices) > _SHOWN else ''
    return '[{}{}]'.format(', '.join(map(str, indices[:_SHOWN])), tail)


def _agreed_total(entries):
    totals = {e[0] for e in entries if e[0] is not None}
    if len(totals) != 1:
        raise ScatterError(
            'check_scattered: ranks disagree on the dataset length: ' +
            ', '.join('rank {}: {}'.format(r, e[0])
                      for r, e in enumerate(entries)))
    return totals.pop()


def _verify(entries, force_equal_length):
    problems = ['rank {}: {}'.format(r, e[3])
                for r, e in enumerate(entries) if e[3]]
    if problems:
        raise ScatterError('check_scattered: ' + '; '.join(problems))
    digests = {e[2] for e in entries}
    if len(digests) > 1:
        raise ScatterError(
            'check_scattered: ranks shuffled with different orders '
            '(order digests: {})'.format(', '.join(
                'rank {}: {}'.format(r, e[2])
                for r, e in enumerate(entries))))
    n = _agreed_total(entries)
    holders = numpy.zeros(n, dtype=numpy.int64)
    members = []
    for rank, entry in enumerate(entries):
        outside = _outside(entry[1], n)
        if outside:
            raise ScatterError(
                'check_scattered: rank {} holds indices {} outside the '
                'dataset of {} examples'.format(rank, _show(outside), n))
        mine = _members(entry[1], n)
        numpy.add.at(holders, mine, 1)
        members.append(mine)
    missing = numpy.flatnonzero(holders == 0)
    if missing.size:
        raise ScatterError(
            'check_scattered: indices {} of {} examples are on no rank (of '
            '{})'.format(_show(missing), n, len(entries)))
    shared = numpy.flatnonzero(holders > 1)
    duplicates = {int(i): _holders_of(i, entries) for i in shared[:_SHOWN]}
    if shared.size and not force_equal_length:
        raise ScatterError(
            'check_scattered: shards overlap although force_equal_length='
            'False promises disjoint ones: {}{}'.format(
                '; '.join('index {} on ranks {}'.format(i, ranks)
                          for i, ranks in duplicates.items()),
                '; ...' if shared.size > _SHOWN else ''))
    lengths = [len(m) for m in members]
    padded = -(-n // len(entries))
    if shared.size and any(length != padded for length in lengths):
        raise ScatterError(
            'check_scattered: shards overlap beyond the padding of '
            'force_equal_length=True (every rank {} examples): lengths {}'
            .format(padded, lengths))
    # Padding overlaps fewer than len(entries) examples: name them all.
    return {int(i): _holders_of(i, entries) for i in shared}


def check_scattered(shard, comm, n_total_samples=None,
                    force_equal_length=True):
    """check_scattered(shard, comm, n_total_samples=None,
    force_equal_length=True): verify on every rank that the ranks' shards
    are disjoint and together cover the dataset; raise ScatterError naming
    ranks and indices otherwise.

    ``shard`` is this rank's ``SubDataset`` (from ``scatter_dataset``), its
    ``(begin, end)`` from ``scatter_index``, or an array of the dataset
    indices it holds (then ``n_total_samples`` is needed on at least one
    rank). With ``force_equal_length=True`` the padding overlap of equal
    length shards is allowed; the return value names it:
    ``{index: [ranks holding it]}`` (empty when the shards are disjoint).
    """
    entry = _describe(shard, n_total_samples)
    return _verify(comm.allgather_obj(entry), force_equal_length)
