"""MPI-IO (``MPI.File``): files opened by a group of ranks.

Rank threads share one process, so an open file is one real file that
every rank reaches through a descriptor of its own (``os.pread`` /
``os.pwrite`` at explicit offsets, no shared OS file position): what a
rank writes is seen by the others at once, as on a single POSIX file
system. Per rank a handle keeps its view (displacement, etype, filetype,
data representation), its individual file pointer and its error handler;
the shared file pointer lives with the file, under a lock.

Collective calls (``Open``, ``Close``, ``Set_view``, ``Set_size``,
``Sync``, the ``_all`` and ``_ordered`` accesses...) meet through the
simulator's collective machinery on the file's own call sequence, so a
rank that calls another collective, or never comes, is reported as a
mismatch or a deadlock. Data moves at the call: a non-blocking access
(``Iread_at``...) or a split collective's ``_begin`` has done its I/O
when it returns; the request or ``_end`` gives the status.

Open MPI 5.0's ompio is the reference for error classes (``amode``
checks, ``MODE_RDWR | MODE_SEQUENTIAL`` refused, negative offsets
``ERR_OTHER``...). Differences: the data representation is ``native``
(``internal`` is the same bytes; ``external32`` raises NotSimulated);
an error raises ``MPI.Exception`` whatever the file's error handler
(the handler is kept and ``Call_errhandler`` runs it); ``SEEK_END``
counts the etypes the view has before the end of the file (ompio counts
the bytes after the displacement, holes included).
"""
import errno
import os
import threading

import numpy as np

from simulator.engine import collectives as coll
from simulator.engine.actors import current
from simulator.engine.communicator import CommState
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.coll import _CollectiveRequest, _start
from simulator.mpi.commattr import (ERRORS_RETURN, INFO_NULL, Errhandler,
                                    Info, call_errhandler, create_errhandler)
from simulator.mpi.constants import (ANY_SOURCE, ANY_TAG, ERR_ARG, ERR_COMM,
                                     ERR_OTHER, ERR_TYPE)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.datatypes import DATATYPE_NAMES, Datatype
from simulator.mpi.group import Group
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.msgspec import parse
from simulator.mpi.naming import describe, reduce_constant, unserializable
from simulator.mpi.request import ProcNullRequest
from simulator.mpi.unsupported import not_simulated
from simulator.mpi.values import VALUES

__all__ = ['File', 'FILE_NULL']

_V = VALUES
MODE_RDONLY, MODE_WRONLY, MODE_RDWR = (_V['MODE_RDONLY'], _V['MODE_WRONLY'],
                                       _V['MODE_RDWR'])
MODE_CREATE, MODE_EXCL = _V['MODE_CREATE'], _V['MODE_EXCL']
MODE_DELETE_ON_CLOSE, MODE_UNIQUE_OPEN = (_V['MODE_DELETE_ON_CLOSE'],
                                          _V['MODE_UNIQUE_OPEN'])
MODE_SEQUENTIAL, MODE_APPEND = _V['MODE_SEQUENTIAL'], _V['MODE_APPEND']
_ALL_MODES = (MODE_RDONLY | MODE_WRONLY | MODE_RDWR | MODE_CREATE |
              MODE_EXCL | MODE_DELETE_ON_CLOSE | MODE_UNIQUE_OPEN |
              MODE_SEQUENTIAL | MODE_APPEND)
SEEK_SET, SEEK_CUR, SEEK_END = _V['SEEK_SET'], _V['SEEK_CUR'], _V['SEEK_END']
DISPLACEMENT_CURRENT = _V['DISPLACEMENT_CURRENT']
ERR_FILE, ERR_AMODE, ERR_ACCESS = (_V['ERR_FILE'], _V['ERR_AMODE'],
                                   _V['ERR_ACCESS'])
ERR_READ_ONLY, ERR_UNSUPPORTED_DATAREP = (_V['ERR_READ_ONLY'],
                                          _V['ERR_UNSUPPORTED_DATAREP'])
# What an OS error means in MPI's error classes (others: ERR_IO).
_ERRNO_CLASSES = {
    errno.ENOENT: _V['ERR_NO_SUCH_FILE'], errno.ENOTDIR: _V['ERR_BAD_FILE'],
    errno.EISDIR: _V['ERR_BAD_FILE'], errno.ENAMETOOLONG: _V['ERR_BAD_FILE'],
    errno.EACCES: ERR_ACCESS, errno.EPERM: ERR_ACCESS,
    errno.EEXIST: _V['ERR_FILE_EXISTS'], errno.ENOSPC: _V['ERR_NO_SPACE'],
    errno.EDQUOT: _V['ERR_QUOTA'], errno.EROFS: ERR_READ_ONLY,
    errno.EINVAL: ERR_OTHER}
