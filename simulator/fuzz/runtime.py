"""Helpers every generated fuzz program carries (pasted in as source).

A fuzz program must run unmodified under ``mpiexec`` with plain mpi4py,
where :mod:`simulator` may not be importable, so :mod:`simulator.fuzz.gen`
copies this module's source into each program instead of importing it.
Nothing here touches MPI: the program passes in what it observed.

Each rank appends one line per observation to ``<logdir>/rank<W>.log``
(flushed at once, so a crash still leaves the lines before it) and prints
a digest of all its lines at the end.
"""
import hashlib
import os
import sys

import numpy as np

_FUZZ_LINES = []
_FUZZ_FILE = []


def fuzz_open_log(world_rank):
    """Start this rank's log (directory from argv[1], else no file)."""
    if len(sys.argv) > 1:
        path = os.path.join(sys.argv[1], 'rank{}.log'.format(world_rank))
        _FUZZ_FILE.append(open(path, 'w'))


def fuzz_io_dir():
    """This run's directory for MPI-IO files (``LOGDIR/io``): the
    simulated and the mpiexec run each have their own LOGDIR."""
    path = os.path.join(sys.argv[1], 'io')
    os.makedirs(path, exist_ok=True)
    return path


def fuzz_exception(exc):
    """What a bad call's exception says the same way in every MPI: its
    type and, for ``MPI.Exception``, its error class."""
    if hasattr(exc, 'Get_error_class'):
        return (type(exc).__name__, exc.Get_error_class())
    return (type(exc).__name__,)


def fuzz_freed(handle):
    """``handle`` after its Free (a freed handle for a bad call)."""
    handle.Free()
    return handle


def fuzz_info():
    """A new Info object with one key, ``k``."""
    from mpi4py import MPI
    info = MPI.Info.Create()
    info.Set('k', 'v')
    return info


def fuzz_format(value):
    """A canonical, exact text for an observed value.

    Arrays by dtype, shape and raw bytes (bit-exact, NaN payloads and
    signed zeros included); containers element by element, so arrays
    inside objects stay exact too; anything else by ``repr``.
    """
    if isinstance(value, np.ndarray):
        return 'array({},{},{})'.format(value.dtype.str, value.shape,
                                        np.ascontiguousarray(value)
                                        .tobytes().hex())
    if isinstance(value, list):
        return '[' + ','.join(fuzz_format(v) for v in value) + ']'
    if isinstance(value, tuple):
        return '(' + ','.join(fuzz_format(v) for v in value) + ',)'
    if isinstance(value, dict):
        return '{' + ','.join('{}:{}'.format(fuzz_format(k), fuzz_format(v))
                              for k, v in value.items()) + '}'
    if isinstance(value, np.generic):
        return '{}:{}'.format(type(value).__name__, value.tobytes().hex())
    if isinstance(value, float):
        return 'float:' + value.hex()
    return '{}:{!r}'.format(type(value).__name__, value)


def rec(op_id, label, value):
    """Record one observation of operation ``op_id``."""
    line = '{}\t{}\t{}'.format(op_id, label, fuzz_format(value))
    _FUZZ_LINES.append(line)
    if _FUZZ_FILE:
        _FUZZ_FILE[0].write(line + '\n')
        _FUZZ_FILE[0].flush()


def rec_status(op_id, label, status, datatype=None):
    """Record what a receive's Status says (source, tag, count)."""
    count = status.Get_count() if datatype is None else \
        status.Get_count(datatype)
    rec(op_id, label, (status.Get_source(), status.Get_tag(), count))


def fuzz_finish(world_rank):
    """Print this rank's digest line and close its log."""
    digest = hashlib.sha256('\n'.join(_FUZZ_LINES).encode()).hexdigest()
    print('fuzz-digest rank={} records={} sha256={}'.format(
        world_rank, len(_FUZZ_LINES), digest[:32]))
    if _FUZZ_FILE:
        _FUZZ_FILE.pop().close()


def _fuzz_rng(op_id, rank, salt):
    return np.random.RandomState((op_id * 1009 + rank * 7919 + salt)
                                 % (2 ** 32))


def data(op_id, rank, dtype, count, kind='any', salt=0):
    """Deterministic contents for rank ``rank`` of operation ``op_id``.

    ``kind`` keeps values valid for what the operation does with them:
    'any' (transport only: NaN, infinities, -0.0 included), 'sum',
    'prod' (close to 1, so products of a few ranks stay finite),
    'cmp' (no NaN or signed-zero ties, whose MAX/MIN result Open MPI
    leaves to the CPU's vector unit) and 'logic' (many zeros).
    """
    rng = _fuzz_rng(op_id, rank, salt)
    dt = np.dtype(dtype)
    if dt.kind == 'b':
        return rng.randint(0, 2, count).astype(dt)
    if dt.kind in 'iu':
        info = np.iinfo(dt)
        if kind == 'prod':
            values = rng.randint(-3 if dt.kind == 'i' else 0, 4, count)
        elif kind == 'logic':
            values = rng.randint(0, 3, count) * rng.randint(1, 100, count)
        elif kind == 'sum' and dt.itemsize <= 2:
            # Open MPI's vectorised SUM saturates 8- and 16-bit integers
            # while its scalar tail wraps: stay clear of overflow there.
            values = rng.randint(info.min // 8, info.max // 8 + 1, count)
        else:
            values = rng.randint(max(info.min, -2 ** 62),
                                 min(info.max, 2 ** 62), count,
                                 dtype=np.int64)
        return values.astype(dt)
    if dt.kind == 'c':
        part = np.dtype('f{}'.format(dt.itemsize // 2))
        values = np.empty(count, dt)
        # Set the parts directly: 1j * inf would make NaNs of its own.
        values.real = data(op_id, rank, part, count, kind, salt + 1)
        values.imag = data(op_id, rank, part, count, kind, salt + 2)
        return values
    if kind == 'prod':
        values = rng.uniform(0.5, 2.0, count)
    else:
        values = rng.standard_normal(count) * 10.0 ** rng.randint(-3, 4,
                                                                  count)
    values = values.astype(dt)
    if kind in ('any', 'sum') and count:
        specials = [-0.0] if kind == 'sum' else [np.nan, np.inf, -np.inf,
                                                 -0.0, 0.0]
        picks = rng.randint(0, 8, count) == 0
        values[picks] = rng.choice(specials, int(picks.sum()))
    return values


def fuzz_concat(dtype, parts):
    """The arrays ``parts`` end to end (an empty array of ``dtype`` when
    there are none)."""
    return np.concatenate([np.zeros(0, dtype)] + list(parts)).astype(dtype)


def fuzz_span(datatype, count):
    """Bytes from a buffer's start that ``count`` copies of
    ``datatype`` reach (its own extents, asked at run time)."""
    if count == 0:
        return 0
    extent = datatype.Get_extent()[1]
    true_lb, true_extent = datatype.Get_true_extent()
    return (count - 1) * extent + true_lb + true_extent


def fill(dtype, count):
    """A receive buffer prefilled with a recognisable pattern, so that
    elements an operation must not write are checked too."""
    return (np.arange(count) % 7 + 100).astype(dtype)
