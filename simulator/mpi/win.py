"""RMA windows (``MPI.Win``): one-sided Put/Get/Accumulate between ranks.

Rank threads share the process's memory, so a window is the set of its
ranks' memories (one flat byte array each) and a one-sided operation
reads or writes the target's memory directly, at the call, under the
window's mutex: accumulates, ``Fetch_and_op`` and ``Compare_and_swap``
are atomic per operation, as MPI requires. The result of a correct
program is one of the results real MPI can give (operations happen no
later than the synchronisation that completes them). What lands at the
origin (a Get's data, a fetch's result) lands at that synchronisation,
and the origin's buffers must be left alone until then (checked).

Synchronisation is checked, not modelled in time: every operation needs
an access epoch on its target (``Fence``, ``Lock``/``Lock_all``, or
``Start``) or fails with ``ERR_RMA_SYNC``; ``Start`` waits for the
targets' ``Post`` and ``Wait`` for the origins' ``Complete``; ``Lock``
blocks (with the simulator's deadlock detection) while another rank
holds a conflicting lock; ``Fence`` and ``Free`` are collective over
the window's group; ``Sync``/``Flush`` count as polling, so a spin loop
on window memory that can never end is reported as a deadlock.

A window handle is a ``bytearray`` subclass holding the rank's own memory
for ``Allocate`` / ``Allocate_shared``, so ``memoryview(win)`` is the
local window as in mpi4py (``mpi4py.util.sync`` spins on it). For
``Create`` the window is the caller's buffer, which the handle exports
instead (as does every copy ``Win(win)``, see :func:`_export`);
``Create_dynamic`` windows export nothing and address attached memory by
absolute address (``MPI.Get_address``). Differences from Open MPI:
``Allocate_shared`` segments are not contiguous (``Shared_query`` gives
each rank's own segment); datatypes mixing basic types are not
simulated. ``Fetch_and_op`` and ``Compare_and_swap`` with a derived
datatype fail with ``ERR_TYPE`` (MPI requires a predefined one; Open MPI
takes them and its ``Compare_and_swap`` ignores their displacements).
"""
import collections
import ctypes
import threading

import numpy as np

from simulator.engine import collectives as coll
from simulator.engine.actors import current
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.attributes import Attributes
from simulator.mpi.constants import (ERR_ARG, ERR_OP, ERR_RANK,
                                     ERR_TYPE, BottomType)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import PROC_NULL
from simulator.mpi.cargs import INT_MAX, c_aint, object_name
from simulator.mpi.values import VALUES
from simulator.errors import BufferModifiedError
from simulator.mpi.msgspec import held_bytes, parse, still_holds
from simulator.mpi.group import Group
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.commattr import (INFO_NULL, Errhandler, Info,
                                    call_errhandler, create_errhandler,
                                    default_handler, is_fatal)
from simulator.mpi.initialization import fatal_handler_in_use
from simulator.mpi.memory import buffer
from simulator.mpi.naming import (HidesBase, describe, reduce_constant,
                                   unserializable)
from simulator.mpi.ops import OP_NAMES
from simulator.mpi.request import Request
from simulator.mpi.rma_races import (Access, EpochLog, ExposureLog,
                                     LockLog, StoreWatch, is_padded,
                                     settled_bytes)
from simulator.mpi.unsupported import not_simulated

__all__ = ['Win', 'WIN_NULL']

LOCK_EXCLUSIVE = VALUES['LOCK_EXCLUSIVE']
LOCK_SHARED = VALUES['LOCK_SHARED']
MODE_NOCHECK = VALUES['MODE_NOCHECK']
MODE_NOSUCCEED = VALUES['MODE_NOSUCCEED']
ERR_WIN = VALUES['ERR_WIN']
ERR_RMA_SYNC = VALUES['ERR_RMA_SYNC']
ERR_RMA_RANGE = VALUES['ERR_RMA_RANGE']
ERR_UNKNOWN = VALUES['ERR_UNKNOWN']
ERR_RMA_FLAVOR = VALUES['ERR_RMA_FLAVOR']
ERR_LOCKTYPE = VALUES['ERR_LOCKTYPE']
WIN_BASE, WIN_SIZE, WIN_DISP_UNIT = (VALUES['WIN_BASE'], VALUES['WIN_SIZE'],
                                     VALUES['WIN_DISP_UNIT'])
WIN_CREATE_FLAVOR, WIN_MODEL = VALUES['WIN_CREATE_FLAVOR'], VALUES['WIN_MODEL']
ERR_DISP, ERR_SIZE = VALUES['ERR_DISP'], VALUES['ERR_SIZE']
FLAVOR_CREATE, FLAVOR_ALLOCATE, FLAVOR_DYNAMIC, FLAVOR_SHARED = (
    VALUES['WIN_FLAVOR_CREATE'], VALUES['WIN_FLAVOR_ALLOCATE'],
    VALUES['WIN_FLAVOR_DYNAMIC'], VALUES['WIN_FLAVOR_SHARED'])
WIN_UNIFIED = VALUES['WIN_UNIFIED']
_REPLACE, _NO_OP = OP_NAMES['REPLACE'], OP_NAMES['NO_OP']
# The calls that return what they reached (see LockLog).
_FETCHING = ('Get', 'Get_accumulate', 'Fetch_and_op', 'Compare_and_swap')


class _Shared:
    """What the ranks of one window share: memories, locks, a mutex."""

    def __init__(self, world, group, flavor, memories, disp_units):
        self.world = world
        self.group = group              # window rank -> world rank
        self.flavor = flavor
        self.memories = memories        # window rank -> uint8 array
        self.disp_units = disp_units
        self.regions = [[] for _ in group]  # dynamic: (address, array)
        self.mutex = threading.Lock()
        self.races = EpochLog()         # the fence epoch's accesses
        self.exposed = ExposureLog()    # those of open Post epochs
        self.locked = LockLog()         # those of shared lock epochs
        self.watch = StoreWatch()       # passive ones, against stores
        # Per target: the exclusive holder (window rank) and the number
        # of shared holders; changed under the world lock.
        self.exclusive = [None] * len(group)
        self.shared = [0] * len(group)
        # Post/Start/Complete/Wait: counts per (target, origin) of posts
        # made, posts started on, and access epochs completed.
        n = len(group)
        self.posts = [[0] * n for _ in range(n)]
        self.starts = [[0] * n for _ in range(n)]
        self.completes = [[0] * n for _ in range(n)]
        # Per (target, origin): the numbers of the target's exposure
        # epochs posted to the origin and not started on yet.
        self.exposures = [0] * n
        self.unstarted = [[collections.deque() for _ in range(n)]
                          for _ in range(n)]