_BYTE = DATATYPE_NAMES['BYTE']


def _copy_error(error):
    """A rank's own copy of ``error``, the MPI.Exception one rank's part
    of a collective file call raised for all (each rank raises its own
    object), with its class and its notes (the simulator's detail)."""
    return MPIException(error.Get_error_class(),
                        '; '.join(getattr(error, '__notes__', ())) or None)


def _os_error(op, error):
    """The MPI.Exception for an OSError of ``op``."""
    return MPIException(_ERRNO_CLASSES.get(error.errno, _V['ERR_IO']),
                        '{}: {}'.format(op, error))


class _Shared:
    """What the ranks of one open file share."""

    def __init__(self, path, amode, group):
        self.path = path
        self.amode = amode
        self.group = group
        self.lock = threading.Lock()
        self.pointer = 0        # the shared file pointer, in etypes
        self.atomic = False


class _View:
    """A file view: where the etypes a rank sees lie in the file.

    The filetype's data bytes are kept as runs (``starts`` in the
    filetype's data, ``offsets`` in the file relative to a tile,
    ``lengths``); tile ``t`` lies at ``disp + t * extent``.
    """

    def __init__(self, disp, etype, filetype, datarep):
        self.disp = disp
        self.etype, self.filetype, self.datarep = etype, filetype, datarep
        self.esize = etype.Get_size()
        layout = filetype._layout
        self.size, self.extent = layout.size, layout.extent
        index = layout.element_index()
        cut = np.flatnonzero(np.diff(index) != 1) + 1
        first = np.concatenate(([0], cut)).astype(np.int64)
        self.starts = first
        self.offsets = index[first] if index.size else index
        self.lengths = np.diff(np.concatenate((first, [index.size])))
        self.plain = (len(first) == 1 and self.offsets[0] == 0 and
                      self.size == self.extent)

    def runs(self, position, nbytes):
        """(file offsets, lengths) of ``nbytes`` of data from etype
        ``position``, merged where they touch, in data order."""
        start = position * self.esize
        if nbytes <= 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if self.plain:
            return (np.array([self.disp + start], np.int64),
                    np.array([nbytes], np.int64))
        end = start + nbytes
        tiles = np.arange(start // self.size, (end - 1) // self.size + 1,
                          dtype=np.int64)[:, None]
        data = (tiles * self.size + self.starts).ravel()
        where = (self.disp + tiles * self.extent + self.offsets).ravel()
        lengths = np.broadcast_to(self.lengths, (len(tiles),
                                                 len(self.lengths))).ravel()
        lo = np.maximum(data, start)
        hi = np.minimum(data + lengths, end)
        keep = hi > lo
        where = (where + lo - data)[keep]
        lengths = (hi - lo)[keep]
        joined = np.flatnonzero(where[1:] != where[:-1] + lengths[:-1]) + 1
        bounds = np.concatenate(([0], joined))
        sums = np.add.reduceat(lengths, bounds) if lengths.size else lengths
        return where[bounds], sums

    def byte_offset(self, position):
        """The file offset of etype ``position``."""
        k = position * self.esize
        tile, rest = divmod(k, self.size) if self.size else (0, 0)
        run = int(np.searchsorted(self.starts, rest, side='right')) - 1
        return int(self.disp + tile * self.extent + self.offsets[run] +
                   rest - self.starts[run])

    def etypes_before(self, file_size):
        """How many etypes of the view lie before byte ``file_size``."""
        room = file_size - self.disp
        if room <= 0 or not self.size or not self.esize:
            return 0
        tiles, rest = divmod(room, self.extent)
        ends = np.minimum(self.offsets + self.lengths, rest)
        partial = int(np.maximum(ends - self.offsets, 0).sum())
        data = tiles * self.size + partial
        return -(-data // self.esize)


def _io_loop(fd, runs, data, write):
    """pwrite / pread ``data`` over the runs; the bytes moved (a read
    stops at the end of the file)."""
    done = 0
    for where, length in zip(*runs):
        where, length = int(where), int(length)
        piece = data[done:done + length]
        moved = 0
        while moved < length:
            if write:
                n = os.pwrite(fd, piece[moved:], where + moved)
            else:
                chunk = os.pread(fd, length - moved, where + moved)
                n = len(chunk)
                piece[moved:moved + n] = np.frombuffer(chunk, np.uint8)
                if n == 0:
                    return done + moved
            moved += n
        done += length
    return done


class _Open:
    """One rank's side of an open file (what File handles name)."""

    def __init__(self, shared, fd, state, rank, errhandler):
        self.shared, self.fd, self.state, self.rank = shared, fd, state, rank
        self.view = _View(0, _BYTE, _BYTE, 'native')
        self.position = 0
        self.split = None           # (op, nbytes) of a split collective
        self.errhandler = [errhandler]     # a box: handles share it
        self.info = Info.Create()

    def record(self, op, seq=None):
        state = self.state
        return CallRecord(op, state.world_rank, None, None, state.name, seq,
                          raw=capture(4))


class _DoneRequest(ProcNullRequest):
    """A non-blocking access whose data moved at the call: active until
    completed, then its status counts the bytes."""

    def __init__(self, nbytes):
        super().__init__()
        self._nbytes = nbytes

    def _finish(self, status):
        status._fill(ANY_SOURCE, ANY_TAG, self._nbytes)
        return None


class _CollectiveIORequest(_CollectiveRequest):
    """A non-blocking collective access: complete once every rank has
    started it; its status counts this rank's bytes."""

    def __init__(self, state, slot, record, nbytes):
        super().__init__(state, slot, record)
        self._nbytes = nbytes

    def _finish(self, status):
        super()._finish(status)
        status._fill(ANY_SOURCE, ANY_TAG, self._nbytes)
        return None


def _local(key, default):
    ctx = current()
    if ctx is None:
        return default
    return ctx.local.setdefault(key, default)


def _path_of(filename):
    if not isinstance(filename, (str, bytes, os.PathLike)):
        raise TypeError('File: filename must be str, bytes or os.PathLike, '
                        'got {!r}'.format(filename))
    return os.fsdecode(os.fspath(filename))


def _check_amode(amode):
    if not isinstance(amode, int):
        raise TypeError('File.Open: amode must be an int, got {!r}'.format(
            amode))
    access = amode & (MODE_RDONLY | MODE_WRONLY | MODE_RDWR)
    bad = None
    if amode & ~_ALL_MODES:
        bad = 'unknown bits {:#x}'.format(amode & ~_ALL_MODES)
    elif access not in (MODE_RDONLY, MODE_WRONLY, MODE_RDWR):
        bad = 'exactly one of MODE_RDONLY, MODE_WRONLY, MODE_RDWR is needed'
    elif access == MODE_RDONLY and amode & (MODE_CREATE | MODE_EXCL):
        bad = 'MODE_RDONLY with MODE_CREATE or MODE_EXCL'
    elif access == MODE_RDWR and amode & MODE_SEQUENTIAL:
        bad = 'MODE_RDWR with MODE_SEQUENTIAL (Open MPI refuses it)'
    if bad is not None:
        raise MPIException(ERR_AMODE, 'File.Open: amode {} invalid: {}'
                           .format(amode, bad))


def _open_all(path, amode, n):
    """Open ``n`` descriptors of ``path`` (one per rank), creating the
    file first if asked; an MPI.Exception instead if that fails."""
    access = amode & (MODE_RDONLY | MODE_WRONLY | MODE_RDWR)
    flags = {MODE_RDONLY: os.O_RDONLY, MODE_WRONLY: os.O_WRONLY,
             MODE_RDWR: os.O_RDWR}[access] | getattr(os, 'O_CLOEXEC', 0)
    fds = []
    try:
        if amode & MODE_CREATE:
            create = os.O_CREAT | (os.O_EXCL if amode & MODE_EXCL else 0)
            fds.append(os.open(path, flags | create, 0o666))
        while len(fds) < n:
            fds.append(os.open(path, flags))
        if os.path.isdir(path):
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    except OSError as error:
        for fd in fds:
            os.close(fd)
        return _os_error('File.Open {!r}'.format(path), error)
    return fds


def _open_file(comm, path, amode, info):
    """Open ``path`` collectively over ``comm`` (File.Open)."""
    from simulator.mpi.comm import Intercomm
    if not hasattr(comm, '_s'):
        raise TypeError('File.Open: comm must be an Intracomm, got '
                        '{}'.format(describe(comm)))
    if isinstance(comm, Intercomm):
        raise MPIException(ERR_COMM, 'File.Open on an intercommunicator')
    state = comm._s
    seq = state.next_seq()
    op = 'File.Open'
    record = CallRecord(op, state.world_rank, None, None, state.name, seq,
                        raw=capture(3))
    signature = (('filename', path), ('amode', amode))

    def combine(args):
        fds = _open_all(path, amode, len(state.group))
        if isinstance(fds, MPIException):
            return fds
        shared = _Shared(path, amode, state.group)
        if amode & MODE_APPEND:
            # set before any rank leaves Open: none may use it first
            shared.pointer = os.fstat(fds[0]).st_size
        return shared, fds
    slot = coll.arrive(state, seq, op, signature, None, record,
                       combine=combine)
    coll.wait_ready(state, slot, record)
    result = slot.result
    coll.leave(state, slot)
    if isinstance(result, MPIException):
        raise MPIException(result.Get_error_class(), str(result))
    shared, fds = result
    own = CommState(state.world, (state.ctx, seq, 'file'), state.group,
                    state.rank, 'File#{} {!r} of {}'.format(seq, path,
                                                            state.name))
    handle = _Open(shared, fds[state.rank], own, state.rank,
                   Errhandler(_default_errhandler()[0]))
    if info is not None and info != INFO_NULL:
        handle.info = info.Dup()
    if amode & MODE_APPEND:
        handle.position = shared.pointer    # the bytes of the default view
    return handle


def _default_errhandler():
    """The rank's error handler for files opened next (FILE_NULL's)."""
    return _local('mpi.file_errhandler', [ERRORS_RETURN])


def _check_offset(op, offset):
    if not isinstance(offset, int):
        raise TypeError('File.{}: offset must be an int, got {!r}'.format(
            op, offset))
    if offset < 0:
        # ompio's class for it (the OS refuses the negative offset)
        raise MPIException(ERR_OTHER, 'File.{}: offset {} is negative'
                           .format(op, offset))
    return offset


class File(HandleMixin):
    """An open file (mpi4py's ``MPI.File``), or FILE_NULL."""

    __module__ = 'simulator.mpi'

    def __new__(cls, file=None):
        self = super().__new__(cls)
        if file is None:
            self._h = None
        elif isinstance(file, File):
            self._h = file._h
        else:
            raise handle_argument_error('File', file)
        return self

    # -- handle ---------------------------------------------------------------
    def _handle_target(self):
        return self._h

    @classmethod
    def _from_target(cls, target):
        file = cls.__new__(cls)
        file._h = target
        return file

    @property
    def _o(self):
        h = self._h
        if h is None:
            raise MPIException(ERR_FILE, 'operation on FILE_NULL or a '
                               'closed file')
        return h

    def __bool__(self):
        return self._h is not None

    def __eq__(self, other):
        if not isinstance(other, File):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if self is FILE_NULL:
            return reduce_constant(self, 'FILE_NULL')
        if self._h is None:
            return self._reduce_copy(FILE_NULL)
        raise unserializable(self, 'an open file belongs to its process')

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        if self._h is None:
            return '<simulator.mpi.File FILE_NULL>'
        return '<simulator.mpi.File {}>'.format(self._h.state.name)

    # -- opening and closing --------------------------------------------------
    @classmethod
    def Open(cls, comm, filename, amode=MODE_RDONLY, info=INFO_NULL):
        """Open ``filename`` on every rank of ``comm`` (collective)."""
        path = _path_of(filename)
        _check_amode(amode)
        if not isinstance(info, Info):
            raise TypeError('File.Open: info must be an Info, got {}'
                            .format(describe(info)))
        return cls._from_target(_open_file(comm, path, amode, info))

    def Close(self):
        """Close the file (collective); this handle becomes FILE_NULL."""
        h = self._o

        def combine(args):
            if h.shared.amode & MODE_DELETE_ON_CLOSE:
                try:
                    os.unlink(h.shared.path)
                except OSError as error:
                    return _os_error('File.Close', error)
            return None
        try:
            error = self._collective('File.Close', combine=combine)
        finally:
            os.close(h.fd)
            self._h = None
        if error is not None:
            raise _copy_error(error)

    def free(self):
        """Close, where FILE_NULL is left as it is."""
        if self._h is not None:
            self.Close()

    @classmethod
    def Delete(cls, filename, info=INFO_NULL):
        """Delete the file ``filename``."""
        path = _path_of(filename)
        try:
            os.unlink(path)
        except OSError as error:
            raise _os_error('File.Delete', error) from None

    # -- collectives on the file ----------------------------------------------
    def _collective(self, op, signature=(), arg=None, combine=None):
        """Meet the file's other ranks in ``op``; the combined result."""
        h = self._o
        state = h.state
        seq = state.next_seq()
        record = h.record(op, seq)
        slot = coll.arrive(state, seq, op, signature, arg, record,
                           combine=combine)
        coll.wait_ready(state, slot, record)
        result = slot.result
        coll.leave(state, slot)
        return result

    # -- size, info, group, mode ----------------------------------------------
    def Set_size(self, size):
        """Truncate or extend the file to ``size`` bytes (collective)."""
        h = self._o
        if not isinstance(size, int):
            raise TypeError('File.Set_size: size must be an int, got '
                            '{!r}'.format(size))
        if size < 0:
            raise MPIException(ERR_OTHER, 'File.Set_size: size {} is '
                               'negative'.format(size))
        self._require_write(h, 'Set_size')

        def combine(args):
            try:
                os.ftruncate(h.fd, size)
            except OSError as error:
                return _os_error('File.Set_size', error)
        self._raise(self._collective('File.Set_size', combine=combine))

    def Preallocate(self, size):
        """Make the file at least ``size`` bytes long (collective)."""
        h = self._o
        if not isinstance(size, int) or size < 0:
            raise MPIException(ERR_ARG, 'File.Preallocate: size {!r} must '
                               'be an int >= 0'.format(size))

        def combine(args):
            try:
                if os.fstat(h.fd).st_size < size:
                    os.ftruncate(h.fd, size)
            except OSError as error:
                return _os_error('File.Preallocate', error)
        self._raise(self._collective('File.Preallocate', combine=combine))

    @staticmethod
    def _raise(error):
        if error is not None:
            raise _copy_error(error)

    def Get_size(self):
        """The file's size in bytes."""
        return os.fstat(self._o.fd).st_size

    size = property(Get_size)

    def Get_amode(self):
        """The access mode the file was opened with."""
        return self._o.shared.amode

    amode = property(Get_amode)

    def Get_group(self):
        """The group of the ranks that opened the file."""
        return Group._of(self._o.shared.group)

    group = property(Get_group)
    group_size = property(lambda self: len(self._o.shared.group),
                          doc='Number of ranks that opened the file.')
    group_rank = property(lambda self: self._o.rank,
                          doc='Rank of this process among those that '
                              'opened the file.')

    def Get_info(self):
        """A new Info with the file's hints."""
        return self._o.info.Dup()

    def Set_info(self, info):
        """Keep the hints of ``info`` (collective)."""
        h = self._o
        if not isinstance(info, Info):
            raise TypeError('File.Set_info: info must be an Info, got '
                            '{}'.format(describe(info)))
        self._collective('File.Set_info')
        if info != INFO_NULL:
            h.info.update(info.items())

    info = property(Get_info, Set_info)

    def Sync(self):
        """Flush the file to storage (collective)."""
        h = self._o

        def combine(args):
            try:
                os.fsync(h.fd)
            except OSError as error:
                return _os_error('File.Sync', error)
        self._raise(self._collective('File.Sync', combine=combine))

    def Set_atomicity(self, flag):
        """Atomic mode on or off (collective): in atomic mode every access
        is done whole before any other rank's starts."""
        h = self._o
        self._collective('File.Set_atomicity', (('flag', bool(flag)),))
        h.shared.atomic = bool(flag)

    def Get_atomicity(self):
        """Whether the file is in atomic mode."""
        return self._o.shared.atomic

    atomicity = property(Get_atomicity, Set_atomicity)

    # -- views ----------------------------------------------------------------
    def Set_view(self, disp=0, etype=_BYTE, filetype=None, datarep='native',
                 info=INFO_NULL):
        """Set this rank's view (collective); both file pointers go to 0."""
        h = self._o
        if filetype is None:
            filetype = etype
        for name, dt in (('etype', etype), ('filetype', filetype)):
            if not isinstance(dt, Datatype):
                raise TypeError('File.Set_view: {} must be a Datatype, got '
                                '{}'.format(name, describe(dt)))
            t = dt._t('File.Set_view ' + name)
            if not t.committed:
                raise MPIException(ERR_TYPE, 'File.Set_view: {} {} is not '
                                   'committed'.format(name, dt))
        if not isinstance(disp, int) or (disp < 0 and
                                         disp != DISPLACEMENT_CURRENT):
            raise MPIException(ERR_ARG, 'File.Set_view: displacement {!r} '
                               'must be an int >= 0'.format(disp))
        if disp == DISPLACEMENT_CURRENT:
            if not h.shared.amode & MODE_SEQUENTIAL:
                raise MPIException(ERR_ARG, 'File.Set_view: '
                                   'DISPLACEMENT_CURRENT needs '
                                   'MODE_SEQUENTIAL')
            disp = h.view.byte_offset(h.shared.pointer)
        if datarep == 'external32':
            raise not_simulated("MPI.File.Set_view with datarep "
                                "'external32'")
        if datarep not in ('native', 'internal'):
            raise MPIException(ERR_UNSUPPORTED_DATAREP, 'File.Set_view: '
                               'data representation {!r}'.format(datarep))
        esize, fsize = etype.Get_size(), filetype.Get_size()
        if esize <= 0 or fsize <= 0 or fsize % esize:
            raise MPIException(ERR_ARG, 'File.Set_view: filetype size {} is'
                               ' not a multiple of etype size {}'.format(
                                   fsize, esize))
        if filetype.Get_true_extent()[0] < 0 or filetype.Get_extent()[1] <= 0:
            raise MPIException(ERR_ARG, 'File.Set_view: filetype {} reaches'
                               ' before its origin'.format(filetype))
        own = [dt if dt.is_predefined else dt.Dup()
               for dt in (etype, filetype)]
        view = _View(disp, own[0], own[1], datarep)
        shared = h.shared

        def combine(args):
            # before any rank leaves: none may move the pointer first
            with shared.lock:
                shared.pointer = 0
        self._collective('File.Set_view', combine=combine)
        for old in (h.view.etype, h.view.filetype):
            if not old.is_predefined:
                old.Free()
        h.view = view
        h.position = 0

    def Get_view(self):
        """Return (disp, etype, filetype, datarep); derived types are new
        duplicates, which the caller may Free."""
        view = self._o.view
        types = [dt if dt.is_predefined else dt.Dup()
                 for dt in (view.etype, view.filetype)]
        return view.disp, types[0], types[1], view.datarep

    def Get_type_extent(self, datatype):
        """The extent of ``datatype`` in the file (native: its own)."""
        self._o  # noqa: B018 -- FILE_NULL is an error
        return datatype.Get_extent()[1]

    def Get_byte_offset(self, offset):
        """The file offset of etype ``offset`` of the view."""
        return self._o.view.byte_offset(_check_offset('Get_byte_offset',
                                                      offset))

    # -- data access ----------------------------------------------------------
    @staticmethod
    def _require_write(h, op):
        if h.shared.amode & MODE_RDONLY:
            raise MPIException(ERR_READ_ONLY, 'File.{}: {!r} was opened '
                               'MODE_RDONLY'.format(op, h.shared.path))

    def _buffer(self, h, op, buf, write):
        """The data bytes of ``buf`` (and the parsed buffer), checked
        against the access mode."""
        if write:
            self._require_write(h, op)
        elif h.shared.amode & MODE_WRONLY:
            raise MPIException(ERR_ACCESS, 'File.{}: {!r} was opened '
                               'MODE_WRONLY'.format(op, h.shared.path))
        parsed = parse(buf, 'File.' + op, writable=not write, packed=True)
        data = parsed.head()
        data = data.view(np.uint8).reshape(-1) if data.size else \
            np.empty(0, np.uint8)
        return parsed, data

    def _move(self, h, op, position, parsed, data, write):
        """Move ``data`` at etype ``position`` of the view; bytes moved."""
        runs = h.view.runs(position, data.size)
        try:
            if h.shared.atomic:
                with h.shared.lock:
                    moved = _io_loop(h.fd, runs, data, write)
            else:
                moved = _io_loop(h.fd, runs, data, write)
        except OSError as error:
            raise _os_error('File.' + op, error) from None
        if not write:
            parsed.flush()
        return moved

    def _etypes(self, h, data):
        return data.size // h.view.esize

    def _at(self, op, offset, buf, write):
        h = self._o
        _check_offset(op, offset)
        parsed, data = self._buffer(h, op, buf, write)
        return self._move(h, op, offset, parsed, data, write)

    def _individual(self, op, buf, write):
        h = self._o
        parsed, data = self._buffer(h, op, buf, write)
        position = h.position
        h.position = position + self._etypes(h, data)
        return self._move(h, op, position, parsed, data, write)

    def _shared_pointer(self, op, buf, write):
        h = self._o
        parsed, data = self._buffer(h, op, buf, write)
        with h.shared.lock:
            position = h.shared.pointer
            h.shared.pointer = position + self._etypes(h, data)
        return self._move(h, op, position, parsed, data, write)

    def _ordered(self, op, buf, write):
        """Rank order: each rank's data follows the lower ranks' at the
        shared pointer (collective)."""
        h = self._o
        parsed, data = self._buffer(h, op, buf, write)
        shared = h.shared

        def combine(args):
            with shared.lock:
                base = shared.pointer
                shared.pointer = base + sum(args)
            return np.concatenate(([base], base + np.cumsum(args)[:-1]))
        starts = self._collective('File.' + op, arg=self._etypes(h, data),
                                  combine=combine)
        return self._move(h, op, int(starts[h.rank]), parsed, data, write)

    def _all(self, op, access, *args):
        """A collective access: this rank's part, then the meeting."""
        moved = access(*args)
        self._collective('File.' + op)
        return moved

    def _nonblocking_all(self, op, access, *args):
        h = self._o
        moved = access(*args)
        s, slot, record = _start(_FileComm(h.state), 'File.' + op, (), None)
        return _CollectiveIORequest(s, slot, record, moved)

    def _begin(self, op, access, *args):
        h = self._o
        if h.split is not None:
            raise MPIException(ERR_OTHER, 'File.{}_begin: {}_begin is still'
                               ' pending (one split collective per file '
                               'handle)'.format(op, h.split[0]))
        moved = self._all(op, access, *args)
        h.split = (op, moved)

    def _end(self, op, buf, status):
        h = self._o
        if buf is None:
            # mpi4py parses the buffer _end is given, as _begin's
            raise TypeError('File.{}_end: buffer expected, got None'
                            .format(op))
        parse(buf, 'File.{}_end'.format(op))
        if h.split is None or h.split[0] != op:
            raise MPIException(ERR_OTHER, 'File.{}_end without {}_begin '
                               '(pending: {})'.format(
                                   op, op, h.split and h.split[0] + '_begin'))
        moved = h.split[1]
        h.split = None
        _fill(status, moved)

    # explicit offsets
    def Read_at(self, offset, buf, status=None):
        """Read at etype ``offset`` of the view."""
        _fill(status, self._at('Read_at', offset, buf, False))

    def Write_at(self, offset, buf, status=None):
        """Write at etype ``offset`` of the view."""
        _fill(status, self._at('Write_at', offset, buf, True))

    def Read_at_all(self, offset, buf, status=None):
        """Read_at, collective."""
        _fill(status, self._all('Read_at_all', self._at, 'Read_at_all',
                                offset, buf, False))

    def Write_at_all(self, offset, buf, status=None):
        """Write_at, collective."""
        _fill(status, self._all('Write_at_all', self._at, 'Write_at_all',
                                offset, buf, True))

    def Iread_at(self, offset, buf):
        """Read_at, non-blocking."""
        return _DoneRequest(self._at('Iread_at', offset, buf, False))

    def Iwrite_at(self, offset, buf):
        """Write_at, non-blocking."""
        return _DoneRequest(self._at('Iwrite_at', offset, buf, True))

    def Iread_at_all(self, offset, buf):
        """Read_at_all, non-blocking."""
        return self._nonblocking_all('Iread_at_all', self._at,
                                     'Iread_at_all', offset, buf, False)

    def Iwrite_at_all(self, offset, buf):
        """Write_at_all, non-blocking."""
        return self._nonblocking_all('Iwrite_at_all', self._at,
                                     'Iwrite_at_all', offset, buf, True)

    def Read_at_all_begin(self, offset, buf):
        """Start a split collective Read_at_all."""
        self._begin('Read_at_all', self._at, 'Read_at_all_begin', offset,
                    buf, False)

    def Read_at_all_end(self, buf, status=None):
        """Finish Read_at_all_begin."""
        self._end('Read_at_all', buf, status)

    def Write_at_all_begin(self, offset, buf):
        """Start a split collective Write_at_all."""
        self._begin('Write_at_all', self._at, 'Write_at_all_begin', offset,
                    buf, True)

    def Write_at_all_end(self, buf, status=None):
        """Finish Write_at_all_begin."""
        self._end('Write_at_all', buf, status)

    # individual file pointer
    def Read(self, buf, status=None):
        """Read at the individual file pointer."""
        _fill(status, self._individual('Read', buf, False))

    def Write(self, buf, status=None):
        """Write at the individual file pointer."""
        _fill(status, self._individual('Write', buf, True))

    def Read_all(self, buf, status=None):
        """Read, collective."""
        _fill(status, self._all('Read_all', self._individual, 'Read_all',
                                buf, False))

    def Write_all(self, buf, status=None):
        """Write, collective."""
        _fill(status, self._all('Write_all', self._individual, 'Write_all',
                                buf, True))

    def Iread(self, buf):
        """Read, non-blocking."""
        return _DoneRequest(self._individual('Iread', buf, False))

    def Iwrite(self, buf):
        """Write, non-blocking."""
        return _DoneRequest(self._individual('Iwrite', buf, True))

    def Iread_all(self, buf):
        """Read_all, non-blocking."""
        return self._nonblocking_all('Iread_all', self._individual,
                                     'Iread_all', buf, False)

    def Iwrite_all(self, buf):
        """Write_all, non-blocking."""
        return self._nonblocking_all('Iwrite_all', self._individual,
                                     'Iwrite_all', buf, True)

    def Read_all_begin(self, buf):
        """Start a split collective Read_all."""
        self._begin('Read_all', self._individual, 'Read_all_begin', buf,
                    False)

    def Read_all_end(self, buf, status=None):
        """Finish Read_all_begin."""
        self._end('Read_all', buf, status)

    def Write_all_begin(self, buf):
        """Start a split collective Write_all."""
        self._begin('Write_all', self._individual, 'Write_all_begin', buf,
                    True)

    def Write_all_end(self, buf, status=None):
        """Finish Write_all_begin."""
        self._end('Write_all', buf, status)

    def _new_position(self, op, h, current, offset, whence):
        if not isinstance(offset, int):
            raise TypeError('File.{}: offset must be an int, got {!r}'
                            .format(op, offset))
        if whence == SEEK_SET:
            position = offset
        elif whence == SEEK_CUR:
            position = current + offset
        elif whence == SEEK_END:
            position = h.view.etypes_before(self.Get_size()) + offset
        else:
            raise MPIException(ERR_ARG, 'File.{}: whence {!r} is not '
                               'SEEK_SET, SEEK_CUR or SEEK_END'.format(
                                   op, whence))
        if position < 0:
            raise MPIException(ERR_OTHER, 'File.{}: position {} is before '
                               'the start of the view'.format(op, position))
        return position

    def Seek(self, offset, whence=SEEK_SET):
        """Move the individual file pointer (in etypes of the view)."""
        h = self._o
        h.position = self._new_position('Seek', h, h.position, offset,
                                        whence)

    def Get_position(self):
        """The individual file pointer, in etypes of the view."""
        return self._o.position

    # shared file pointer
    def Read_shared(self, buf, status=None):
        """Read at the shared file pointer."""
        _fill(status, self._shared_pointer('Read_shared', buf, False))

    def Write_shared(self, buf, status=None):
        """Write at the shared file pointer."""
        _fill(status, self._shared_pointer('Write_shared', buf, True))

    def Iread_shared(self, buf):
        """Read_shared, non-blocking."""
        return _DoneRequest(self._shared_pointer('Iread_shared', buf, False))

    def Iwrite_shared(self, buf):
        """Write_shared, non-blocking."""
        return _DoneRequest(self._shared_pointer('Iwrite_shared', buf, True))

    def Read_ordered(self, buf, status=None):
        """Read at the shared file pointer in rank order (collective)."""
        _fill(status, self._ordered('Read_ordered', buf, False))

    def Write_ordered(self, buf, status=None):
        """Write at the shared file pointer in rank order (collective)."""
        _fill(status, self._ordered('Write_ordered', buf, True))

    def Read_ordered_begin(self, buf):
        """Start a split collective Read_ordered."""
        self._begin('Read_ordered', self._ordered, 'Read_ordered_begin',
                    buf, False)

    def Read_ordered_end(self, buf, status=None):
        """Finish Read_ordered_begin."""
        self._end('Read_ordered', buf, status)

    def Write_ordered_begin(self, buf):
        """Start a split collective Write_ordered."""
        self._begin('Write_ordered', self._ordered, 'Write_ordered_begin',
                    buf, True)

    def Write_ordered_end(self, buf, status=None):
        """Finish Write_ordered_begin."""
        self._end('Write_ordered', buf, status)

    def Seek_shared(self, offset, whence=SEEK_SET):
        """Move the shared file pointer (collective; every rank gives the
        same offset and whence)."""
        h = self._o
        shared = h.shared
        position = self._new_position('Seek_shared', h, shared.pointer,
                                      offset, whence)

        def combine(args):
            with shared.lock:
                shared.pointer = position
        self._collective('File.Seek_shared', (('offset', offset),
                                              ('whence', whence)),
                         combine=combine)

    def Get_position_shared(self):
        """The shared file pointer, in etypes of the view."""
        h = self._o
        with h.shared.lock:
            return h.shared.pointer

    # -- error handlers -------------------------------------------------------
    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """A new error handler calling ``errhandler_fn(file, errorcode)``."""
        return create_errhandler('file', errhandler_fn)

    def _errhandler_slot(self):
        return _default_errhandler() if self._h is None else \
            self._h.errhandler

    def Get_errhandler(self):
        """A new handle to the file's error handler (FILE_NULL's is the
        one files opened next start with)."""
        return Errhandler(self._errhandler_slot()[0])

    def Set_errhandler(self, errhandler):
        """Set the file's error handler (errors still raise
        MPI.Exception, as with ERRORS_RETURN)."""
        if not isinstance(errhandler, Errhandler):
            raise TypeError('File.Set_errhandler expects an Errhandler, got '
                            '{}'.format(describe(errhandler)))
        if not errhandler:
            raise MPIException(ERR_ARG, 'File.Set_errhandler with '
                               'ERRHANDLER_NULL')
        self._errhandler_slot()[0] = Errhandler(errhandler)

    def Call_errhandler(self, errorcode):
        """Invoke the file's error handler with ``errorcode``."""
        call_errhandler(self._errhandler_slot()[0], self, errorcode)


class _FileComm:
    """What coll._start needs of a communicator: the file's CommState."""

    __slots__ = ('_s',)

    def __init__(self, state):
        self._s = state


def _fill(status, nbytes):
    if status is not None:
        status._fill(ANY_SOURCE, ANY_TAG, nbytes)


FILE_NULL = File()
