"""Bad arguments for fuzz programs: a call made with a wrong argument
inside ``try``, recording the exception's type and, for
``MPI.Exception``, its error class (not its text: the simulator adds
detail to it), then the program goes on.

Only errors raised before any communication: a communicating call with
a bad argument is made by every rank of its communicator with the same
argument (so if one implementation took it, all ranks would still
match), and a local call (datatype constructors, groups, Info, a send
to a rank that does not exist) may be made by one rank alone. Nothing
here may start a message that no one receives: point-to-point calls are
made with arguments every MPI refuses (a negative tag, a rank outside
the communicator) or to ``PROC_NULL``.
"""
__all__ = ['OPS', 'op_bad_args']

# (code, local): ``n`` is the communicator's size, ``r`` the rank, ``a``
# a small float64 array. A local call may be made by some ranks only.
# Left out, because mpi4py 4.1 or Open MPI 5.0 has no defined result
# there: an unbound method called on a non-handle
# (``MPI.Request.Wait(5)`` crashes, ``MPI.Datatype.Get_size(None)`` is
# ERR_TYPE), a count beyond the buffer (``[a, 9, MPI.DOUBLE]``: mpi4py
# does not check it, MPI reads or writes past the array), and what Open
# MPI does not check: ``Group.Translate_ranks`` of a rank outside the
# group (crashes), ``Incl`` with a rank twice, ``Create_graph`` with an
# edge to a node that does not exist, ``Pack`` at a negative position
# (all taken); and counts that
# disagree between ranks (an ``Allgather`` receive buffer one element
# too long is MPI's error, Open MPI takes it on one rank).
CALLS = (
    ('c.Send(a, dest=n)', True),
    ('c.Send(a, dest=-3)', True),
    ('c.Send(a, dest=MPI.ANY_SOURCE)', True),
    ('c.Ssend(a, dest=n + 5)', True),
    ('c.Isend(a, dest=n)', True),
    ('c.send(1, dest=n)', True),
    ('c.isend(1, dest=-2)', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=-1)', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=MPI.ANY_TAG)', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=2 ** 31)', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=-2 ** 40)', True),
    ('c.Send(a, dest=None)', True),
    ('c.Send(a, dest="0")', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=None)', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag="x")', True),
    ('c.Send(None, dest=MPI.PROC_NULL)', True),
    ('c.Send([a, 5, MPI.DOUBLE], dest=MPI.PROC_NULL)', True),
    ('c.Send([np.zeros(3, "i1"), MPI.DOUBLE], dest=MPI.PROC_NULL)', True),
    ('c.Send([a, MPI.DATATYPE_NULL], dest=MPI.PROC_NULL)', True),
    ('c.Send([a, 1, MPI.DOUBLE, 5], dest=MPI.PROC_NULL)', True),
    ('c.Send("text", dest=MPI.PROC_NULL)', True),
    ('c.Send(a, dest=np.int64(n))', True),
    ('c.Send(a, dest=np.uint8(200))', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=np.int64(-3))', True),
    ('c.Send(a, dest=MPI.PROC_NULL, tag=1.5j)', True),
    ('MPI.SUM.Reduce_local(a, np.zeros(3))', True),
    ('MPI.SUM.Reduce_local(a, np.zeros(2, "i4"))', True),
    ('MPI.MAXLOC.Reduce_local(a, np.zeros(2))', True),
    ('MPI.INT.Pack(np.zeros(4, "i4"), np.zeros(2, "u1"), 0, c)', True),
    ('MPI.INT.Unpack(np.zeros(2, "u1"), 0, np.zeros(4, "i4"), c)', True),
    ('MPI.INT.Pack_size(-1, c)', True),
    ('MPI.INT.Pack(np.zeros(1, "i4"), np.zeros(8, "u1"), 0)', True),
    ('MPI.INT.Pack_size(1)', True),
    ('c.Probe(MPI.PROC_NULL, status="x")', True),
    ('MPI.Request.Waitall([MPI.REQUEST_NULL], statuses=5)', True),
    ('MPI.Status().Get_count(None)', True),
    ('MPI.Status().Get_elements(MPI.DATATYPE_NULL)', True),
    ('c.Get_group().Range_excl([(0, n + 1, 1)])', True),
    ('MPI.Group.Union(c.Get_group(), None)', True),
    ('MPI.Group.Difference(None, c.Get_group())', True),
    ('MPI.Request.Waitany([MPI.REQUEST_NULL], status=[])', True),
    ('MPI.INT.Create_resized(0, -4).Get_extent()', True),
    ('MPI.Datatype.Create_struct([1], [0], [None])', True),
    ('MPI.INT.Get_contents()', True),
    ('MPI.INT.Create_vector(1, 1, 1).Commit().Commit().Free()', True),
    ('c.Recv(a, source=n)', True),
    ('c.Recv(a, source=-7)', True),
    ('c.Recv(a, source=MPI.PROC_NULL, tag=-4)', True),
    ('c.Recv(a, source=MPI.PROC_NULL, status=5)', True),
    ('c.Recv(None, source=MPI.PROC_NULL)', True),
    ('c.recv(source=n + 1)', True),
    ('c.Irecv(a, source=n)', True),
    ('c.Probe(source=n)', True),
    ('c.Iprobe(source=-3)', True),
    ('c.Iprobe(source=MPI.PROC_NULL, tag=-9)', True),
    ('c.Sendrecv(a, dest=n, recvbuf=np.zeros(1), source=0)', True),
    ('c.Sendrecv(a, dest=MPI.PROC_NULL, sendtag=-2, '
     'recvbuf=np.zeros(1), source=MPI.PROC_NULL)', True),
    ('MPI.Request.Waitall([1, 2])', True),
    ('MPI.Request.Testall("ab")', True),
    ('MPI.Request.Waitany(None)', True),
    ('MPI.INT.Create_contiguous(-1)', True),
    ('MPI.INT.Create_vector(-2, 1, 1)', True),
    ('MPI.INT.Create_vector(2, -1, 1)', True),
    ('MPI.INT.Create_indexed([1, 2], [0])', True),
    ('MPI.INT.Create_indexed([-1], [0])', True),
    ('MPI.INT.Create_indexed_block(-1, [0])', True),
    ('MPI.INT.Create_hindexed([1], [0, 4])', True),
    ('MPI.Datatype.Create_struct([1], [0], [MPI.INT, MPI.DOUBLE])', True),
    ('MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.INT, None])', True),
    ('MPI.INT.Create_subarray([4], [5], [0])', True),
    ('MPI.INT.Create_subarray([4], [2], [3])', True),
    ('MPI.INT.Create_subarray([4], [2], [-1])', True),
    ('MPI.INT.Create_subarray([4, 4], [2], [0, 0])', True),
    ('MPI.INT.Create_darray(2, 2, [4], [MPI.DISTRIBUTE_BLOCK], '
     '[MPI.DISTRIBUTE_DFLT_DARG], [2])', True),
    ('MPI.INT.Create_darray(2, 0, [4], [MPI.DISTRIBUTE_BLOCK], '
     '[MPI.DISTRIBUTE_DFLT_DARG], [3])', True),
    ('MPI.INT.Create_resized(0, None)', True),
    ('MPI.DATATYPE_NULL.Get_size()', True),
    ('MPI.DATATYPE_NULL.Commit()', True),
    ('MPI.INT.Free()', True),
    ('MPI.COMM_WORLD.Free()', True),
    ('MPI.COMM_NULL.Get_size()', True),
    ('MPI.GROUP_NULL.Get_size()', True),
    ('MPI.OP_NULL.Is_commutative()', True),
    ('MPI.SUM.Free()', True),
    ('MPI.INFO_NULL.Get_nkeys()', True),
    ('MPI.REQUEST_NULL.Cancel()', True),
    ('fuzz_freed(MPI.INT.Dup()).Get_size()', True),
    ('fuzz_freed(MPI.INT.Dup()).Commit()', True),
    ('fuzz_freed(c.Get_group()).Get_size()', True),
    ('fuzz_freed(MPI.Info.Create()).Set("a", "b")', True),
    ('fuzz_freed(MPI.Op.Create(lambda x, y, t: None)).Is_commutative()',
     True),
    ('c.Get_group().Incl([n])', True),
    ('c.Get_group().Excl([-1])', True),
    ('c.Get_group().Range_incl([(0, n, 1)])', True),
    ('c.Get_group().Range_incl([(0, 0, 0)])', True),
    ('MPI.Group.Translate_ranks(c.Get_group(), [0], None)', True),
    ('fuzz_info().Set("k" * 300, "v")', True),
    ('fuzz_info().Set("k", "v" * 2000)', True),
    ('fuzz_info().Get("k" * 300)', True),
    ('fuzz_info().Delete("absent")', True),
    ('fuzz_info().Set(1, "v")', True),
    ('fuzz_info().Get_nthkey(3)', True),
    ('MPI.Compute_dims(-1, 2)', True),
    ('MPI.Compute_dims(6, [0, -1])', True),
    ('MPI.Compute_dims(5, [2, 0])', True),
    ('c.Get_attr(-12345)', True),
    ('c.Set_name(None)', True),
    ('c.Bcast(a, root=n)', False),
    ('c.Bcast(a, root=-1)', False),
    ('c.Bcast(a, root=MPI.PROC_NULL)', False),
    ('c.Bcast(a, root=MPI.ROOT)', False),
    ('c.Bcast(a, root=None)', False),
    ('c.Bcast(a, root=2 ** 40)', False),
    ('c.Bcast(None, root=0)', False),
    ('c.bcast(1, root=n)', False),
    ('c.Reduce(a, np.zeros(2), root=n)', False),
    ('c.Reduce(a, np.zeros(2), op=None)', False),
    ('c.Reduce(a, np.zeros(2), op=MPI.OP_NULL)', False),
    ('c.Allreduce(a, np.zeros(3))', False),
    ('c.Allreduce(a, None)', False),
    ('c.Allreduce(a, np.zeros(2), op=MPI.MAXLOC)', False),
    ('c.Gather(a, np.zeros(2 * n), root=n + 2)', False),
    ('c.Scatter(np.zeros(2 * n), a, root=-4)', False),
    ('c.Alltoall(np.zeros(2 * n + 1), np.zeros(2 * n + 1))', False),
    ('c.Bcast(a, root=np.float64(n) + 0.5)', False),
    ('c.Bcast(a, root=np.int64(-2))', False),
    ('c.Reduce(a, np.zeros(2), root=np.int32(n))', False),
    ('c.Split_type(12345)', False),
    ('c.Split(None)', False),
    ('c.Split(0, key="k")', False),
    ('c.Split(-5)', False),
    ('c.Create_cart([n + 1])', False),
    ('c.Create_cart([n], periods=[True, False])', False),
    ('c.Barrier(1)', False),
    ('c.allgather()', False),
)


def op_bad_args(b):
    """One to four bad calls on a communicator, each recorded."""
    rng, k = b.rng, b.op_id
    e = b.pick_entity()
    picks = rng.sample(range(len(CALLS)), rng.randint(1, 4))
    lines = ['n = c.Get_size()', 'a = np.zeros(2)']
    titles = []
    for j, index in enumerate(picks):
        code, local = CALLS[index]
        titles.append(str(index))
        body = ['try:', '    {}'.format(code),
                '    rec({}, "args{}", "no error")'.format(k, j),
                'except Exception as exc:',
                '    rec({}, "args{}", fuzz_exception(exc))'.format(k, j)]
        if local and e.size > 1 and rng.random() < 0.3:
            # A local call: one rank alone may make it.
            who = rng.randrange(e.size)
            body = ['if r == {}:'.format(who)] + ['    ' + x for x in body]
        lines += body
    b.on_entity(e, 'bad arguments {}'.format(' '.join(titles)), lines)


OPS = (op_bad_args,)
