"""Reduction operations: ``SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR``."""
import operator

import numpy as np

from simulator.engine.actors import current
from simulator.mpi.constants import ERR_OP
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.handles import HandleMixin
from simulator.mpi.naming import describe, reduce_constant

__all__ = ['Op', 'OP_NAMES', 'MAX_USER_OPS']

# mpi4py keeps a table of 32 Python reduction functions per process.
MAX_USER_OPS = 32
_OUTSIDE = {}

# Their ufuncs return booleans: integer buffers need a cast back.
_LOGICAL = (np.logical_and, np.logical_or, np.logical_xor)


# Which NumPy kinds MPI defines each predefined reduction for
# (C integer, floating point, complex, logical = bool).
OP_KINDS = {'MPI_SUM': 'iufc', 'MPI_PROD': 'iufc', 'MPI_MAX': 'iuf',
             'MPI_MIN': 'iuf', 'MPI_LAND': 'iub', 'MPI_LOR': 'iub',
             'MPI_LXOR': 'iub', 'MPI_BAND': 'iu', 'MPI_BOR': 'iu',
             'MPI_BXOR': 'iu', 'MPI_MAXLOC': 'V', 'MPI_MINLOC': 'V',
             'MPI_OP_NULL': '', 'MPI_REPLACE': '', 'MPI_NO_OP': ''}


