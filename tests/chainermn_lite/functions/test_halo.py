"""halopar functions equal Chainer's own on the whole image, any grid."""
from functools import partial

import chainer
import chainer.functions as F
import numpy as np
import pytest

from chainermn_lite.functions import halo
from chainermn_lite.parallel.grid import tile_bounds

# Grids by communicator size: the mpi marker's sizes pick the rows.
GRIDS = {1: [(1, 1)], 2: [(1, 2), (2, 1)], 4: [(2, 2)], 6: [(2, 3)],
         9: [(3, 3)]}
SIZES = tuple(GRIDS)
# (H, W, ksize, stride, pad): odd sizes, uneven tiles, halos spanning
# several tiles (k=5 on 2-row tiles), corners.
CASES = [(7, 9, 3, 1, 1), (9, 7, 3, 2, 0), (11, 10, 5, 2, 1),
         (7, 8, 5, 1, 0), (6, 7, 1, 1, 0), (8, 11, 1, 2, 1)]


def _tile(a, bounds):
    (h0, h1), (w0, w1) = bounds
    return a[:, :, h0:h1, w0:w1]


def _close(actual, expected, what):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5,
                               err_msg=what)


def _check_op(mpi_comm, grid, case, full_op, halo_op, seed):
    """Forward and input gradient of one op, tile by tile."""
    height, width = case[:2]
    rs = np.random.RandomState(seed)
    # Mostly negative: a zero instead of -inf padding would show in max
    # pooling's border windows.
    x = (rs.randn(2, 3, height, width) - 1).astype(np.float32)
    x_full = chainer.Variable(x)
    y_full = full_op(x_full)
    gy = rs.randn(*y_full.shape).astype(np.float32)
    y_full.grad = gy
    y_full.backward()
    rank = mpi_comm.Get_rank()
    x_tile = chainer.Variable(np.ascontiguousarray(_tile(
        x, tile_bounds(x.shape[2:], grid, rank))))
    y_tile = halo_op(x_tile)
    out_bounds = tile_bounds(y_full.shape[2:], grid, rank)
    what = 'grid {} case {} rank {}'.format(grid, case, rank)
    _close(y_tile.array, _tile(y_full.array, out_bounds), what + ' y')
    y_tile.grad = np.ascontiguousarray(_tile(gy, out_bounds))
    y_tile.backward()
    _close(x_tile.grad, _tile(x_full.grad, tile_bounds(
        x.shape[2:], grid, rank)), what + ' gx')


@pytest.mark.mpi(sizes=SIZES)
def test_convolution_equals_chainer(mpi_comm):
    for grid in GRIDS[mpi_comm.Get_size()]:
        for i, (height, width, k, s, p) in enumerate(CASES):
            rs = np.random.RandomState(100 + i)
            W = rs.randn(4, 3, k, k).astype(np.float32)
            b = rs.randn(4).astype(np.float32)
            W_full, b_full = chainer.Variable(W), chainer.Variable(b)
            W_tile = chainer.Variable(W.copy())
            b_tile = chainer.Variable(b.copy())
            _check_op(mpi_comm, grid, (height, width, k, s, p),
                      partial(F.convolution_2d, W=W_full, b=b_full,
                              stride=s, pad=p),
                      partial(halo.halo_convolution_2d, W=W_tile, b=b_tile,
                              comm=mpi_comm, grid=grid, stride=s, pad=p),
                      seed=i)
            # Replicated weights: every rank holds the whole gradient.
            _close(W_tile.grad, W_full.grad, 'gW {} {}'.format(grid, i))
            _close(b_tile.grad, b_full.grad, 'gb {} {}'.format(grid, i))


@pytest.mark.mpi(sizes=SIZES)
def test_pooling_equals_chainer(mpi_comm):
    for grid in GRIDS[mpi_comm.Get_size()]:
        for i, case in enumerate(CASES):
            _, _, k, s, p = case
            if p >= k:
                continue  # Chainer's pooling needs pad < ksize
            window = dict(ksize=k, stride=s, pad=p)
            for cover_all in (True, False):
                _check_op(mpi_comm, grid, case,
                          partial(F.max_pooling_2d, cover_all=cover_all,
                                  **window),
                          partial(halo.halo_max_pooling_2d, comm=mpi_comm,
                                  grid=grid, cover_all=cover_all, **window),
                          seed=10 + i)
            _check_op(mpi_comm, grid, case,
                      partial(F.average_pooling_2d, **window),
                      partial(halo.halo_average_pooling_2d, comm=mpi_comm,
                              grid=grid, **window),
                      seed=20 + i)