class Win(bytearray, Attributes, HandleMixin, metaclass=HidesBase,
          hides=bytearray):
    """An RMA window, with mpi4py's method names and argument order."""

    # A window exports its memory (the bytearray base) but is no sequence
    # of bytes: mpi4py's has no len, items, iteration, operators nor any
    # of bytearray's methods (HidesBase takes them away).

    __module__ = 'simulator.mpi'

    def __new__(cls, win=None):
        return super().__new__(cls)

    def __init__(self, win=None):
        super().__init__()
        if win is not None and not isinstance(win, Win):
            raise handle_argument_error('Win', win)
        if isinstance(win, Win) and win._shared is not None:
            # another handle to the window: its state is the window's,
            # and it exports the same memory
            self.__dict__ = win.__dict__
            _export(self, win._shared.memories[win._rank])
            return
        self._shared = None

    # -- construction ------------------------------------------------------
    @classmethod
    def _make(cls, op, comm, flavor, nbytes, disp_unit, memory=None):
        state = comm._s
        disp_unit, nbytes = c_aint(disp_unit), c_aint(nbytes)
        if disp_unit > INT_MAX:
            raise MPIException(ERR_ARG, '{}: disp_unit {} is above '
                               'INT_MAX'.format(op, disp_unit))
        if disp_unit <= 0 and flavor != FLAVOR_SHARED:
            # (Open MPI checks no shared window's unit.)
            raise MPIException(ERR_DISP, '{}: disp_unit {} must be '
                               'positive'.format(op, disp_unit))
        if nbytes < 0:
            raise MPIException(ERR_SIZE, '{}: size {} must be >= '
                               '0'.format(op, nbytes))
        win = cls.__new__(cls)
        bytearray.__init__(win, nbytes if memory is None else 0)
        local = np.frombuffer(win, np.uint8) if memory is None else memory
        seq = state.next_seq()
        record = CallRecord(op, state.world_rank, None, None, state.name,
                            seq, raw=capture(3))
        slot = coll.arrive(state, seq, op, (), (local, disp_unit), record,
                           combine=lambda args: _Shared(
                               state.world, state.group, flavor,
                               [a[0] for a in args], [a[1] for a in args]))
        coll.wait_ready(state, slot, record)
        shared = slot.result
        coll.leave(state, slot)
        win._shared = shared
        win._rank = state.rank
        # The window's own collectives (Fence, Free) match among
        # themselves, apart from the communicator's.
        win._state = CommState(state.world, (state.ctx, seq, 'win'),
                               state.group, state.rank,
                               'Win#{} of {}'.format(seq, state.name))
        win._memory = memory
        win._name = ''
        win._fence = False          # inside a fence epoch
        win._epoch = 0              # fence epochs begun
        win._locks = {}             # target -> lock type held
        win._lock_all = False
        win._started = win._exposed = None     # Start / Post epochs
        win._exposure = 0           # the number of this rank's Post
        win._request = None         # the R-call running (Rget...)
        win._pending = []           # (target, finish) not yet completed
        win._attrs = {}
        return win

    @classmethod
    def Create(cls, memory, disp_unit=1, info=INFO_NULL, comm=None):
        """A window over ``memory`` (a writable buffer) on every rank."""
        comm = _comm_or_self(comm)
        if memory is None or isinstance(memory, BottomType):
            array = np.empty(0, np.uint8)
        else:
            array = parse(memory, 'Win.Create').data
            if not array.flags.writeable:
                raise TypeError('Win.Create: memory {!r} is read-only'
                                .format(type(memory).__name__))
            array = array.reshape(-1).view(np.uint8)
        win = cls._make('Win.Create', comm, FLAVOR_CREATE, array.nbytes,
                        disp_unit, memory=array)
        win._user = memory
        _export(win, array)
        return win

    @classmethod
    def Allocate(cls, size, disp_unit=1, info=INFO_NULL, comm=None):
        """A window of ``size`` new bytes on every rank."""
        return cls._make('Win.Allocate', _comm_or_self(comm),
                         FLAVOR_ALLOCATE, size, disp_unit)

    @classmethod
    def Allocate_shared(cls, size, disp_unit=1, info=INFO_NULL, comm=None):
        """Allocate, with every segment reachable by ``Shared_query``."""
        return cls._make('Win.Allocate_shared', _comm_or_self(comm),
                         FLAVOR_SHARED, size, disp_unit)

    @classmethod
    def Create_dynamic(cls, info=INFO_NULL, comm=None):
        """A window without memory; ranks ``Attach`` memory later."""
        return cls._make('Win.Create_dynamic', _comm_or_self(comm),
                         FLAVOR_DYNAMIC, 0, 1,
                         memory=np.empty(0, np.uint8))

    def Attach(self, memory):
        """Expose ``memory`` in a dynamic window (at its address)."""
        shared = self._s
        if shared.flavor != FLAVOR_DYNAMIC:
            raise MPIException(ERR_RMA_FLAVOR, 'Win.Attach on a window '
                               'not made by Create_dynamic')
        array = parse(memory, 'Win.Attach').data.reshape(-1).view(np.uint8)
        address = array.__array_interface__['data'][0]
        with shared.mutex:
            shared.regions[self._rank].append((address, array))

    def Detach(self, memory):
        """Withdraw memory attached with ``Attach``."""
        shared = self._s
        array = parse(memory, 'Win.Detach').data
        address = array.__array_interface__['data'][0]
        with shared.mutex:
            regions = shared.regions[self._rank]
            kept = [r for r in regions if r[0] != address]
            if len(kept) == len(regions):
                # Open MPI fails so (MPI_ERR_UNKNOWN); the memory stays
                # usable, so saying which address helps.
                raise MPIException(ERR_UNKNOWN, 'Win.Detach: memory at '
                                   'address {:#x} is not attached to this '
                                   'window on rank {}'.format(address,
                                                              self._rank))
            shared.regions[self._rank] = kept

    def Free(self):
        """Free the window (collective over its group), running the
        delete callbacks of its attributes."""
        self._drop_attrs(self._attr_store('Free'))
        self._complete('Win.Free')
        self._barrier('Win.Free')
        self._shared = None

    def free(self):
        """Free, where a null window is left as it is (mpi4py's)."""
        if self._shared is not None:
            self.Free()

    # -- handle --------------------------------------------------------------
    def _handle_target(self):
        # a window has one handle object here: the int names it
        return self if self._shared is not None else None

    @classmethod
    def _from_target(cls, target):
        return cls() if target is None else target

    @property
    def _s(self):
        shared = self._shared
        if shared is None:
            raise MPIException(ERR_WIN, 'operation on WIN_NULL or a freed '
                               'window')
        return shared

    def __bool__(self):
        return self._shared is not None

    def __eq__(self, other):
        if not isinstance(other, Win):
            return NotImplemented
        return self._shared is other._shared

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def _unordered(self, other):
        # handles have no order (bytearray's would compare the bytes)
        return NotImplemented

    __lt__ = __le__ = __gt__ = __ge__ = _unordered

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if getattr(self, '_shared', None) is None:
            return reduce_constant(self, 'WIN_NULL') if self is WIN_NULL else \
                self._reduce_copy(WIN_NULL)
        raise unserializable(self, 'windows belong to the process')

    def __reduce_ex__(self, protocol):
        return self.__reduce__()

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        if getattr(self, '_shared', None) is None:
            return '<simulator.mpi.Win (null)>'
        return '<simulator.mpi.Win {} rank {} of {}>'.format(
            self._state.name, self._rank, len(self._shared.group))

    # mpi4py's, not bytearray's (Win(b'')) that the memory base gives.
    __repr__ = object.__repr__
    __str__ = object.__str__

    # -- attributes ----------------------------------------------------------
    def Get_group(self):
        """The group of the window's ranks."""
        return Group._of(self._s.group)

    group = property(Get_group)
    group_size = property(lambda self: len(self._s.group),
                          doc='Number of ranks in the window\'s group.')
    group_rank = property(lambda self: (self._s, self._rank)[1],
                          doc='Rank of this process in the window\'s group.')

    # the Attributes mixin's, with the window's predefined keys
    _attr_kind, _attr_name = 'win', 'Win'
    _PREDEFINED_ATTRS = (WIN_BASE, WIN_SIZE, WIN_DISP_UNIT,
                         WIN_CREATE_FLAVOR, WIN_MODEL)

    def _attr_store(self, what):
        self._s  # noqa: B018 -- ERR_WIN on a null or freed window
        return self._attrs.setdefault('keyed', {})

    def _predefined_attr(self, keyval):
        """WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR or
        WIN_MODEL."""
        shared = self._s
        memory = shared.memories[self._rank]
        if keyval == WIN_BASE:
            return 0 if memory.size == 0 else \
                memory.__array_interface__['data'][0]
        if keyval == WIN_SIZE:
            return memory.nbytes
        if keyval == WIN_DISP_UNIT:
            return shared.disp_units[self._rank]
        if keyval == WIN_CREATE_FLAVOR:
            return shared.flavor
        return WIN_UNIFIED

    attrs = property(lambda self: (self.Get_attr(WIN_BASE),
                                   self.Get_attr(WIN_SIZE),
                                   self.Get_attr(WIN_DISP_UNIT)),
                     doc='This rank\'s (base address, size, displacement '
                         'unit).')
    flavor = property(lambda self: self._s.flavor,
                      doc='How the window was made (FLAVOR_...).')
    model = property(lambda self: (self._s, WIN_UNIFIED)[1],
                     doc='Memory model: WIN_UNIFIED, as in Open MPI.')

    def Get_name(self):
        """The window's name ('' until Set_name)."""
        if self._shared is None:
            return 'MPI_WIN_NULL'
        return self._name

    def Set_name(self, name):
        """Name the window."""
        self._s  # noqa: B018
        self._name = object_name(name)

    name = property(Get_name, Set_name)

    def Get_info(self):
        """An empty Info (hints are not kept)."""
        self._s  # noqa: B018
        return Info.Create()

    def Set_info(self, info):
        """Accepted; hints are ignored."""
        self._s  # noqa: B018

    info = property(Get_info, Set_info)

    def _errhandler(self):
        # the handler set last, or the one mpi4py gives windows
        # (mpi4py.rc.errors'; ERRORS_RETURN by default)
        self._s  # noqa: B018 -- ERR_WIN on WIN_NULL
        handler = self._attrs.get('errhandler')
        return default_handler() if handler is None else handler._h

    def Get_errhandler(self):
        """The error handler set last (ERRORS_RETURN at first, as mpi4py
        sets it: errors raise MPI.Exception)."""
        # A new handle each time: freeing it leaves the window's alone.
        return Errhandler(self._errhandler())

    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """A new error handler calling ``errhandler_fn(win, errorcode)``."""
        return create_errhandler('win', errhandler_fn)

    def Call_errhandler(self, errorcode):
        """Invoke the window's error handler with ``errorcode``."""
        call_errhandler(Errhandler(self._errhandler()), self, errorcode)

    def Set_errhandler(self, errhandler):
        """Set the window's error handler (a fatal one aborts the job at
        an error in one of its calls, see :mod:`simulator.mpi.fatal`)."""
        self._s  # noqa: B018
        self._attrs['errhandler'] = Errhandler(errhandler)
        if is_fatal(self._attrs['errhandler']._h):
            fatal_handler_in_use()

    def tomemory(self):
        """The local window memory as a buffer."""
        shared = self._s
        return buffer(shared.memories[self._rank])

    def Shared_query(self, rank):
        """Return (memory, disp_unit) of ``rank``'s segment of a shared
        window."""
        shared = self._s
        if shared.flavor != FLAVOR_SHARED:
            raise MPIException(ERR_RMA_FLAVOR, 'Win.Shared_query on a '
                               'window not made by Allocate_shared')
        if rank == PROC_NULL:
            rank = next((r for r, m in enumerate(shared.memories)
                         if m.nbytes), 0)
        self._check_rank(rank, 'Shared_query')
        return buffer(shared.memories[rank]), shared.disp_units[rank]

    # -- synchronisation -----------------------------------------------------
    def _record(self, op, peer=None):
        state = self._state
        return CallRecord(op, state.world_rank, peer, None, state.name,
                          raw=capture(3))

    def _barrier(self, op, combine=None):
        if self._shared is None:
            raise MPIException(ERR_WIN, '{} on WIN_NULL'.format(op))
        state = self._state
        seq = state.next_seq()
        record = CallRecord(op, state.world_rank, None, None, state.name,
                            seq, raw=capture(3))
        slot = coll.arrive(state, seq, op, (), None, record, combine)
        coll.wait_ready(state, slot, record)
        coll.leave(state, slot)

    def Fence(self, assertion=0):
        """End the previous fence epoch and start the next (collective)."""
        self._s  # noqa: B018
        if self._locks or self._lock_all:
            raise MPIException(ERR_RMA_SYNC, 'Win.Fence inside a passive '
                               'target epoch (Lock/Lock_all)')
        # Results land first: the epoch's last stores, seen by the check.
        self._complete('Win.Fence')
        shared, epoch = self._s, self._epoch + 1
        self._barrier('Win.Fence', lambda args: shared.races.boundary(
            epoch, shared.memories))
        self._fence = not assertion & MODE_NOSUCCEED
        self._epoch += 1

    def _check_rank(self, rank, op):
        if not isinstance(rank, int) or not 0 <= rank < len(
                self._s.group):
            raise MPIException(ERR_RANK, 'Win.{}: rank {!r} is not in the '
                               'window\'s group of {}'.format(
                                   op, rank, len(self._s.group)))

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        """Start a passive target epoch on ``rank``."""
        self._s  # noqa: B018
        if rank == PROC_NULL:
            return
        self._check_rank(rank, 'Lock')
        if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
            raise MPIException(ERR_LOCKTYPE, 'Win.Lock: lock type {!r}'
                               .format(lock_type))
        if rank in self._locks or self._lock_all:
            raise MPIException(ERR_RMA_SYNC, 'Win.Lock: rank {} is '
                               'already locked by this rank'.format(rank))
        if not assertion & MODE_NOCHECK:
            self._acquire([rank], lock_type, 'Win.Lock')
        self._locks[rank] = (lock_type, not assertion & MODE_NOCHECK)
        if rank == self._rank:
            self._unsync()

    def Lock_all(self, assertion=0):
        """Start a shared passive target epoch on every rank."""
        shared = self._s
        if self._locks or self._lock_all:
            raise MPIException(ERR_RMA_SYNC, 'Win.Lock_all inside another '
                               'passive target epoch')
        if not assertion & MODE_NOCHECK:
            self._acquire(range(len(shared.group)), LOCK_SHARED,
                          'Win.Lock_all')
        self._lock_all = (True, not assertion & MODE_NOCHECK)
        self._unsync()

    def _acquire(self, targets, lock_type, op):
        shared = self._s
        world = shared.world
        targets = list(targets)
        me = self._rank

        def free():
            if lock_type == LOCK_SHARED:
                return all(shared.exclusive[t] is None for t in targets)
            return shared.exclusive[targets[0]] is None and \
                shared.shared[targets[0]] == 0

        record = self._record(op, targets[0] if len(targets) == 1 else
                              None)
        with world.lock:
            world.raise_if_broken(shared.group[me])
            world.block(free, record)
            for t in targets:
                if lock_type == LOCK_SHARED:
                    shared.shared[t] += 1
                else:
                    shared.exclusive[t] = me

    def _release(self, targets, lock_type):
        shared = self._s
        world = shared.world
        with world.lock:
            for t in targets:
                if lock_type == LOCK_SHARED:
                    shared.shared[t] -= 1
                else:
                    shared.exclusive[t] = None
            world.version += 1
            for member in shared.group:
                world.wake(member)

    def Unlock(self, rank):
        """End the passive target epoch on ``rank``."""
        self._s  # noqa: B018
        if rank == PROC_NULL:
            return
        held = self._locks.pop(rank, None)
        if held is None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Unlock: rank {} is not '
                               'locked by this rank'.format(rank))
        lock_type, counted = held
        self._complete('Win.Unlock', rank)
        self._s.locked.complete(self._rank, rank)
        if rank == self._rank:
            self._unsync()
        self._watched_done(rank, 'Win.Unlock')
        if counted:
            self._release([rank], lock_type)

    def Unlock_all(self):
        """End the epoch of Lock_all."""
        shared = self._s
        if not self._lock_all:
            raise MPIException(ERR_RMA_SYNC, 'Win.Unlock_all without '
                               'Lock_all')
        counted = self._lock_all[1]
        self._complete('Win.Unlock_all')
        shared.locked.complete(self._rank)
        self._lock_all = False
        self._unsync()
        self._watched_done(None, 'Win.Unlock_all')
        if counted:
            self._release(range(len(shared.group)), LOCK_SHARED)

    def _in_passive_epoch(self, op):
        if not (self._locks or self._lock_all):
            raise MPIException(ERR_RMA_SYNC, 'Win.{} outside a passive '
                               'target epoch (Lock/Lock_all)'.format(op))

    def _poll(self, op):
        # Operations complete at the call: flushing only lets a rank that
        # spins on window memory be seen as polling (deadlock reports).
        shared = self._s
        world = shared.world
        with world.lock:
            world.raise_if_broken(shared.group[self._rank])
            world.note_poll(self._record(op))

    def Flush(self, rank):
        """Complete the operations to ``rank`` (done at the call here)."""
        self._in_passive_epoch('Flush')
        if rank != PROC_NULL:
            self._check_rank(rank, 'Flush')
            self._complete('Win.Flush', rank)
            self._s.locked.complete(self._rank, rank)
            self._watched_done(rank, 'Win.Flush')
        self._poll('Win.Flush')

    def Flush_all(self):
        """Complete the operations to every rank."""
        self._in_passive_epoch('Flush_all')
        self._complete('Win.Flush_all')
        self._s.locked.complete(self._rank)
        self._watched_done(None, 'Win.Flush_all')
        self._poll('Win.Flush_all')

    def Flush_local(self, rank):
        """Complete the operations to ``rank`` locally."""
        self._in_passive_epoch('Flush_local')
        if rank != PROC_NULL:
            self._complete('Win.Flush_local', rank)
            self._watched_done(rank, 'Win.Flush_local', reads=True)
        self._poll('Win.Flush_local')

    def Flush_local_all(self):
        """Complete every operation locally."""
        self._in_passive_epoch('Flush_local_all')
        self._complete('Win.Flush_local_all')
        self._watched_done(None, 'Win.Flush_local_all', reads=True)
        self._poll('Win.Flush_local_all')

    def Sync(self):
        """Synchronise public and private copies (one copy here)."""
        shared = self._s
        with shared.mutex:
            # From here the rank may load what landed and store over it.
            shared.watch.sync(self._rank, bool(
                self._lock_all or self._rank in self._locks))
        self._poll('Win.Sync')

    def _unsync(self):
        # A new (or ended) passive epoch on its own window: its Sync
        # before orders nothing landing from now on (StoreWatch).
        shared = self._s
        with shared.mutex:
            shared.watch.synced.discard(self._rank)

    def _watched_done(self, target_rank, closing, reads=False):
        """This rank completed its passive target accesses to
        ``target_rank`` (None: all) by ``closing``: check that no store
        reached their bytes meanwhile (:class:`.rma_races.StoreWatch`)."""
        shared = self._s
        with shared.mutex:
            shared.watch.complete(self._rank, target_rank, closing, reads)

    # -- generalized active target (post/start/complete/wait) --------------
    def _window_ranks(self, group, op):
        shared = self._s
        members = getattr(group, '_members', None)
        if members is None:
            raise TypeError('Win.{}: expected a Group, got {}'.format(
                op, describe(group)))
        index = {w: r for r, w in enumerate(shared.group)}
        missing = [w for w in members if w not in index]
        if missing:
            raise MPIException(ERR_RANK, 'Win.{}: ranks {} of the group are '
                               'not in the window'.format(op, missing))
        return [index[w] for w in members]

    def Post(self, group, assertion=0):
        """Expose the window to the origins in ``group`` (until Wait)."""
        shared = self._s
        if self._exposed is not None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Post inside an exposure '
                               'epoch')
        origins = self._window_ranks(group, 'Post')
        # Only this rank numbers its exposures; no origin reaches the
        # memory before the count below lets it start.
        shared.exposed.begin(self._rank, shared.exposures[self._rank] + 1,
                             shared.memories[self._rank])
        world = shared.world
        with world.lock:
            shared.exposures[self._rank] += 1
            self._exposure = shared.exposures[self._rank]
            for o in origins:
                shared.posts[self._rank][o] += 1
                shared.unstarted[self._rank][o].append(self._exposure)
            world.version += 1
            for o in origins:
                world.wake(shared.group[o])
        self._exposed = origins

    def Start(self, group, assertion=0):
        """Open an access epoch to the targets in ``group`` (waits for
        their Post)."""
        shared = self._s
        if self._started is not None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Start inside an access '
                               'epoch')
        targets = self._window_ranks(group, 'Start')
        me, world = self._rank, shared.world
        record = self._record('Win.Start')
        with world.lock:
            world.raise_if_broken(shared.group[me])
            world.block(lambda: all(
                shared.posts[t][me] > shared.starts[t][me] for t in targets),
                record)
            for t in targets:
                shared.starts[t][me] += 1
            # target -> the number of its exposure epoch started on
            started = {t: shared.unstarted[t][me].popleft()
                       for t in targets}
        self._started = started

    def Complete(self):
        """End the access epoch of Start."""
        shared = self._s
        targets = self._started
        if targets is None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Complete without Start')
        self._complete('Win.Complete')
        self._started = None
        world = shared.world
        with world.lock:
            for t in targets:
                shared.completes[t][self._rank] += 1
            world.version += 1
            for t in targets:
                world.wake(shared.group[t])

    def _all_completed(self):
        shared = self._s
        me = self._rank
        return all(shared.completes[me][o] >= shared.posts[me][o]
                   for o in self._exposed)

    def Wait(self):
        """End the exposure epoch of Post, once every origin completed."""
        shared = self._s
        if self._exposed is None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Wait without Post')
        world = shared.world
        with world.lock:
            world.raise_if_broken(shared.group[self._rank])
            world.block(self._all_completed, self._record('Win.Wait'))
        self._exposed = None
        shared.exposed.end(self._rank, self._exposure,
                           shared.memories[self._rank])

    def Test(self):
        """Wait if every origin completed (True), else False at once."""
        shared = self._s
        if self._exposed is None:
            raise MPIException(ERR_RMA_SYNC, 'Win.Test without Post')
        world = shared.world
        with world.lock:
            world.raise_if_broken(shared.group[self._rank])
            done = self._all_completed()
            if not done:
                world.note_poll(self._record('Win.Test'))
        if done:
            self._exposed = None
            shared.exposed.end(self._rank, self._exposure,
                               shared.memories[self._rank])
        return done

    # -- one-sided operations ------------------------------------------------
    def _target(self, op, origin, target_rank, target, count_of=None,
                derived=True):
        """The origin Buffer and the target of an operation, checked: the
        target a view of the window's memory, or for a derived target
        datatype a :class:`_Scattered`. Without ``derived`` (MPI wants a
        predefined datatype in the call) a derived one fails with
        ``ERR_TYPE``."""
        shared = self._s
        if target_rank == PROC_NULL:
            return None, None
        if origin is None:
            # mpi4py's own check (None is only for PROC_NULL targets).
            raise TypeError('Win.{}: origin must be a buffer or a list/'
                            'tuple, got None'.format(op))
        self._check_rank(target_rank, op)
        if not (self._fence or self._lock_all or target_rank in
                self._locks or target_rank in (getattr(self, '_started',
                                                       None) or ())):
            raise MPIException(ERR_RMA_SYNC, 'Win.{} to rank {} outside '
                               'an access epoch (Fence, Lock, Lock_all)'
                               .format(op, target_rank))
        # A derived origin type gives a packed copy (written back by
        # flush() for a Get).
        buf = parse(origin, 'Win.{} origin buffer'.format(op), packed=True)
        datatype, count = buf.datatype, _type_count(buf)
        disp = 0
        if target is not None:
            if not isinstance(target, (int, list, tuple)):
                raise ValueError('Win.{}: target {!r} must be an int or a '
                                 'list/tuple'.format(op, target))
            spec = (target,) if isinstance(target, int) else tuple(target)
            if len(spec) > 3 or not spec:
                raise ValueError('Win.{}: target {!r} must be disp or (disp'
                                 '[, count[, datatype]])'.format(op, target))
            disp = spec[0]
            if len(spec) > 1 and spec[1] is not None:
                count = spec[1]
            if len(spec) > 2 and spec[2] is not None:
                datatype = spec[2]
        if count_of is not None:
            count = count_of
        dtype = getattr(datatype, '_dtype', None)
        for what, dt in (('origin', buf.datatype), ('target', datatype)):
            # Windows move elements of one basic type: a struct mixing
            # types would need its typemap matched element by element.
            base = getattr(dt, '_dtype', None)
            if base is None or bool(base.fields) or base.kind == 'V':
                raise not_simulated('Win.{} with {} datatype {} (several '
                                    'basic types in one datatype, in RMA)'
                                    .format(op, what, describe(dt)))
            if not (derived or getattr(dt, 'is_predefined', True)):
                # Open MPI takes some and gets them wrong (its
                # Compare_and_swap ignores the type's displacements).
                raise MPIException(ERR_TYPE, 'Win.{}: {} datatype {} is '
                                   'derived; MPI requires a predefined '
                                   'datatype here'.format(op, what,
                                                          describe(dt)))
        if dtype != buf.data.dtype:
            raise MPIException(ERR_TYPE, 'Win.{}: origin holds {} but the '
                               'target datatype is {}'.format(
                                   op, buf.datatype.name, datatype.name))
        index = None if datatype.is_predefined else \
            datatype._layout.byte_index(count)
        if index is None:
            nbytes, low = count * dtype.itemsize, 0
        else:
            nbytes = int(index.max()) + 1 if index.size else 0
            low = int(index.min()) if index.size else 0
        if shared.flavor == FLAVOR_DYNAMIC:
            memory, offset = self._region(target_rank, disp, nbytes, op)
        else:
            memory = shared.memories[target_rank]
            offset = disp * shared.disp_units[target_rank]
        if disp < 0 or offset + low < 0 or offset + nbytes > memory.nbytes:
            raise MPIException(ERR_RMA_RANGE, 'Win.{}: {} bytes at '
                               'displacement {} fall outside the {} bytes of '
                               'rank {}\'s window'.format(
                                   op, nbytes, disp, memory.nbytes,
                                   target_rank))
        elements = count if index is None else index.size // dtype.itemsize
        if elements > buf.count and op not in ('Get', 'Rget'):
            raise MPIException(ERR_TYPE, 'Win.{}: target count {} but the '
                               'origin holds {}'.format(op, count,
                                                        buf.count))
        if index is not None:
            return buf, _Scattered(memory, index + offset, dtype)
        return buf, memory[offset:offset + nbytes].view(dtype)

    def _region(self, rank, address, nbytes, op):
        for start, array in self._s.regions[rank]:
            if start <= address and address + nbytes <= start + array.nbytes:
                return array, address - start
        raise MPIException(ERR_RMA_RANGE, 'Win.{}: address {:#x} of rank '
                           '{} is in no attached memory'.format(
                               op, address, rank))

    def _changed(self):
        world = self._s.world
        with world.lock:
            world.version += 1

    def _defer(self, op, target_rank, sent=(), results=(), flush=None):
        """Finish ``op`` when it completes (:meth:`_complete`): then
        each array of ``sent`` (the origin, a compare value) must still
        hold what it held at the call, and each ``(array, values)`` of
        ``results`` (a Get's origin, a fetch's result) is written, as a
        real MPI writes it only by then; the program must not have
        written it meanwhile."""
        record = self._record('Win.' + op, target_rank)
        held = [(array, held_bytes(array), None) for array in sent
                if array.size]
        held += [(array, held_bytes(array), values)
                 for array, values in results if array.size]

        def finish(closing):
            for array, before, values in held:
                if not still_holds(array, before):
                    raise BufferModifiedError(
                        'rank {} wrote to the {} buffer of {} before {} '
                        'completed it: MPI forbids touching it until then '
                        '(a real MPI may {}); complete the operation '
                        'first'.format(
                            record.rank, 'origin' if values is None or
                            op == 'Get' else 'result',
                            record.describe(), closing,
                            'transfer the old contents or the new'
                            if values is None else
                            'write the result over it at any time'))
            for array, _, values in held:
                if values is not None:
                    array[...] = values
            if flush is not None:
                flush()         # a derived origin's packed copy
        if held:
            self._pending.append((target_rank, finish))

    def _complete(self, closing, target_rank=None):
        """Complete this rank's pending operations (to ``target_rank``,
        or all), as ``closing`` (the call that ends them) does."""
        done = [f for t, f in self._pending
                if target_rank is None or t == target_rank]
        if done:
            self._pending = [(t, f) for t, f in self._pending
                             if target_rank is not None and t != target_rank]
            for finish in done:
                finish(closing)

    def _touch(self, op, kind, target_rank, view, apply):
        """Run ``apply(target)`` on an operation's target elements under
        the window's mutex and return what it returns. ``target`` is
        ``view``, or for a derived target datatype (a :class:`_Scattered`)
        its elements gathered, and scattered back after but for a read;
        those byte ranges stay outside the race checks. In a fence,
        exposure or shared lock epoch a view's access is noted, and an
        order-dependent conflict with another rank's raises (see
        :mod:`.rma_races`)."""
        shared = self._s
        reads = kind in ('get', _kind(_NO_OP))
        if isinstance(view, _Scattered):
            base = view.memory.__array_interface__['data'][0]
            span = (base + int(view.index.min()),
                    base + int(view.index.max()) + 1) \
                if view.index.size else None
            with shared.mutex:
                values = view.gather()
                result = apply(values)
                if not reads:
                    view.scatter(values)
                    if span is not None:
                        shared.watch.landed(target_rank, span=span)
            if op in _FETCHING and span is not None:
                # Unchecked, but what it returned orders what it saw.
                shared.locked.seen(*span)
            return result
        note = self._race_log(op, target_rank)
        watched = self._watched(target_rank)
        with shared.mutex:
            track = note or watched or shared.watch.busy(target_rank)
            before = settled_bytes(view) if track else None
            result = apply(view)
            # (A read leaves the target as it was: one copy serves.)
            after = before if reads or not track else settled_bytes(view)
            if track and before:
                # Noted under the mutex: the logs hold the accesses in
                # the order they were applied (replays rely on it).
                start = view.__array_interface__['data'][0]
                access = Access(self._rank, kind, start, before, after,
                                self._record('Win.' + op, target_rank),
                                is_padded(view.dtype), target_rank,
                                self._base(target_rank, start))
                if note:
                    note(access)
                shared.watch.landed(target_rank, access)
                if watched:
                    shared.watch.open(access, view)
        return result

    def _watched(self, target_rank):
        """Whether an access to ``target_rank`` made now is watched for
        the target's stores until its completion (StoreWatch): in a
        passive target epoch, but a request-based read's (complete with
        its request) or on a shared-memory window (every rank of the
        node may store to it directly)."""
        return (self._lock_all or target_rank in self._locks) and \
            self._s.flavor != FLAVOR_SHARED and \
            self._request not in ('Rget', 'Rget_accumulate')

    def _race_log(self, op, target_rank):
        """Where an access to ``target_rank`` by ``op`` is noted (a
        function of the :class:`Access`), by the epoch it is made in;
        None: nowhere (an exclusive lock orders it)."""
        shared = self._s
        held = self._locks.get(target_rank)
        if held is not None or self._lock_all:
            if held is not None and held[0] == LOCK_EXCLUSIVE or \
                    shared.flavor == FLAVOR_SHARED:
                # Ordered by the lock; or any rank may load the memory.
                return None
            quiet = self._quiet(target_rank)
            reads = op in _FETCHING
            # A request-based read is complete once its request is.
            keep = self._request not in ('Rget', 'Rget_accumulate')
            return lambda access: shared.locked.note(access, quiet, reads,
                                                     keep)
        if self._started and target_rank in self._started:
            exposure = self._started[target_rank]
            return lambda access: shared.exposed.note(target_rank, exposure,
                                                      access)
        if self._fence and not (self._locks or self._started):
            epoch = self._epoch
            return lambda access: shared.races.note(epoch, access)
        return None

    def _quiet(self, target_rank):
        """What every thread of ``target_rank`` is blocked in now (pairs
        of thread and call), or None if one runs: while that holds, the
        target loads nothing from its memory."""
        shared = self._s
        world = shared.world
        with world.lock:
            actors = world.actors[shared.group[target_rank]]
            blocked = tuple((a, a.waiting) for a in actors)
        if any(call is None for _, call in blocked):
            return None
        return blocked

    def _base(self, target_rank, address):
        """The address of the memory of ``target_rank`` holding
        ``address`` (its window, or the attached region)."""
        shared = self._s
        if shared.flavor == FLAVOR_DYNAMIC:
            for start, array in shared.regions[target_rank]:
                if start <= address < start + array.nbytes:
                    return start
        return shared.memories[target_rank].__array_interface__['data'][0]

    def Put(self, origin, target_rank, target=None):
        """Write ``origin`` into ``target_rank``'s window."""
        buf, view = self._target('Put', origin, target_rank, target)
        if view is None:
            return

        sent = buf.data[:view.size]

        def put(target):
            target[...] = sent
        self._touch('Put', 'put', target_rank, view, put)
        self._defer('Put', target_rank, sent=_program_memory(buf, sent))
        self._changed()

    def Get(self, origin, target_rank, target=None):
        """Read ``target_rank``'s window into ``origin``."""
        buf, view = self._target('Get', origin, target_rank, target)
        if view is None:
            return
        if view.size > buf.count:
            raise MPIException(ERR_TYPE, 'Win.Get: {} elements do not fit '
                               'the origin\'s {}'.format(view.size,
                                                         buf.count))

        # Read now (the race check sees when), written to the origin
        # when the operation completes, as a real MPI's lands by then.
        read = self._touch('Get', 'get', target_rank, view,
                           lambda target: target.copy())
        self._defer('Get', target_rank,
                    results=[(buf.data[:view.size], read)],
                    flush=buf.flush if buf.scatter is not None else None)

    def _apply(self, view, operand, op):
        if op == _NO_OP:
            return
        if op == _REPLACE:
            view[...] = operand
            return
        if not op.is_predefined:
            raise MPIException(ERR_OP, 'Win: user-defined op {} in an '
                               'accumulate'.format(describe(op)))
        with np.errstate(all='ignore'):     # C arithmetic: no warnings
            op._reduce_into(view, operand)

    def Accumulate(self, origin, target_rank, target=None, op=None):
        """Compute ``target = target op origin``, atomically per element."""
        op = OP_NAMES['SUM'] if op is None else op
        buf, view = self._target('Accumulate', origin, target_rank, target)
        if view is None:
            return
        operand = buf.data[:view.size]
        self._touch('Accumulate', _kind(op), target_rank, view,
                    lambda target: self._apply(target, operand, op))
        self._defer('Accumulate', target_rank,
                    sent=_program_memory(buf, operand))
        self._changed()

    def Get_accumulate(self, origin, result, target_rank, target=None,
                       op=None):
        """Fetch the target into ``result``, then accumulate ``origin``."""
        op = OP_NAMES['SUM'] if op is None else op
        buf, view = self._target('Get_accumulate', origin, target_rank,
                                 target)
        origin_data = None if view is None or op == _NO_OP else \
            buf.data[:view.size]
        if view is None:
            return
        # A derived result type gives a packed copy, flushed at the end.
        out = parse(result, 'Win.Get_accumulate result buffer', packed=True)
        if out.count < view.size or out.data.dtype != view.dtype:
            raise MPIException(ERR_TYPE, 'Win.Get_accumulate: result '
                               'buffer does not hold {} {}'.format(
                                   view.size, view.dtype))
        def fetch_and_apply(target):
            fetched = target.copy()
            if origin_data is not None:
                self._apply(target, origin_data, op)
            return fetched
        fetched = self._touch('Get_accumulate', _kind(op), target_rank,
                              view, fetch_and_apply)
        self._defer('Get_accumulate', target_rank,
                    sent=[] if origin_data is None else _program_memory(
                        buf, origin_data),
                    results=[(out.data[:view.size], fetched)],
                    flush=out.flush if out.scatter is not None else None)
        if op != _NO_OP:
            self._changed()

    def Fetch_and_op(self, origin, result, target_rank, target_disp=0,
                     op=None):
        """Get_accumulate of one element at ``target_disp``."""
        op = OP_NAMES['SUM'] if op is None else op
        buf, view = self._target('Fetch_and_op', origin, target_rank,
                                 (target_disp,), count_of=1, derived=False)
        if view is None:
            return
        out = _single(('origin', buf), ('result', result))[1]

        def fetch_and_apply(target):
            fetched = target.copy()
            if op != _NO_OP:
                self._apply(target, buf.data[:1], op)
            return fetched
        fetched = self._touch('Fetch_and_op', _kind(op), target_rank, view,
                              fetch_and_apply)
        self._defer('Fetch_and_op', target_rank, sent=[buf.data[:1]],
                    results=[(out.data[:1], fetched)])
        if op != _NO_OP:
            self._changed()

    def Compare_and_swap(self, origin, compare, result, target_rank,
                         target_disp=0):
        """Store ``origin`` at the target if it equals ``compare``; the
        old value goes to ``result``."""
        buf, view = self._target('Compare_and_swap', origin, target_rank,
                                 (target_disp,), count_of=1, derived=False)
        if view is None:
            return
        _, expected, out = _single(('origin', buf), ('compare', compare),
                                   ('result', result))

        def compare_and_swap(target):
            fetched = target[:1].copy()
            if fetched[0] == expected.data[0]:
                target[0] = buf.data[0]
            return fetched
        fetched = self._touch('Compare_and_swap', 'compare-and-swap',
                              target_rank, view, compare_and_swap)
        self._defer('Compare_and_swap', target_rank,
                    sent=[buf.data[:1], expected.data[:1]],
                    results=[(out.data[:1], fetched)])
        self._changed()

    # Request-based operations complete at the call.
    def _completed_now(self, op, call, *args):
        self._in_passive_epoch(op)
        pending = len(self._pending)
        self._request = op
        try:
            call(*args)
        finally:
            self._request = None
        done, self._pending = (self._pending[pending:],
                               self._pending[:pending])
        for _, finish in done:
            finish('Win.' + op)
        return Request()

    def Rput(self, origin, target_rank, target=None):
        """Put, returning a completed request."""
        return self._completed_now('Rput', self.Put, origin, target_rank,
                                   target)

    def Rget(self, origin, target_rank, target=None):
        """Get, returning a completed request."""
        return self._completed_now('Rget', self.Get, origin, target_rank,
                                   target)

    def Raccumulate(self, origin, target_rank, target=None, op=None):
        """Accumulate, returning a completed request."""
        return self._completed_now('Raccumulate', self.Accumulate, origin,
                                   target_rank, target, op)

    def Rget_accumulate(self, origin, result, target_rank, target=None,
                        op=None):
        """Get_accumulate, returning a completed request."""
        return self._completed_now('Rget_accumulate', self.Get_accumulate,
                                   origin, result, target_rank, target, op)


