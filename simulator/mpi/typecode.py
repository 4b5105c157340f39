"""``MPI._typecode`` / ``MPI._typealign``: the private datatype queries
that ``mpi4py.util.dtlib`` imports from ``mpi4py.MPI``; ``MPI._typedict``
(ChainerMN 7 reads it), ``_typedict_c`` and ``_typedict_f``: mpi4py's
maps from a type code to the predefined datatype it sends it as."""
from simulator.mpi.datatypes import DATATYPE_NAMES

__all__ = ['_typecode', '_typealign', '_typedict', '_typedict_c',
           '_typedict_f']

# code=DATATYPE as mpi4py 4.1.2 over Open MPI 5.0.11 fills them (read from
# its module on this machine), in its order: NumPy's one-character codes,
# their sized spellings, then the C (and Fortran) names.
_TYPEDICT = """
    ?=C_BOOL b=SIGNED_CHAR h=SHORT i=INT l=LONG q=LONG_LONG
    B=UNSIGNED_CHAR H=UNSIGNED_SHORT I=UNSIGNED L=UNSIGNED_LONG
    Q=UNSIGNED_LONG_LONG e=FLOAT16_T f=FLOAT d=DOUBLE g=LONG_DOUBLE
    Zf=C_COMPLEX Zd=C_DOUBLE_COMPLEX F=C_COMPLEX D=C_DOUBLE_COMPLEX
    Zg=C_LONG_DOUBLE_COMPLEX G=C_LONG_DOUBLE_COMPLEX i1=INT8_T
    i2=INT16_T i4=INT32_T i8=INT64_T f4=FLOAT f8=DOUBLE f16=LONG_DOUBLE
    c8=C_COMPLEX c16=C_DOUBLE_COMPLEX c32=C_LONG_DOUBLE_COMPLEX
    b1=C_BOOL u1=UINT8_T u2=UINT16_T u4=UINT32_T u8=UINT64_T
    f2=FLOAT16_T n=COUNT N=UNSIGNED_LONG p=AINT P=UNSIGNED_LONG c=CHAR
    a=CHAR S=CHAR S1=CHAR s=CHAR 1s=CHAR U=WCHAR U1=WCHAR u=UINT16_T
    1u=UINT16_T w=WCHAR 1w=WCHAR M=INT64_T M8=INT64_T m=INT64_T
    m8=INT64_T
"""
_TYPEDICT_C = """
    ?=C_BOOL b=SIGNED_CHAR h=SHORT i=INT l=LONG q=LONG_LONG
    B=UNSIGNED_CHAR H=UNSIGNED_SHORT I=UNSIGNED L=UNSIGNED_LONG
    Q=UNSIGNED_LONG_LONG f=FLOAT d=DOUBLE g=LONG_DOUBLE F=C_COMPLEX
    D=C_DOUBLE_COMPLEX G=C_LONG_DOUBLE_COMPLEX b1=C_BOOL i1=INT8_T
    i2=INT16_T i4=INT32_T i8=INT64_T u1=UINT8_T u2=UINT16_T u4=UINT32_T
    u8=UINT64_T f2=FLOAT16_T f4=FLOAT c8=C_COMPLEX f8=DOUBLE
    c16=C_DOUBLE_COMPLEX f16=LONG_DOUBLE c32=C_LONG_DOUBLE_COMPLEX
"""
_TYPEDICT_F = """
    l=LOGICAL i=INTEGER r=REAL s=REAL d=DOUBLE_PRECISION c=COMPLEX
    z=DOUBLE_COMPLEX l1=LOGICAL1 l2=LOGICAL2 l4=LOGICAL4 l8=LOGICAL8
    i1=INTEGER1 i2=INTEGER2 i4=INTEGER4 i8=INTEGER8 r4=REAL4 r8=REAL8
    r16=REAL16 c8=COMPLEX8 c16=COMPLEX16 c32=COMPLEX32
"""


def _table(text):
    return {code: DATATYPE_NAMES[name] for code, name in
            (item.split('=') for item in text.split())}


_typedict = _table(_TYPEDICT)
_typedict_c = _table(_TYPEDICT_C)
_typedict_f = _table(_TYPEDICT_F)


def _typecode(datatype):
    """The character code or type string of a datatype, or None."""
    try:
        return datatype.tocode()
    except ValueError:
        return None


def _typealign(datatype):
    """The alignment in bytes of a predefined datatype, or None."""
    if not datatype.is_predefined:
        return None
    dtype = datatype._dtype
    return None if dtype is None else dtype.alignment