class Op(HandleMixin):
    """A reduction: ``reduce_arrays`` for buffers, ``__call__`` for objects.

    Like mpi4py, calling an op on two Python objects combines them
    (``MPI.SUM(1, 2) == 3``); ``Op()`` is a null handle and ``Op(op)``
    another handle to ``op``.
    """

    __module__ = 'simulator.mpi'

    def __init__(self, op=None):
        if op is None:
            self._set('MPI_OP_NULL')
        elif isinstance(op, Op):
            self.__dict__.update(op.__dict__)
        else:
            raise TypeError('Op() takes an Op, got {}'.format(describe(op)))

    def _set(self, name, ufunc=None, pyfunc=None, commute=True,
             user=False, pairs=None):
        self._name = name
        self._ufunc = ufunc
        self._pyfunc = pyfunc
        self._commute = commute
        self._user = user
        # MAXLOC / MINLOC: which of two (value, index) pairs wins
        self._pairs = pairs
        return self

    @classmethod
    def _make(cls, name, ufunc=None, pyfunc=None, commute=True,
              user=False, pairs=None):
        op = cls.__new__(cls)
        return op._set(name, ufunc, pyfunc, commute, user, pairs)

    def _handle_target(self):
        if not self:
            return None
        return _BY_NAME.get(self._name) if not self._user else self._id

    @classmethod
    def _from_target(cls, target):
        if target is None:
            return cls()
        if isinstance(target, Op):
            return cls(target)
        # A user operation named by its int handle: usable in
        # reductions, but (as in mpi4py) neither callable on objects
        # nor picklable, since its Python function is not known.
        op = cls(target.op)
        op._foreign = True
        return op

    def __call__(self, x, y):
        if self._pyfunc is None or getattr(self, '_foreign', False):
            # (mpi4py words OP_NULL's refusal so too.)
            raise ValueError('cannot call {}'.format(
                'a user-defined operation' if self._user or not self
                else self._name))
        if self._user:
            # mpi4py calls a user function with a third argument (the
            # datatype, None for objects), so a two-argument function
            # raises TypeError there, in object reductions too.
            result = self._pyfunc(x, y, None)
            return y if result is None else result
        return self._pyfunc(x, y)

    def __bool__(self):
        return self._name != 'MPI_OP_NULL'

    def __eq__(self, other):
        if not isinstance(other, Op):
            return NotImplemented
        if self._user or other._user:
            return self._user and other._user and \
                self._pyfunc is other._pyfunc and \
                self._commute == other._commute and \
                self._id == other._id
        return self._name == other._name

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if getattr(self, '_foreign', False):
            raise ValueError('cannot serialize a user-defined operation '
                             'made from a handle')
        if not self._user:
            predefined = _BY_NAME.get(self._name)
            if predefined is self:
                return reduce_constant(self, self._attr)
            return self._reduce_copy(predefined)
        return (_user_op, (self._pyfunc, self._commute))

    def Is_commutative(self):
        """True for the predefined operations; OP_NULL (a freed
        operation too) is ERR_OP."""
        if not self:
            raise MPIException(ERR_OP, 'Is_commutative of {}'.format(
                self._name))
        return self._commute

    is_commutative = property(Is_commutative)

    @property
    def is_predefined(self):
        """True for MPI's own operations (and OP_NULL)."""
        return not self._user

    def Free(self):
        """Free a user operation (the handle becomes OP_NULL);
        predefined operations cannot be freed."""
        if not self._user:
            raise MPIException(ERR_OP, 'cannot free {}'.format(self._name))
        _user_ops().discard(self._id)
        self.__dict__.clear()
        self._set('MPI_OP_NULL')

    def free(self):
        """Call ``Free`` if not null; a handle to a predefined operation is
        only cleared, and the module's constants stay (mpi4py's)."""
        if not self or any(op is self for op in OP_NAMES.values()):
            return
        if self._user:
            self.Free()
        else:
            self.__dict__.clear()
            self._set('MPI_OP_NULL')

    @classmethod
    def Create(cls, function, commute=False):
        """A user operation from ``function(x, y) -> x op y`` on objects.

        For buffers, ``function`` is called as ``function(invec, inoutvec,
        datatype)`` the mpi4py way and must update ``inoutvec``.
        """
        if not callable(function):
            # mpi4py's words: it looks the call up on the object.
            raise AttributeError("'{}' object has no attribute "
                                 "'__call__'".format(type(function).__name__))
        live = _user_ops()
        if len(live) >= MAX_USER_OPS:
            raise RuntimeError('cannot create more than {} user-defined '
                               'operations (free some)'.format(MAX_USER_OPS))
        op = cls._make('user:{}'.format(getattr(function, '__name__', '?')),
                       None, function, bool(commute), user=True)
        op._id = _UserOpId()
        op._id.op = Op(op)
        live.add(op._id)
        return op

    def Reduce_local(self, inbuf, inoutbuf):
        """Compute ``inoutbuf = inbuf op inoutbuf`` elementwise, locally."""
        from simulator.mpi.msgspec import parse
        source = parse(inbuf, 'Reduce_local input buffer')
        target = parse(inoutbuf, 'Reduce_local input/output buffer')
        if source.datatype != target.datatype:
            raise ValueError('mismatch in inbuf and inoutbuf MPI '
                             'datatypes')
        if source.count != target.count:
            raise ValueError('mismatch in inbuf count {} and inoutbuf '
                             'count {}'.format(source.count, target.count))
        # An op the buffer's kind lacks (MAXLOC on doubles) is ERR_OP,
        # as in Open MPI (and the collectives).
        self._check_kind(target.dtype, 'Reduce_local')
        self._check_datatype(target.datatype, 'Reduce_local')
        out = target.head()
        self._combine_into(out, source.head(), out, target.datatype)

    def _check_kind(self, dtype, where):
        """MPI_ERR_OP for a predefined operation MPI does not define on
        ``dtype``'s kind of elements (user operations take any)."""
        kinds = OP_KINDS.get(self._name)
        if kinds is not None and np.dtype(dtype).kind not in kinds:
            raise MPIException(ERR_OP, '{}: {} is not defined for {} '
                               'buffers'.format(where, self._name, dtype))

    def _check_datatype(self, datatype, where):
        """MPI_ERR_OP for a predefined operation on a derived datatype:
        Open MPI defines them on predefined datatypes only (a contiguous
        run of doubles too); user operations take any."""
        if datatype and not self._user and not datatype.is_predefined:
            raise MPIException(ERR_OP, '{}: {} on a derived datatype'.format(
                where, self._name))

    def _combine_into(self, out, left, right, datatype=None):
        """Compute ``out = left op right`` elementwise; ``out`` may be
        ``left`` or ``right`` itself (every element is read before it is
        written). ``datatype`` is what a user function is told (if
        known)."""
        if self._pairs is not None:
            _pair_combine(self._pairs, out, left, right)
        elif self._ufunc is np.multiply and out.dtype.kind == 'c':
            _complex_product(out, left, right)
        elif self._ufunc is not None and (out.dtype == np.bool_ or
                                         self._ufunc not in _LOGICAL):
            self._ufunc(left, right, out=out)
        else:
            if np.may_share_memory(out, right):
                # Copying ``left`` into ``out`` would overwrite it.
                right = right.copy()
            out[...] = left
            self._reduce_into(out, right, datatype)

    def _reduce_into(self, out, operand, datatype=None):
        """Compute ``out = out op operand`` elementwise, in place."""
        if self._pairs is not None:
            _pair_combine(self._pairs, out, out, operand)
        elif self._ufunc is np.multiply and out.dtype.kind == 'c':
            _complex_product(out, out, operand)
        elif self._ufunc is not None:
            if self._ufunc in _LOGICAL and out.dtype != np.bool_:
                out[...] = self._ufunc(out, operand)
            else:
                self._ufunc(out, operand, out=out)
        else:
            # mpi4py user ops on buffers: fn(invec, inoutvec, datatype)
            # computes inoutvec = invec op inoutvec.
            tmp = np.array(operand)
            self._pyfunc(out.copy(), tmp, datatype)
            out[...] = tmp

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<Op {}>'.format(self._name)


