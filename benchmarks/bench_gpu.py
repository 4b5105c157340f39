"""GPU benchmarks: ours vs the raw limit vs ChainerMN 7.8.1, on CuPy arrays.

Run on a machine with GPUs:  mpiexec -n N python benchmarks/bench_gpu.py

Rows (ResNet-50 shapes, 161 arrays, 25.6 M float32, every rank on GPU
``rank % count``):
- ``pure_nccl`` mean_grad vs one NCCL allReduce + scale of a packed device
  buffer (needs a GPU per rank: NCCL refuses two ranks on one device);
- ``flat`` mean_grad, whose device arrays go through pinned host memory
  (the MPI here is not CUDA-aware), vs the same trip by hand: packed device
  buffer to pinned host, chunked MPI Allreduce, back; ChainerMN beside it
  is its ``non_cuda_aware`` (NCCL in the node, MPI between nodes);
- each of those twice: grads that persist (updated in place: after the
  first mean they live in one flat buffer, reduced where they lie) and new
  grad arrays at every step, as Chainer's backward makes them (packed
  into a buffer and unpacked again, one kernel each way);
- a 4 MiB device array sent one way (2+ ranks) vs its copy to pinned host,
  Send, Recv and copy to the device by hand.
Each time is the slowest rank's median, the variants run in turns.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _models
from bench_communicators import WORLD, Table, chainermn_comm, \
    fresh_grads_mean, timed_together
from mpi4py import MPI

import chainermn_lite


def synced(fn, cupy):
    def run():
        fn()
        cupy.cuda.Device().synchronize()
    return run


def chainermn_variant(name, model, cupy):
    """ChainerMN 7.8.1's mean_grad on ``model``, or None (printed why) when
    it does not run on this stack (its pure_nccl packing kernels use
    ``half``, which CUDA 13's NVRTC did not compile, 2026-11-26)."""
    cmn = chainermn_comm(name)
    if cmn is None:
        return None
    run = synced(lambda: cmn.multi_node_mean_grad(model), cupy)
    try:
        run()
    except Exception as e:  # reported, the column left empty
        if WORLD.Get_rank() == 0:
            print('ChainerMN {}: {}: {}'.format(
                name, type(e).__name__, str(e).splitlines()[0][:120]))
        return None
    return run


def device_model(device):
    model = _models.resnet50_link()
    model.to_device(device)
    return model


def packed_grads(model, cupy):
    return cupy.concatenate([p.grad.reshape(-1) for p in model.params()])


def bench_nccl(table, device, cupy, reps):
    from cupy.cuda import nccl
    ours = chainermn_lite.create_communicator('pure_nccl', mpi_comm=WORLD)
    model = device_model(device)
    ours.multi_node_mean_grad(model)          # creates the NCCL comm
    packed = packed_grads(model, cupy)
    raw_comm = ours.nccl_comm
    scale = np.float32(1.0 / WORLD.Get_size())

    def raw():
        raw_comm.allReduce(packed.data.ptr, packed.data.ptr, packed.size,
                           nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                           cupy.cuda.Stream.null.ptr)
        packed.__imul__(scale)
    fns = [synced(raw, cupy),
           synced(lambda: ours.multi_node_mean_grad(model), cupy),
           synced(fresh_grads_mean(ours, lambda: device_model(device)),
                  cupy)]
    cmn = chainermn_variant('pure_nccl', model, cupy)
    if cmn is not None:
        fns.append(cmn)
    t_raw, t_ours, t_fresh, *rest = timed_together(fns, reps)
    t_cmn = rest[0] if rest else None
    table.add('mean_grad ResNet-50 pure_nccl', t_ours, t_raw, t_cmn, 'x1.05')
    # What a training loop gets: packed and unpacked at every step.
    table.add('  pure_nccl, new grad arrays every step', t_fresh, t_raw,
              t_cmn, 'x1.05')


def bench_staged(table, device, cupy, reps, nccl_fits):
    import cupyx
    ours = chainermn_lite.create_communicator('flat', mpi_comm=WORLD)
    model = device_model(device)
    packed = packed_grads(model, cupy)
    pinned = cupyx.empty_pinned(packed.size, packed.dtype)
    step = 4 * 1024 * 1024 // 4

    def raw():
        packed.get(out=pinned)
        for s in range(0, pinned.size, step):
            WORLD.Allreduce(MPI.IN_PLACE, pinned[s:s + step], op=MPI.SUM)
        packed.set(pinned)
    fns = [synced(raw, cupy),
           synced(lambda: ours.multi_node_mean_grad(model), cupy),
           synced(fresh_grads_mean(ours, lambda: device_model(device)),
                  cupy)]
    cmn = chainermn_variant('non_cuda_aware', model, cupy) \
        if nccl_fits else None
    if cmn is not None:
        fns.append(cmn)
    t_raw, t_ours, t_fresh, *rest = timed_together(fns, reps)
    t_cmn = rest[0] if rest else None
    table.add('mean_grad ResNet-50 flat (via host)', t_ours, t_raw, t_cmn,
              'x1.25')
    table.add('  flat, new grad arrays every step', t_fresh, t_raw, t_cmn,
              'x1.25')


def bench_sendrecv(table, device, cupy, reps):
    import cupyx
    ours = chainermn_lite.create_communicator('flat', mpi_comm=WORLD)
    rank = WORLD.Get_rank()
    x = cupy.ones(1024 * 1024, cupy.float32)
    pinned = cupyx.empty_pinned(x.size, x.dtype)

    def mine():
        if rank == 0:
            ours.send(x, 1, 7)
        elif rank == 1:
            ours.recv(0, 7)

    def raw():
        if rank == 0:
            x.get(out=pinned)
            WORLD.Send(pinned, 1, 7)
        elif rank == 1:
            WORLD.Recv(pinned, 0, 7)
            cupy.asarray(pinned)
    t_raw, t_ours = timed_together([synced(raw, cupy), synced(mine, cupy)],
                                   reps)
    table.add('send/recv one-way 4 MiB device array', t_ours, t_raw, None,
              'x1.3')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--reps', type=int, default=10)
    args = parser.parse_args()
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy or no driver: nothing to measure
        if WORLD.Get_rank() == 0:
            print('bench_gpu: no GPU here ({}: {})'.format(
                type(e).__name__, e))
        return
    import chainer
    device = chainer.get_device('@cupy:{}'.format(WORLD.Get_rank() % count))
    device.use()
    size = WORLD.Get_size()
    table = Table()
    nccl_fits = size <= count
    if nccl_fits:
        bench_nccl(table, device, cupy, args.reps)
    bench_staged(table, device, cupy, args.reps, nccl_fits)
    if size >= 2:
        bench_sendrecv(table, device, cupy, args.reps)
    if WORLD.Get_rank() == 0:
        print('{} rank(s), {} GPU(s): {}'.format(
            size, count, cupy.cuda.runtime.getDeviceProperties(0)[
                'name'].decode()))
        table.show()
        if not nccl_fits:
            print('pure_nccl rows left out: {} ranks on {} GPU(s) (NCCL '
                  'needs a GPU per rank)'.format(size, count))


if __name__ == '__main__':
    main()