class _Scattered:
    """The target elements of a derived datatype in a window's memory,
    by byte index: gathered into an array and scattered back (no NumPy
    view reaches them)."""

    __slots__ = ('memory', 'index', 'dtype', 'size')

    def __init__(self, memory, index, dtype):
        self.memory, self.index, self.dtype = memory, index, dtype
        self.size = index.size // dtype.itemsize

    def gather(self):
        return self.memory[self.index].view(self.dtype)

    def scatter(self, values):
        self.memory[self.index] = np.ascontiguousarray(
            values, self.dtype).view(np.uint8)


def _type_count(buf):
    """How many elements of its datatype the origin ``buf`` holds (its
    ``count`` is in basic elements)."""
    datatype = buf.datatype
    if datatype.is_predefined:
        return buf.count
    size = datatype._layout.size
    return buf.count * buf.data.dtype.itemsize // size if size else 0


# A bytearray's fields after the object header (refcount, type, size):
# bytes allocated, its own bytes, where its data starts (what it exports).
_WORD = ctypes.sizeof(ctypes.c_void_p)
_SIZE, _BYTES, _START = 2 * _WORD, 4 * _WORD, 5 * _WORD


def _field(obj, offset, kind=ctypes.c_void_p):
    return kind.from_address(id(obj) + offset)