@pytest.mark.mpi(sizes=(1, 2, 4, 6))
def test_split_chain_gather_equals_chainer(mpi_comm):
    """split_tiles -> conv -> max pool -> gather_tiles, gradient included."""
    grid = GRIDS[mpi_comm.Get_size()][-1]
    rs = np.random.RandomState(7)
    x = rs.randn(2, 2, 13, 11).astype(np.float32)
    W = rs.randn(3, 2, 3, 3).astype(np.float32)
    x_full, x_dist = chainer.Variable(x), chainer.Variable(x.copy())
    W_full, W_dist = chainer.Variable(W), chainer.Variable(W.copy())
    y_full = F.max_pooling_2d(
        F.relu(F.convolution_2d(x_full, W_full, pad=1)), 2)
    tile = halo.split_tiles(x_dist, mpi_comm, grid)
    h = F.relu(halo.halo_convolution_2d(tile, W_dist, None, mpi_comm, grid,
                                        pad=1))
    y_dist = halo.gather_tiles(halo.halo_max_pooling_2d(
        h, mpi_comm, grid, 2), mpi_comm, grid)
    _close(y_dist.array, y_full.array, 'y')
    gy = rs.randn(*y_full.shape).astype(np.float32)
    F.sum(y_full * gy).backward()
    F.sum(y_dist * gy).backward()
    _close(x_dist.grad, x_full.grad, 'gx')
    _close(W_dist.grad, W_full.grad, 'gW')


@pytest.mark.mpi(sizes=(2, 4))
def test_bad_input_names_values(mpi_comm):
    size = mpi_comm.Get_size()
    x = np.zeros((1, 1, 5, 5), np.float32)
    with pytest.raises(ValueError, match=r'grid 3x1 has 3 cells .* {} '
                       r'ranks'.format(size)):
        halo.halo_max_pooling_2d(x, mpi_comm, (3, 1), 2)
    grid = GRIDS[size][0]
    rank = mpi_comm.Get_rank()
    with pytest.raises(ValueError, match='expected an NCHW tile' if rank == 1
                       else r'rank 1 could not send its input'):
        halo.halo_max_pooling_2d(x[0] if rank == 1 else x, mpi_comm, grid, 2)
    tiny = np.zeros((1, 1, 1, 1), np.float32)
    with pytest.raises(ValueError, match='fewer rows or columns than the '
                       'grid'):
        halo.split_tiles(tiny, mpi_comm, grid)
    # Every rank passes a 3x3 tile: they cannot all be array_split pieces
    # of one image when one of them should be larger.
    odd = np.zeros((1, 1, 3 + (mpi_comm.Get_rank() == 0), 3), np.float32)
    with pytest.raises(ValueError, match=r'do not fit one full shape.*'
                       r'rank \d+ has'):
        halo.halo_average_pooling_2d(odd, mpi_comm, grid, 1)
    small = np.zeros((1, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r'the output has \d+ \w+ but the '
                       r'grid has'):
        halo.halo_max_pooling_2d(small, mpi_comm, grid, 5, 5,
                                 cover_all=False)


@pytest.mark.mpi(sizes=(4, 6), send_mode='rendezvous')
def test_exchange_needs_no_buffering(mpi_comm):
    """Every receive is posted before any wait: synchronous sends pass."""
    grid = GRIDS[mpi_comm.Get_size()][0]
    for case in CASES[:3]:
        _, _, k, s, p = case
        _check_op(mpi_comm, grid, case,
                  partial(F.average_pooling_2d, ksize=k, stride=s, pad=p),
                  partial(halo.halo_average_pooling_2d, comm=mpi_comm,
                          grid=grid, ksize=k, stride=s, pad=p), seed=3)
