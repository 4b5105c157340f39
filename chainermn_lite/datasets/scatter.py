"""Split one rank's dataset into per-rank parts.

``force_equal_length=True`` (ChainerMN's default) gives every rank
``ceil(n / size)`` examples: the last parts are padded by overlapping
their neighbours, so some examples appear on two ranks (fine for
training, wrong for exact metrics: chainer#7305). With ``False`` the
parts are disjoint, cover the dataset exactly, and differ in length by
at most one.
"""
import chainer.datasets
import numpy

from chainermn_lite.datasets import scatter_check
from chainermn_lite.parallel import grid
from chainermn_lite._checks import check_communicator

__all__ = ['DataSizeError', 'scatter_dataset', 'scatter_index',
           'index_ranges']


class DataSizeError(RuntimeError):
    """A dataset is too large (or too small) for the requested scatter."""


def index_ranges(n_total_samples, size, force_equal_length=True):
    """[(begin, end)] for ranks 0..size-1 (see the module docstring)."""
    if size <= 0:
        raise ValueError('size must be positive, got {}'.format(size))
    if n_total_samples < 0:
        raise ValueError('n_total_samples must be >= 0, got {}'
                         .format(n_total_samples))
    if force_equal_length:
        length = -(-n_total_samples // size)
        return [(n_total_samples * i // size,
                 n_total_samples * i // size + length)
                for i in range(size)]
    return grid.axis_bounds(n_total_samples, size)


def _scatter_index(n_total_samples, size, force_equal_length):
    """ChainerMN's private spelling of ``index_ranges``: ``(rank, begin,
    end)`` for each rank (scripts and ChainerMN's tests call it)."""
    for rank, (begin, end) in enumerate(
            index_ranges(n_total_samples, size, force_equal_length)):
        yield rank, begin, end


def _check_root(root, comm):
    if not 0 <= root < comm.size:
        raise ValueError('root {} is not a rank of a communicator of size '
                         '{}'.format(root, comm.size))


def scatter_index(n_total_samples, comm, root=0, force_equal_length=True,
                  check=None):
    """scatter_index(n_total_samples, comm, root=0, *,
    force_equal_length=True, check=None): this rank's ``(begin, end)``
    offsets.

    Only ``root``'s ``n_total_samples`` counts; the others may pass None.
    ``check`` (default: on; one small collective) verifies the ranges
    with ``check_scattered``.
    """
    _check_root(root, comm)
    ranges = None
    if comm.rank == root:
        ranges = index_ranges(n_total_samples, comm.size,
                              force_equal_length)
    mine = tuple(comm.scatter_obj(ranges, root=root))
    if check or check is None:
        scatter_check.check_scattered(
            mine, comm, n_total_samples if comm.rank == root else None,
            force_equal_length)
    return mine


def scatter_dataset(dataset, comm, root=0, shuffle=False, seed=None,
                    max_buf_len=256 * 1024 * 1024, force_equal_length=True,
                    check=None):
    """scatter_dataset(dataset, comm, root=0, shuffle=False, seed=None,
    max_buf_len=256 * 1024 * 1024, *, force_equal_length=True,
    check=None): this rank's ``SubDataset`` of ``root``'s dataset.

    The dataset is broadcast from ``root`` in pieces of at most
    ``max_buf_len`` bytes; other ranks' ``dataset`` is ignored. With
    ``shuffle`` the order is a permutation from ``RandomState(seed)``.
    ``check`` (default: on; one small collective) verifies the parts and
    the order with ``check_scattered``.
    """
    check_communicator(comm, 'scatter_dataset')
    _check_root(root, comm)
    if max_buf_len <= 0 or max_buf_len > 2 ** 31 - 1:
        raise DataSizeError('max_buf_len must be in [1, 2**31 - 1], got {}'
                            .format(max_buf_len))
    payload = None
    if comm.rank == root:
        if dataset is None:
            raise ValueError('scatter_dataset: the root rank {} has no '
                             'dataset (None)'.format(root))
        order = None
        if shuffle:
            order = numpy.random.RandomState(seed).permutation(len(dataset))
        payload = (dataset, order)
    dataset, order = comm.bcast_obj(payload, max_buf_len=max_buf_len,
                                    root=root)
    begin, end = scatter_index(len(dataset), comm, root,
                               force_equal_length=force_equal_length,
                               check=False)
    part = chainer.datasets.SubDataset(dataset, begin, end, order)
    if check or check is None:
        scatter_check.check_scattered(part, comm,
                                      force_equal_length=force_equal_length)
    return part
