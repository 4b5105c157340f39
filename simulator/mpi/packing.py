"""``Datatype.Pack`` / ``Unpack`` and their ``external32`` forms.

They move data through a datatype's typemap like a message does, so they
sit above :mod:`simulator.mpi.msgspec` and are added to
:class:`~simulator.mpi.datatypes.Datatype` when ``simulator.mpi`` is
imported (the datatype module itself stays below the buffer parser).
As in mpi4py, the input or output buffer is plain memory holding as many
elements of the datatype as fit (its length over the extent).
"""
import numpy as np

from simulator.mpi.constants import ERR_ARG, ERR_TRUNCATE
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.datatypes import Datatype
from simulator.mpi.msgspec import parse, raw_bytes

__all__ = ['install']


def _elements(datatype, raw, where, writable):
    """The buffer of as many ``datatype`` elements as ``raw`` holds."""
    extent = datatype.Get_extent()[1]
    count = raw.size // extent if extent > 0 else 0
    return parse([raw, count, datatype], where, writable=writable,
                 packed=True)


def _big_endian(data, datatype):
    """``data`` (packed ``datatype`` elements) with each element's bytes
    swapped: external32 is big-endian, this machine little-endian."""
    itemsize = datatype.dtype.itemsize if datatype.dtype is not None else 1
    if itemsize == 1 or datatype.dtype.fields or not np.little_endian:
        return data
    if datatype.dtype.kind == 'c':
        itemsize //= 2
    return data.reshape(-1, itemsize)[:, ::-1].reshape(-1).copy()


def _pack(datatype, inbuf, outbuf, position, where, external=False):
    raw = raw_bytes(inbuf, '{} input buffer'.format(where))
    data = _elements(datatype, raw, where, False).head()
    data = data.view(np.uint8).reshape(-1)
    if external:
        data = _big_endian(data, datatype)
    out = raw_bytes(outbuf, '{} output buffer'.format(where), writable=True)
    end = position + data.size
    if position < 0 or end > out.size:
        raise MPIException(ERR_TRUNCATE, '{}: {} bytes at position {} '
                           'overrun the output buffer of {} bytes'.format(
                               where, data.size, position, out.size))
    out[position:end] = data
    return end


def _unpack(datatype, inbuf, position, outbuf, where, external=False):
    src = raw_bytes(inbuf, '{} input buffer'.format(where))
    dest = _elements(datatype, raw_bytes(outbuf, '{} output buffer'.format(
        where), writable=True), where, True)
    room = dest.head().view(np.uint8).reshape(-1)
    end = position + room.size
    if position < 0 or end > src.size:
        raise MPIException(ERR_TRUNCATE, '{}: {} bytes from position {} '
                           'overrun the input buffer of {} bytes'.format(
                               where, room.size, position, src.size))
    data = src[position:end]
    room[...] = _big_endian(data, datatype) if external else data
    dest.flush()
    return end


def _check_datarep(datarep):
    if datarep != 'external32':
        raise MPIException(ERR_ARG, 'unknown data representation '
                           '{!r}'.format(datarep))


def Pack(self, inbuf, outbuf, position, comm=None):
    """Pack ``inbuf``'s elements into ``outbuf`` from byte ``position``;
    return the position after them."""
    return _pack(self, inbuf, outbuf, position, 'Pack')


def Unpack(self, inbuf, position, outbuf, comm=None):
    """Unpack ``inbuf`` from byte ``position`` into ``outbuf``'s
    elements; return the position after them."""
    return _unpack(self, inbuf, position, outbuf, 'Unpack')


def Pack_size(self, count, comm=None):
    """Bytes Pack writes for ``count`` elements."""
    return int(count) * self.Get_size()


def Pack_external(self, datarep, inbuf, outbuf, position):
    """Pack in the big-endian ``external32`` representation."""
    _check_datarep(datarep)
    return _pack(self, inbuf, outbuf, position, 'Pack_external', True)


def Unpack_external(self, datarep, inbuf, position, outbuf):
    """Unpack ``external32`` data."""
    _check_datarep(datarep)
    return _unpack(self, inbuf, position, outbuf, 'Unpack_external', True)


def Pack_external_size(self, datarep, count):
    """Bytes Pack_external writes for ``count`` elements."""
    _check_datarep(datarep)
    return int(count) * self.Get_size()


def install():
    """Give ``Datatype`` its packing methods."""
    for fn in (Pack, Unpack, Pack_size, Pack_external, Unpack_external,
               Pack_external_size):
        setattr(Datatype, fn.__name__, fn)