def _complex_product(out, left, right):
    """``out = left * right`` the way C (and so Open MPI) multiplies:
    ``(ac - bd) + (ad + bc)i`` in the component precision. NumPy's complex
    multiply rounds differently (in 80% of random complex64 products)."""
    re = left.real * right.real
    re -= left.imag * right.imag
    im = left.real * right.imag
    im += left.imag * right.real
    out.real = re
    out.imag = im


def _maximum(x, y):
    return y if y > x else x


def _minimum(x, y):
    return y if y < x else x


def _pair_combine(better, out, left, right):
    """MAXLOC / MINLOC on (value, index) records: the better value, and
    on a tie the smaller index."""
    lv, rv = left['value'], right['value']
    take_right = better(rv, lv) | ((rv == lv) &
                                   (right['index'] < left['index']))
    out[...] = np.where(take_right, right, left)


def _loc(better):
    # mpi4py's object MAXLOC / MINLOC: the better pair, on a tie the one
    # with the smaller index (the first on equal indices), as given.
    def combine(u, v):
        x, i = u
        y, j = v
        if better(x, y):
            return x, i
        if better(y, x):
            return y, j
        if j < i:
            return y, j
        return x, i
    return combine


class _UserOpId:
    """Identity of one user operation (what its handles name)."""

    __slots__ = ('op',)


def _user_ops():
    ctx = current()
    local = _OUTSIDE if ctx is None else ctx.local
    return local.setdefault('mpi.user_ops', set())


def _user_op(function, commute):
    return Op.Create(function, commute)


OP_NAMES = {
    'SUM': Op._make('MPI_SUM', np.add, operator.add),
    'PROD': Op._make('MPI_PROD', np.multiply, operator.mul),
    'MAX': Op._make('MPI_MAX', np.maximum, _maximum),
    'MIN': Op._make('MPI_MIN', np.minimum, _minimum),
    # On objects mpi4py's logical operations return bools, not operands.
    'LAND': Op._make('MPI_LAND', np.logical_and,
                     lambda x, y: bool(x and y)),
    'LOR': Op._make('MPI_LOR', np.logical_or, lambda x, y: bool(x or y)),
    'LXOR': Op._make('MPI_LXOR', np.logical_xor,
                     lambda x, y: bool(x) != bool(y)),
    'BAND': Op._make('MPI_BAND', np.bitwise_and, operator.and_),
    'BOR': Op._make('MPI_BOR', np.bitwise_or, operator.or_),
    'BXOR': Op._make('MPI_BXOR', np.bitwise_xor, operator.xor),
    'MAXLOC': Op._make('MPI_MAXLOC', None, _loc(operator.gt),
                       pairs=np.greater),
    'MINLOC': Op._make('MPI_MINLOC', None, _loc(operator.lt),
                       pairs=np.less),
    'REPLACE': Op._make('MPI_REPLACE', None, lambda x, y: y),
    'NO_OP': Op._make('MPI_NO_OP', None, lambda x, y: x),
    'OP_NULL': Op(),
}
_BY_NAME = {}
for _attr, _op in OP_NAMES.items():
    _op._attr = _attr
    _BY_NAME[_op._name] = _op
