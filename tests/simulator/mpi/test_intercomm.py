"""Intercommunicators: creation, point-to-point across the groups, Merge,
Dup/Split/Create, and collectives with MPI's rooted (ROOT / PROC_NULL /
remote rank) and all-to-all semantics, checked value by value in both
worlds; mismatches and deadlocks reported by the simulator."""

import numpy as np
import pytest

import simulator
from simulator.errors import CollectiveMismatchError, DeadlockError

SIZES = (2, 3, 4)


def halves(comm, MPI):
    """(color, intercommunicator): ranks below size // 2 against the
    rest, leaders the first rank of each half."""
    size, rank = comm.Get_size(), comm.Get_rank()
    color = 0 if rank < size // 2 else 1
    intra = comm.Split(color, key=0)
    inter = intra.Create_intercomm(0, comm, size // 2 if color == 0 else 0,
                                   tag=7)
    intra.Free()
    return color, inter


def world_ranks(comm, MPI, group):
    """``group``'s members as ranks of ``comm``."""
    return group.Translate_ranks(None, comm.Get_group())


@pytest.mark.mpi(sizes=SIZES)
def test_create_intercomm_sizes_groups_and_compare(mpi_comm, MPI):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    low, high = list(range(size // 2)), list(range(size // 2, size))
    mine, theirs = (low, high) if color == 0 else (high, low)
    assert inter.Is_inter() and not inter.Is_intra()
    assert inter.is_inter and type(inter) is MPI.Intercomm
    assert (inter.Get_size(), inter.Get_remote_size()) == \
        (len(mine), len(theirs))
    assert inter.Get_rank() == mine.index(rank)
    assert world_ranks(mpi_comm, MPI, inter.Get_group()) == mine
    assert world_ranks(mpi_comm, MPI, inter.Get_remote_group()) == theirs
    dup = inter.Dup()
    assert type(dup) is MPI.Intercomm
    assert MPI.Comm.Compare(inter, inter) == MPI.IDENT
    assert MPI.Comm.Compare(inter, dup) == MPI.CONGRUENT
    assert MPI.Comm.Compare(inter, mpi_comm) == MPI.UNEQUAL
    same = MPI.Comm.fromhandle(inter.handle)
    assert type(same) is MPI.Intercomm and same == inter
    with pytest.raises(TypeError):
        MPI.Intracomm(inter)
    with pytest.raises(TypeError):
        MPI.Intercomm(mpi_comm)
    # Prefix reductions belong to intracommunicators alone.
    assert not hasattr(inter, 'Scan') and not hasattr(inter, 'exscan')
    dup.Free()
    inter.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_merge_orders_groups_by_high(mpi_comm, MPI):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    low = size // 2
    # The high half asks to come first (high=False), the low half last.
    merged = inter.Merge(high=(color == 0))
    expect = rank - low if color == 1 else rank + (size - low)
    assert (merged.Get_size(), merged.Get_rank()) == (size, expect)
    assert not merged.Is_inter()
    assert merged.allgather(rank) == list(range(low, size)) + \
        list(range(low))
    # Equal ``high``: Open MPI 5.0 puts first the group whose rank 0 has
    # the higher world rank.
    for high in (False, True):
        same = inter.Merge(high=high)
        assert same.allgather(rank) == list(range(low, size)) + \
            list(range(low))
        same.Free()
    merged.Free()
    inter.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_point_to_point_names_remote_ranks(mpi_comm, MPI):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    lsize, rsize = inter.Get_size(), inter.Get_remote_size()
    # Every rank sends to every remote rank; each receives one message
    # from each remote rank, by wildcard, and learns it from the status.
    reqs = [inter.isend((rank, r), dest=r, tag=5) for r in range(rsize)]
    got = {}
    for _ in range(rsize):
        status = MPI.Status()
        assert inter.Probe(MPI.ANY_SOURCE, 5)
        sender, to = inter.recv(source=MPI.ANY_SOURCE, tag=5, status=status)
        assert to == inter.Get_rank()
        got[status.Get_source()] = sender
    MPI.Request.Waitall(reqs)
    other = list(range(size // 2, size)) if color == 0 else \
        list(range(size // 2))
    assert got == dict(enumerate(other))
    # Buffers, one named peer: remote rank 0 of each side to rank 0.
    if inter.Get_rank() == 0:
        out = np.zeros(3, 'i')
        inter.Sendrecv(np.full(3, rank, 'i'), 0, 9, out, 0, 9)
        assert list(out) == [other[0]] * 3
    with pytest.raises(MPI.Exception) as info:
        inter.send(None, dest=rsize, tag=1)
    assert info.value.Get_error_class() == MPI.ERR_RANK
    assert lsize + rsize == size
    inter.Free()


def _roots(inter, color, MPI, call):
    """Run ``call(root)`` as MPI's rooted intercommunicator collectives
    require, every rank of each group taking its turn as root: returns
    what each call gave on the receiving side, keyed by (root group,
    root rank)."""
    seen = {}
    for root_color in (0, 1):
        if color == root_color:
            for root in range(inter.Get_size()):
                call(MPI.ROOT if root == inter.Get_rank() else
                     MPI.PROC_NULL)
        else:
            for root in range(inter.Get_remote_size()):
                seen[root_color, root] = call(root)
    return seen


@pytest.mark.mpi(sizes=SIZES)
def test_rooted_buffer_collectives(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    me, rsize = inter.Get_rank(), inter.Get_remote_size()
    other0 = mpi_comm.Get_size() // 2 if color == 0 else 0

    def bcast(root):
        buf = np.full(4, rank, 'd') if root == MPI.ROOT else np.zeros(4)
        inter.Bcast(buf if root != MPI.PROC_NULL else None, root=root)
        return buf[0]
    seen = _roots(inter, color, MPI, bcast)
    assert seen == {(1 - color, r): other0 + r for r in range(rsize)}

    def gather(root):
        if root == MPI.ROOT:
            out = np.zeros((rsize, 2), 'i')
            inter.Gather(None, out, root=root)
            assert out.tolist() == [[other0 + r] * 2 for r in range(rsize)]
        elif root == MPI.PROC_NULL:
            inter.Gather(None, None, root=root)
        else:
            inter.Gather(np.full(2, rank, 'i'), None, root=root)
    _roots(inter, color, MPI, gather)

    def scatter(root):
        if root == MPI.ROOT:
            send = np.arange(rsize * 2, dtype='i').reshape(rsize, 2) + \
                100 * rank
            inter.Scatter(send, None, root=root)
        elif root == MPI.PROC_NULL:
            inter.Scatter(None, None, root=root)
        else:
            out = np.zeros(2, 'i')
            inter.Scatter(None, out, root=root)
            return out.tolist()
    seen = _roots(inter, color, MPI, scatter)
    assert seen == {(1 - color, r): [100 * (other0 + r) + 2 * me,
                                     100 * (other0 + r) + 2 * me + 1]
                    for r in range(rsize)}

    def reduce(root):
        if root == MPI.ROOT:
            out = np.zeros(3, 'l')
            inter.Reduce(None, out, op=MPI.SUM, root=root)
            return out.tolist()
        inter.Reduce(np.arange(3) + rank if root != MPI.PROC_NULL else None,
                     None, op=MPI.SUM, root=root)
    seen = {}
    for root_color in (0, 1):
        if color == root_color:
            for root in range(inter.Get_size()):
                got = reduce(MPI.ROOT if root == me else MPI.PROC_NULL)
                if root == me:
                    seen[root] = got
        else:
            for root in range(rsize):
                reduce(root)
    remote = [other0 + r for r in range(rsize)]
    assert seen == {me: [sum(remote) + k * rsize for k in range(3)]}
    inter.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_all_to_all_collectives_take_the_other_group(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    me, lsize, rsize = inter.Get_rank(), inter.Get_size(), \
        inter.Get_remote_size()
    other = [(mpi_comm.Get_size() // 2 if color == 0 else 0) + r
             for r in range(rsize)]
    inter.Barrier()

    out = np.zeros(rsize, 'i')
    inter.Allgather(np.array([rank], 'i'), out)
    assert out.tolist() == other
    req = inter.Iallgather(np.array([rank * 2], 'i'), out)
    req.Wait()
    assert out.tolist() == [2 * o for o in other]

    out = np.zeros(rsize, 'i')
    inter.Alltoall(np.array([100 * rank + r for r in range(rsize)], 'i'),
                   out)
    assert out.tolist() == [100 * o + me for o in other]

    total = np.zeros(2, 'd')
    inter.Allreduce(np.array([rank, 1.0]), total, op=MPI.SUM)
    assert total.tolist() == [sum(other), rsize]
    top = np.zeros(1, 'i')
    inter.Allreduce(np.array([rank], 'i'), top, op=MPI.MAX)
    assert top[0] == max(other)

    # Reduce_scatter_block: each rank sends a block per rank of its own
    # group and gets its block of the sum of the other group's send
    # buffers (so both groups send as many elements in all).
    block = 2 * rsize
    total = 2 * lsize * rsize
    mine = np.zeros(block, 'l')
    inter.Reduce_scatter_block(np.arange(total, dtype='l') + rank, mine,
                               op=MPI.SUM)
    whole = sum(np.arange(total, dtype='l') + o for o in other)
    assert mine.tolist() == whole[me * block:(me + 1) * block].tolist()
    with pytest.raises(ValueError, match='mismatch in send count'):
        inter.Reduce_scatter_block(np.zeros(total + lsize, 'l'), mine)
    inter.Free()


@pytest.mark.mpi(sizes=SIZES)
def test_object_collectives(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    me, rsize = inter.Get_rank(), inter.Get_remote_size()
    other = [(mpi_comm.Get_size() // 2 if color == 0 else 0) + r
             for r in range(rsize)]
    inter.barrier()
    assert inter.allgather({'rank': rank}) == [{'rank': o} for o in other]
    assert inter.alltoall([(rank, r) for r in range(rsize)]) == \
        [(o, me) for o in other]
    assert inter.allreduce(rank, op=MPI.SUM) == sum(other)
    seen = _roots(inter, color, MPI, lambda root: inter.bcast(
        ('from', rank) if root == MPI.ROOT else None, root=root))
    assert seen == {(1 - color, r): ('from', o) for r, o in enumerate(other)}

    def gather(root):
        got = inter.gather(rank, root=root)
        if root == MPI.ROOT:
            assert got == other
        else:
            assert got is None
    _roots(inter, color, MPI, gather)
    seen = _roots(inter, color, MPI, lambda root: inter.scatter(
        [rank * 10 + r for r in range(rsize)] if root == MPI.ROOT else None,
        root=root))
    assert seen == {(1 - color, r): o * 10 + me for r, o in enumerate(other)}
    inter.Free()


@pytest.mark.mpi(sizes=(2, 4))
def test_split_create_and_dup_isolate_messages(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    me = inter.Get_rank()
    # Pair rank i of each group: one-to-one intercommunicators.
    pair = inter.Split(me, 0)
    assert (pair.Get_size(), pair.Get_remote_size()) == (1, 1)
    assert pair.sendrecv(rank, dest=0, source=0) == \
        (rank + mpi_comm.Get_size() // 2) % mpi_comm.Get_size()
    # Only the leaders: a 1-to-1 intercommunicator; COMM_NULL elsewhere.
    leaders = inter.Create(inter.Get_group().Incl([0]))
    if me == 0:
        assert leaders.Get_remote_size() == 1
        leaders.Free()
    else:
        assert leaders == MPI.COMM_NULL
    # A message on the Dup never meets a receive on the original.
    dup = inter.Dup()
    if me == 0:
        dup.send('dup', dest=0, tag=1)
        inter.send('orig', dest=0, tag=1)
        assert inter.recv(source=0, tag=1) == 'orig'
        assert dup.recv(source=0, tag=1) == 'dup'
    dup.Free()
    pair.Free()
    inter.Free()


@pytest.mark.mpi(sizes=(2, 4))
def test_create_from_groups_matches_create_intercomm(mpi_comm, MPI):
    color, inter = halves(mpi_comm, MPI)
    made = MPI.Intercomm.Create_from_groups(
        inter.Get_group(), 0, inter.Get_remote_group(), 0)
    assert MPI.Comm.Compare(inter, made) == MPI.CONGRUENT
    assert made.allreduce(mpi_comm.Get_rank()) == \
        inter.allreduce(mpi_comm.Get_rank())
    made.Free()
    inter.Free()


@pytest.mark.simulator_only('a deliberate error')
def test_roots_that_disagree_are_a_collective_mismatch():
    def body(comm):
        from simulator import mpi
        color, inter = halves(comm, mpi)
        # Both leaders claim to be the root.
        inter.bcast('x', root=mpi.ROOT if inter.rank == 0 else
                    mpi.PROC_NULL)
    with pytest.raises(CollectiveMismatchError, match='roots do not agree'):
        simulator.run(body, 2, timeout=30)


@pytest.mark.simulator_only('a deliberate deadlock')
def test_a_group_that_skips_a_collective_is_a_deadlock():
    def body(comm):
        from simulator import mpi
        color, inter = halves(comm, mpi)
        if color == 0:
            inter.Barrier()
        else:
            inter.recv(source=0, tag=3)
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    text = str(info.value)
    assert 'Barrier' in text and 'recv(peer=0, tag=3' in text


@pytest.mark.simulator_only('a deliberate deadlock')
def test_a_leader_that_never_answers_is_a_deadlock():
    def body(comm):
        color = comm.rank % 2
        intra = comm.Split(color, 0)
        if color == 0:
            intra.Create_intercomm(0, comm, 1, tag=4)
        else:
            # Waits for a message of the program's, not the leaders'.
            comm.recv(source=0, tag=4)
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 2, timeout=30)
    text = str(info.value)
    assert 'rank 0: blocked in sendrecv(peer=1, tag=4' in text
    assert 'rank 1: blocked in recv(peer=0, tag=4' in text


@pytest.mark.mpi(sizes=SIZES)
def test_agree_gives_each_group_the_other_groups_and(mpi_comm, MPI):
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    color, inter = halves(mpi_comm, MPI)
    flag = 0b1011 if color == 0 else 0b1101
    if rank == size - 1:
        flag &= 0b0111
    # The last rank, always in the high group, clears bit 3.
    other = 0b1011 if color == 1 else 0b0101
    assert inter.Agree(flag) == other
    shrunk = inter.Shrink()
    assert shrunk.Is_inter()
    assert (shrunk.Get_size(), shrunk.Get_remote_size()) == \
        (inter.Get_size(), inter.Get_remote_size())
    shrunk.Free()
    inter.Free()


@pytest.mark.simulator_only('virtual time is the simulator\'s model')
def test_virtual_time_charges_messages_between_the_groups():
    from simulator.engine.clock import VirtualTime
    from simulator.engine.netmodel import Link, Machine
    latency, bandwidth, nbytes = 1e-3, 1e6, 8000
    hop = latency + nbytes / bandwidth

    def body(comm):
        from simulator import mpi
        color, inter = halves(comm, mpi)
        buf = np.zeros(nbytes, np.uint8)
        start = mpi.Wtime()
        if color == 0:
            inter.Send(buf, dest=0)
        else:
            inter.Recv(buf, source=0)
        got = mpi.Wtime()
        inter.Barrier()
        return start, got, mpi.Wtime()
    clock = VirtualTime(Machine('slow', Link('intra', latency, bandwidth)),
                        compute_scale=1e-9)
    (s0, _, end0), (_, got1, end1) = simulator.run(body, 2, clock=clock)
    # The receiver has the message one hop after the sender sent it, and
    # the Barrier of both groups ends after that.
    assert got1 - s0 == pytest.approx(hop, abs=1e-4)
    assert min(end0, end1) >= got1
