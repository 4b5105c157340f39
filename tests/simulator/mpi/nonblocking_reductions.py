"""The non-blocking reductions, started alike by the tests that check
their receive buffers (test_request.py in-process, and
test_conformance_collectives.py both ways)."""
import numpy as np

CALLS = ('Iallreduce', 'Ireduce', 'Ireduce_scatter_block',
         'Ireduce_scatter', 'Iscan', 'Iexscan', 'Allreduce_init',
         'Reduce_init', 'Reduce_scatter_block_init', 'Reduce_scatter_init',
         'Scan_init', 'Exscan_init')


def i_name(call):
    """The ``I`` call a ``*_init`` call starts (itself for an ``I`` one)."""
    return 'I' + call[:-5].lower() if call.endswith('_init') else call


def start(comm, MPI, call, in_place, length=4, root=1, fill=0.0):
    """Start the SUM reduction ``call`` (an ``I`` call, or a ``*_init``
    one and its Start) of ``length`` floats per rank and block, ``root``
    the root of Ireduce, the receive buffer ``fill``ed; (request, the
    buffers (send, receive: the caller keeps them alive until the
    request completes, as MPI reads them meanwhile), what the receive
    buffer holds once complete, the last rank whose contribution it
    sums: -1 for none, Iexscan's rank 0)."""
    rank, size = comm.rank, comm.size
    name = i_name(call)
    blocks = size if name.startswith('Ireduce_scatter') else 1
    send = np.arange(float(length * blocks)) + rank
    last = {'Iscan': rank, 'Iexscan': rank - 1}.get(name, size - 1)
    expected = np.arange(float(length * blocks)) * (last + 1) + \
        last * (last + 1) // 2
    if blocks > 1:
        expected = expected[length * rank:length * (rank + 1)]
    recv = send.copy() if in_place else np.full(length, fill)
    if in_place and (name != 'Ireduce' or rank == root):
        send = MPI.IN_PLACE
    args = {'Ireduce': (send, recv, MPI.SUM, root),
            'Ireduce_scatter': (send, recv, [length] * size)}.get(
                name, (send, recv))
    request = getattr(comm, call)(*args)
    if call != name:
        request.Start()
    return request, (send, recv), expected, last
