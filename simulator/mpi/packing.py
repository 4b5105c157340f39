"""``Datatype.Pack`` / ``Unpack`` and their ``external32`` forms.

They move data through a datatype's typemap like a message does, so they
sit above :mod:`simulator.mpi.msgspec` and are added to
:class:`~simulator.mpi.datatypes.Datatype` when ``simulator.mpi`` is
imported (the datatype module itself stays below the buffer parser).
As in mpi4py, the input or output buffer is plain memory holding as many
elements of the datatype as fit (its length over the extent).
"""
import numpy as np

from simulator.mpi.cargs import c_str
from simulator.mpi.constants import ERR_TRUNCATE
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


def _units(dtype, size):
    """Sizes of the numbers one packed basic element of ``dtype`` holds
    (a complex two halves, a pair type DOUBLE_INT its two fields)."""
    if dtype is None:
        return [1] * size
    if dtype.fields:
        fields = sorted(dtype.fields.values(), key=lambda f: f[1])
        return [u for f in fields for u in _units(f[0], f[0].itemsize)]
    if dtype.kind == 'c':
        return [dtype.itemsize // 2] * 2
    return [dtype.itemsize]


def _swap_order(layout):
    """Byte order of one packed element in external32 (a permutation of
    its bytes): each number's bytes reversed, in typemap order."""
    order, at = [], 0
    for basic in layout.basic_layouts():
        for unit in _units(getattr(basic.base, '_dtype', None), basic.size):
            order += range(at + unit - 1, at - 1, -1)
            at += unit
    return np.array(order, dtype=np.int64)


def _big_endian(data, datatype):
    """``data`` (packed ``datatype`` elements) with each number's bytes
    swapped: external32 is big-endian, this machine little-endian. A
    struct mixing types swaps each member by its own size, as does a
    pair type (DOUBLE_INT)."""
    size = datatype.Get_size()
    if not np.little_endian or data.size == 0 or size == 0:
        return data
    layout = datatype._t('Pack_external').layout
    dtype = datatype._dtype
    if layout.base is not None and dtype is not None and not dtype.fields:
        # one basic type throughout: no need to list the typemap
        unit = _units(dtype, dtype.itemsize)[0]
        return data.reshape(-1, unit)[:, ::-1].reshape(-1).copy()
    order = _swap_order(layout)
    return data.reshape(-1, size)[:, order].reshape(-1).copy()


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
    # Open MPI 5 packs external32 whatever representation is named
    # ('native', '', anything); mpi4py only requires a string.
    c_str(datarep)


def Pack(self, inbuf, outbuf, position, comm):
    """Pack ``inbuf``'s elements into ``outbuf`` from byte ``position``;
    return the position after them."""
    return _pack(self, inbuf, outbuf, position, 'Pack')


def Unpack(self, inbuf, position, outbuf, comm):
    """Unpack ``inbuf`` from byte ``position`` into ``outbuf``'s
    elements; return the position after them."""
    return _unpack(self, inbuf, position, outbuf, 'Unpack')


def Pack_size(self, count, comm):
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
