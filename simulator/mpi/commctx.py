"""The communicator locks and contexts mpi4py's pure-Python helpers use.

``mpi4py.util.pkl5`` imports four private functions of ``mpi4py.MPI``:
``_comm_lock(comm, key)`` (a lock per communicator and key, so threads of
one process do not interleave the several messages of one object), and
``_commctx_intra(comm)`` (a duplicate of ``comm``, made once per
communicator by a collective ``Dup``, and a fresh tag on each call, for
the messages of one object collective), and ``_commctx_inter`` (the same
for an intercommunicator, with an intracommunicator over its local
group). They belong to the calling rank (a process in real MPI): they
are kept in the rank's own state, keyed by the communicator's context.
"""
import threading

from simulator.engine.actors import current
from simulator.mpi.naming import describe

__all__ = ['_comm_lock', '_comm_lock_table', '_commctx_intra',
           '_commctx_inter']

# Open MPI's MPI_TAG_UB: tags handed out wrap around below it.
_TAG_UB = (1 << 31) - 1
_guard = threading.Lock()


def _rank_table(name, comm):
    ctx = current()
    if ctx is None:
        raise RuntimeError('simulator.mpi: {} used outside a simulated '
                           'rank'.format(name))
    tables = ctx.local.setdefault(name, {})
    return tables, comm._s.ctx


def _comm_lock_table(comm):
    """The calling rank's {key: lock} table of ``comm``."""
    tables, key = _rank_table('comm_locks', comm)
    with _guard:
        return tables.setdefault(key, {})


def _comm_lock(comm, key=None):
    """The calling rank's lock for (``comm``, ``key``), made on first use."""
    table = _comm_lock_table(comm)
    with _guard:
        lock = table.get(key)
        if lock is None:
            lock = table[key] = threading.Lock()
        return lock


class _Context:
    __slots__ = ('dupcomm', 'tag', 'localcomm', 'low_group')

    def __init__(self, dupcomm):
        self.dupcomm = dupcomm
        self.tag = 0
        self.localcomm = None       # intercommunicators only
        self.low_group = None

    def next_tag(self):
        """A fresh tag (they wrap around below TAG_UB)."""
        if self.tag >= _TAG_UB:
            self.tag = 0
        self.tag += 1
        return self.tag - 1


def _context(comm):
    """The calling rank's context of ``comm`` (its lock held): the first
    call makes the duplicate, collectively."""
    tables, key = _rank_table('commctx', comm)
    context = tables.get(key)
    if context is None:
        context = tables[key] = _Context(comm.Dup())
    return context


def _commctx_intra(comm):
    """Return (duplicate of ``comm``, next tag): the duplicate is made by the
    first call on each communicator, collectively (every rank of ``comm``
    makes its first call in the same order, as with mpi4py)."""
    if comm.Is_inter():
        raise TypeError('expected an Intracomm, got {}'.format(
            describe(comm)))
    with _comm_lock(comm, '@commctx_intra'):
        context = _context(comm)
        return context.dupcomm, context.next_tag()


def _commctx_inter(comm):
    """Return (duplicate of the intercommunicator ``comm``, next tag, an
    intracommunicator over the local group, whether this group is the
    "low" one): made collectively by the first call on ``comm``, as
    mpi4py does (Merge with the larger group high, then Create)."""
    if not comm.Is_inter():
        raise TypeError('expected an Intercomm, got {}'.format(
            describe(comm)))
    with _comm_lock(comm, '@commctx_inter'):
        context = _context(comm)
        if context.localcomm is None:
            local, remote = comm.Get_size(), comm.Get_remote_size()
            merged = comm.Merge(local > remote)
            context.low_group = (local < remote) if local != remote \
                else merged.Get_rank() < local
            context.localcomm = merged.Create(comm.Get_group())
            merged.Free()
        return (context.dupcomm, context.next_tag(), context.localcomm,
                context.low_group)
