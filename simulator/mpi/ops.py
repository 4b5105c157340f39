"""Reduction operations: ``SUM PROD MAX MIN LAND LOR LXOR BAND BOR BXOR``."""
import operator

import numpy as np

__all__ = ['Op', 'OP_NAMES']

# Their ufuncs return booleans: integer buffers need a cast back.
_LOGICAL = (np.logical_and, np.logical_or, np.logical_xor)


class Op:
    """A reduction: ``reduce_arrays`` for buffers, ``__call__`` for objects.

    Like mpi4py, calling an op on two Python objects combines them
    (``MPI.SUM(1, 2) == 3``).
    """

    __module__ = 'simulator.mpi'

    def __init__(self, name, ufunc=None, pyfunc=None, commute=True,
                 user=False):
        self.name = name
        self.ufunc = ufunc
        self.pyfunc = pyfunc
        self.commute = commute
        self.user = user

    def __call__(self, x, y):
        if self.user:
            # mpi4py calls a user function with a third argument (the
            # datatype, None for objects), so a two-argument function
            # raises TypeError there, in object reductions too.
            return self.pyfunc(x, y, None)
        return self.pyfunc(x, y)

    def Is_commutative(self):  # noqa: N802
        """True for the predefined operations."""
        return self.commute

    def Free(self):  # noqa: N802
        """User operations are garbage collected; a no-op."""

    @classmethod
    def Create(cls, function, commute=False):  # noqa: N802
        """A user operation from ``function(x, y) -> x op y`` on objects.

        For buffers, ``function`` is called as ``function(invec, inoutvec,
        datatype)`` the mpi4py way and must update ``inoutvec``.
        """
        return cls('user:{}'.format(getattr(function, '__name__', '?')),
                   None, function, commute, user=True)

    def combine_into(self, out, left, right):
        """``out = left op right`` elementwise (``out`` a third array)."""
        if self.ufunc is np.multiply and out.dtype.kind == 'c':
            _complex_product(out, left, right)
        elif self.ufunc is not None and (out.dtype == np.bool_ or
                                         self.ufunc not in _LOGICAL):
            self.ufunc(left, right, out=out)
        else:
            out[...] = left
            self.reduce_into(out, right)

    def reduce_into(self, out, operand):
        """``out = out op operand`` elementwise, in place."""
        if self.ufunc is np.multiply and out.dtype.kind == 'c':
            _complex_product(out, out, operand)
        elif self.ufunc is not None:
            if self.ufunc in _LOGICAL and out.dtype != np.bool_:
                out[...] = self.ufunc(out, operand)
            else:
                self.ufunc(out, operand, out=out)
        else:
            # mpi4py user ops on buffers: fn(invec, inoutvec, datatype)
            # computes inoutvec = invec op inoutvec.
            tmp = np.array(operand)
            self.pyfunc(out.copy(), tmp, None)
            out[...] = tmp

    def __repr__(self):
        return '<Op {}>'.format(self.name)


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


OP_NAMES = {
    'SUM': Op('MPI_SUM', np.add, operator.add),
    'PROD': Op('MPI_PROD', np.multiply, operator.mul),
    'MAX': Op('MPI_MAX', np.maximum, _maximum),
    'MIN': Op('MPI_MIN', np.minimum, _minimum),
    # On objects mpi4py's logical operations return bools, not operands.
    'LAND': Op('MPI_LAND', np.logical_and, lambda x, y: bool(x and y)),
    'LOR': Op('MPI_LOR', np.logical_or, lambda x, y: bool(x or y)),
    'LXOR': Op('MPI_LXOR', np.logical_xor,
               lambda x, y: bool(x) != bool(y)),
    'BAND': Op('MPI_BAND', np.bitwise_and, operator.and_),
    'BOR': Op('MPI_BOR', np.bitwise_or, operator.or_),
    'BXOR': Op('MPI_BXOR', np.bitwise_xor, operator.xor),
    'REPLACE': Op('MPI_REPLACE', None, lambda x, y: y),
    'NO_OP': Op('MPI_NO_OP', None, lambda x, y: x),
}