def _bytearray_layout_known():
    probe = bytearray(b'win')
    return (_field(probe, _SIZE, ctypes.c_ssize_t).value == 3 and
            _field(probe, _START).value == _field(probe, _BYTES).value and
            ctypes.string_at(_field(probe, _START).value, 3) == b'win' and
            bytearray.__basicsize__ == 7 * _WORD)


_CAN_EXPORT = _bytearray_layout_known()


def _export(win, array):
    """Make the handle ``win`` export ``array`` (its rank's window
    memory, a flat uint8 array) through the buffer protocol, as every
    handle to an mpi4py window exports the window's memory: its
    bytearray base, empty and owning nothing, is pointed at the array's
    bytes. Nothing of bytearray's can resize it (HidesBase hides its
    methods), ``win`` keeps the array alive (the window's state holds
    it), and a bytearray that owns no bytes frees none."""
    if not (_CAN_EXPORT and array.size) or _field(
            win, _SIZE, ctypes.c_ssize_t).value or _field(win, _BYTES).value:
        return      # (not a layout this knows: it exports nothing)
    _field(win, _START).value = array.__array_interface__['data'][0]
    _field(win, _SIZE, ctypes.c_ssize_t).value = array.size


def _program_memory(buf, sent):
    """What a pending send must leave alone: ``sent`` when it is the
    program's memory (not a derived type's packed copy)."""
    return [sent] if buf.scatter is None else []


def _kind(op):
    """An accumulate's kind for the race check: its op's name."""
    return 'accumulate ' + op._name


def _single(*named):
    """Parsed single-element buffers of one datatype (mpi4py's checks
    for Fetch_and_op and Compare_and_swap)."""
    parsed = []
    for name, spec in named:
        buf = spec if not isinstance(spec, (list, tuple)) and hasattr(
            spec, 'datatype') and hasattr(spec, 'count') else \
            parse(spec, 'Win {} buffer'.format(name))
        if buf.count != 1:
            raise ValueError('{}: expecting a single element, got {}'
                             .format(name, buf.count))
        if parsed and buf.datatype != parsed[0].datatype:
            raise ValueError('mismatch in origin and {} MPI datatypes'
                             .format(name))
        parsed.append(buf)
    return parsed


def _comm_or_self(comm):
    """``comm``, or the calling rank's COMM_SELF (mpi4py's default)."""
    if comm is not None:
        return comm
    from simulator.mpi.comm import Intracomm
    ctx = current()
    states = None if ctx is None else ctx.local.get('mpi')
    if states is None:
        raise RuntimeError('simulator.mpi.Win used outside a simulated rank')
    return Intracomm(states['COMM_SELF'])


WIN_NULL = Win()
