"""The names a program sees: ``mpi4py.MPI``'s, for the simulator's classes.

A program compares what it prints under ``python -m simulator`` with
what it prints under ``mpiexec``, so the public classes and functions of
:mod:`simulator.mpi` carry mpi4py's module name (``<class
'mpi4py.MPI.Intracomm'>``, ``Comm.Send.__qualname__``), their instances
the default ``<mpi4py.MPI.Intracomm object at 0x...>`` repr, and the
predefined objects pickle as ``mpi4py.MPI`` globals. :func:`publish`
renames them once, when the package is assembled.

The simulator's own code cannot tell its classes by that name any more
(a real ``mpi4py.MPI`` may be loaded beside it): :func:`is_ours` does.
Its messages describe objects as before, with :func:`describe` (an
object's ``_describe()``: ``MPI_COMM_WORLD rank 0/2``...), never with
the program-visible repr.

Pickles name ``mpi4py.MPI`` only where the program's ``mpi4py.MPI`` (the
stand-in :mod:`simulator.tools.standin` installs) holds the object, as
in a launched program; elsewhere (in-process tests, with no stand-in or
with the real mpi4py loaded) they name a lookup in the simulator's
namespace instead, so they still round-trip.
"""
import ctypes
import inspect
import sys

__all__ = ['MODULE', 'publish', 'is_ours', 'describe', 'reduce_constant',
           'class_ref', 'no_attribute', 'unserializable', 'unpicklable',
           'HidesBase', 'with_subclasses']

MODULE = 'mpi4py.MPI'

# The renamed classes and functions, and the namespace they were
# published from (the package's public names: what a pickle made
# in-process looks up).
_PUBLISHED = set()
_NAMESPACE = {}


def _is_simulator_code(obj):
    return str(getattr(obj, '__module__', '')).startswith('simulator.')


def is_ours(obj):
    """Whether the class or function ``obj`` is the simulator's own (not
    a program's subclass, nor a real mpi4py class of the same name)."""
    try:
        return obj in _PUBLISHED or _is_simulator_code(obj)
    except TypeError:   # unhashable
        return _is_simulator_code(obj)


def describe(obj):
    """The simulator's description of ``obj`` for its own messages: an
    MPI object's ``_describe()`` (``MPI_COMM_WORLD rank 0/2``...), any
    other object's repr."""
    # Looked up in the classes' dicts: a metaclass's __getattr__ (the
    # unsimulated handle types') must not run.
    for kind in type(obj).__mro__:
        own = vars(kind).get('_describe')
        if own is not None:
            return own(obj)
    return repr(obj)


def _members(cls):
    """(name, function) of the methods and property functions written in
    ``cls``'s own body."""
    for name, value in vars(cls).items():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for part in (value.fget, value.fset, value.fdel):
                if inspect.isfunction(part):
                    yield name, part
        elif inspect.isfunction(value):
            yield name, value


def _claim_inherited(cls):
    """Name the methods ``cls`` inherits from the simulator's mixins
    (``PointToPoint.Send``) after the most basic public class that has
    the name (``Comm.Send``; ``Comm.Bcast`` too, which Intercomm
    overrides), as mpi4py's, written once in the class itself. A mixin
    that several classes share (attributes, handles) names the first of
    them only, and an alias (Clone = Dup) its function's name: copies
    per class would escape the patches of :mod:`simulator.mpi.timing`."""
    public = [base for base in cls.__mro__ if base in _PUBLISHED]
    for name, function in _members(cls):
        if function.__qualname__ == function.__name__:
            # a module's function set on the class (Datatype.Pack)
            function.__qualname__ = '{}.{}'.format(cls.__qualname__, name)
    for base in cls.__mro__[1:]:
        if base in _PUBLISHED or not _is_simulator_code(base):
            continue
        prefix = base.__qualname__ + '.'
        for name, function in _members(base):
            if function.__qualname__ != prefix + name:
                continue        # named already
            owner = next(k for k in reversed(public)
                         if any(name in vars(b) for b in k.__mro__))
            function.__qualname__ = '{}.{}'.format(owner.__qualname__, name)


def publish(namespace):
    """Give the public classes and functions of ``namespace`` (the
    package's names and values) mpi4py's module name, and the methods
    their classes inherit from mixins their qualified names."""
    _NAMESPACE.update(namespace)
    classes = [value for value in namespace.values()
               if isinstance(value, type) and _is_simulator_code(value)]
    # Bases first: Comm claims the mixins' methods before Intracomm.
    ordered = sorted(set(classes), key=lambda c: len(c.__mro__))
    for cls in ordered:
        cls.__module__ = MODULE
        _PUBLISHED.add(cls)
        if not issubclass(cls, BaseException):
            # (mpi4py's Exception is a Python class: Python's messages
            # name it 'Exception', as they name ours)
            _name_in_messages(cls)
    for cls in ordered:
        _claim_inherited(cls)
        _drop_weakref_name(cls)
        _drop_slots_name(cls)
    for cls in ordered:
        _present_internal_subclasses(cls)
    functions = [(name, value) for name, value in namespace.items()
                 if inspect.isfunction(value) and _is_simulator_code(value)]
    for name, function in functions:
        function.__module__ = MODULE
        _PUBLISHED.add(function)
        # One published under another name than it was written with
        # (Get_error_class = error_class) takes that name, as mpi4py's.
        if sum(f is function for _, f in functions) == 1:
            function.__name__ = function.__qualname__ = name


def _drop_weakref_name(cls):
    """Take the ``__weakref__`` attribute off ``cls`` and the simulator's
    classes it derives from: mpi4py's compiled classes take weak
    references but have no such attribute (``hasattr(comm,
    '__weakref__')`` is False there). Weak references need the slot
    alone, not the attribute Python names it by. (mpi4py's Exception,
    a Python class, keeps it.)"""
    if issubclass(cls, BaseException):
        return
    for klass in cls.__mro__:
        if (klass in _PUBLISHED or _is_simulator_code(klass)) and \
                '__weakref__' in vars(klass):
            delattr(klass, '__weakref__')


def _drop_slots_name(cls):
    """Take the ``__slots__`` attribute off ``cls`` and the simulator's
    classes it derives from: mpi4py's classes have none (``hasattr(
    MPI.Status, '__slots__')`` is False there). The slots stay; the
    attribute only tells how to make them, and how pickle's default
    reduction (copyreg) finds their state, which a class with its own
    ``__reduce__`` does not use: only such classes lose it."""
    if inspect.getattr_static(cls, '__reduce__') is \
            object.__dict__['__reduce__']:
        return
    for klass in cls.__mro__:
        if (klass in _PUBLISHED or _is_simulator_code(klass)) and \
                '__slots__' in vars(klass):
            delattr(klass, '__slots__')


def with_subclasses(*roots):
    """``roots`` and every class below them, at any depth (the facade's
    published classes and the simulator's own request kinds)."""
    found, todo = [], list(roots)
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _present_internal_subclasses(public, cls=None):
    """The simulator's own subclasses of the published class ``public``
    (``RecvRequest``, the request of a non-blocking collective...), at
    any depth below ``cls``: a program's ``type(request)`` prints
    ``<class 'mpi4py.MPI.Request'>``, as mpi4py makes every request a
    ``Request``."""
    for sub in (cls or public).__subclasses__():
        if sub in _PUBLISHED or not _is_simulator_code(sub):
            continue
        sub.__module__ = MODULE
        sub.__name__ = sub.__qualname__ = public.__name__
        _PUBLISHED.add(sub)
        if not issubclass(sub, BaseException):
            _name_in_messages(sub)
        _drop_weakref_name(sub)
        _drop_slots_name(sub)
        _present_internal_subclasses(public, sub)


# Where a type object keeps the C string its messages name it by
# (tp_name, after the object header: refcount, type, size).
_TP_NAME_OFFSET = 3 * ctypes.sizeof(ctypes.c_void_p)
_MESSAGE_NAMES = []     # the C strings, alive as long as the classes


def _name_in_messages(cls):
    """Name ``cls`` as mpi4py's compiled classes are named in Python's own
    messages (``unhashable type: 'mpi4py.MPI.Win'``, ``'mpi4py.MPI.
    Intracomm' object has no attribute 'x'``): those print a type's C
    name, which for a compiled class is qualified, and for a Python class
    is its ``__name__`` (which stays ``'Win'``, as mpi4py's)."""
    if _c_name(cls) != cls.__name__:
        return      # not the layout this relies on: leave the name be
    name = ctypes.create_string_buffer(
        '{}.{}'.format(MODULE, cls.__name__).encode())
    _MESSAGE_NAMES.append(name)
    ctypes.c_void_p.from_address(id(cls) + _TP_NAME_OFFSET).value = \
        ctypes.addressof(name)


def _c_name(cls):
    """The name Python's messages give ``cls``: its C ``tp_name``."""
    return ctypes.c_char_p.from_address(
        id(cls) + _TP_NAME_OFFSET).value.decode()


def no_attribute(obj, name):
    """The AttributeError Python raises for ``obj.name``, in its words
    (with the C name of ``obj``'s class, see :func:`_name_in_messages`),
    for a class whose ``__getattr__`` refuses ``name``."""
    return AttributeError('{!r} object has no attribute {!r}'.format(
        _c_name(type(obj)), name))


class _Absent:
    """A name its class must not have (one its hidden base brings, see
    :class:`HidesBase`): reading, setting or deleting it on the class or
    an instance is Python's AttributeError for a missing attribute."""

    __slots__ = ('_name',)

    def __init__(self, name):
        self._name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            raise AttributeError('type object {!r} has no attribute {!r}'
                                 .format(_c_name(cls), self._name))
        raise no_attribute(obj, self._name)

    def __set__(self, obj, value):
        raise no_attribute(obj, self._name)

    def __delete__(self, obj):
        raise no_attribute(obj, self._name)


# The type slots a name of a builtin base fills, as (table, index):
# table None is the type object itself, else the offset of the pointer
# to its sequence, mapping or number methods. A slot is withdrawn when
# every name that fills it is hidden, so that Python then refuses the
# operation in its own words (len(), subscripts, iteration, operators).
_P = ctypes.sizeof(ctypes.c_void_p)
_NUMBER, _SEQUENCE, _MAPPING = 12 * _P, 13 * _P, 14 * _P
_SLOTS = {
    (_SEQUENCE, 0): ('__len__',), (_MAPPING, 0): ('__len__',),
    (_SEQUENCE, 1): ('__add__',), (_NUMBER, 0): ('__add__', '__radd__'),
    (_SEQUENCE, 2): ('__mul__', '__rmul__'),
    (_NUMBER, 2): ('__mul__', '__rmul__'),
    (_SEQUENCE, 3): ('__getitem__',), (_MAPPING, 1): ('__getitem__',),
    (_SEQUENCE, 5): ('__setitem__', '__delitem__'),
    (_MAPPING, 2): ('__setitem__', '__delitem__'),
    (_SEQUENCE, 7): ('__contains__',),
    (_SEQUENCE, 8): ('__iadd__',), (_NUMBER, 19): ('__iadd__',),
    (_SEQUENCE, 9): ('__imul__',), (_NUMBER, 21): ('__imul__',),
    (_NUMBER, 3): ('__mod__', '__rmod__'),
    (None, 27): ('__iter__',),
}


def _slot_layout_known(cls):
    """Whether ``cls``'s type object is laid out as :data:`_SLOTS`
    assumes (CPython's, 64 or 32 bits): its size fields and flags read
    back, and its method tables lie inside the type object itself."""
    def word(index, kind=ctypes.c_ssize_t):
        return kind.from_address(id(cls) + index * _P).value
    if (word(4), word(5), word(21, ctypes.c_ulong)) != (
            cls.__basicsize__, cls.__itemsize__, cls.__flags__):
        return False
    end = id(cls) + type(cls).__basicsize__
    return all(id(cls) < word(t // _P, ctypes.c_void_p) < end
               for t in (_NUMBER, _SEQUENCE, _MAPPING))


def _withdraw_slots(cls):
    """Empty the type slots of ``cls`` that only hidden names fill."""
    for (table, index), names in _SLOTS.items():
        if all(isinstance(inspect.getattr_static(cls, n, _Absent(n)),
                          _Absent) for n in names):
            base = id(cls) if table is None else \
                ctypes.c_void_p.from_address(id(cls) + table).value
            ctypes.c_void_p.from_address(base + index * _P).value = None


# Names a hidden base keeps: those mpi4py's classes have too (the
# buffer protocol's, from Python 3.12).
_KEPT = frozenset(dir(object)) | {'__buffer__', '__release_buffer__'}


class HidesBase(type):
    """The metaclass of a class that takes a builtin base for its memory
    layout alone: ``Win`` is a ``bytearray`` so that it exports its
    memory (the buffer protocol, which a Python class cannot give
    itself before Python 3.12), as mpi4py's compiled ``Win`` does, but
    has none of bytearray's names (``win.append``: AttributeError,
    ``len(win)``: TypeError, in Python's words, absent from ``dir``).

    ``class Win(bytearray, ..., metaclass=HidesBase, hides=bytearray)``:
    every name of ``hides`` that ``object`` lacks and the class does not
    define is an :class:`_Absent`, and the type slots those names filled
    are emptied (where the type object's layout is the known one; else
    the operators' names stay, with bytearray's meaning). Its subclasses
    hide the same names. ``type(Win)`` prints as ``<class 'type'>``."""

    def __new__(mcs, name, bases, namespace, hides=None, **kwargs):
        hidden = set()
        for base in bases:
            hidden |= getattr(base, '_hidden_names', frozenset())
        if hides is not None:
            hidden |= set(dir(hides)) - _KEPT
        hidden -= set(namespace)
        namespace = dict(namespace, _hidden_names=frozenset(hidden))
        namespace.setdefault('__dir__', _instance_dir)
        for hidden_name in hidden:
            namespace[hidden_name] = _Absent(hidden_name)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if _slot_layout_known(cls):
            _withdraw_slots(cls)
        else:
            # cannot empty the slots: their names keep their meaning
            for names in _SLOTS.values():
                for hidden_name in names:
                    if isinstance(vars(cls).get(hidden_name), _Absent):
                        delattr(cls, hidden_name)
        return cls

    def __init__(cls, name, bases, namespace, hides=None, **kwargs):
        super().__init__(name, bases, namespace, **kwargs)

    def __dir__(cls):
        return sorted(set(super().__dir__()) - cls._hidden_names
                      - {'_hidden_names'})


def _instance_dir(self):
    # object.__dir__ lists the class's names without asking the
    # metaclass: the hidden ones are taken out here
    return sorted(set(object.__dir__(self)) - type(self)._hidden_names
                  - {'_hidden_names'})


HidesBase.__name__ = HidesBase.__qualname__ = 'type'
HidesBase.__module__ = 'builtins'


def unpicklable(obj):
    """The TypeError Python raises when ``obj``, whose class cannot be
    pickled, is (``cannot pickle 'mpi4py.MPI.Pickle' object``)."""
    return TypeError('cannot pickle {!r} object'.format(_c_name(type(obj))))


def unserializable(obj, why):
    """The ValueError mpi4py raises when ``obj`` (a handle that belongs
    to its process) is pickled, in its words; ``why`` is the simulator's
    note."""
    cls = type(obj)
    error = ValueError("cannot serialize '{}.{}' instance".format(
        cls.__module__, cls.__name__))
    error.add_note('{}: {}'.format(describe(obj), why))
    return error


def _held_by_program(name, obj):
    module = sys.modules.get(MODULE)
    return module is not None and getattr(module, name, None) is obj


def _lookup(name):
    """The simulator's public object ``name`` (unpickling one pickled
    in-process)."""
    return _NAMESPACE[name]


def reduce_constant(obj, name):
    """The ``__reduce__`` of the predefined object ``MPI.<name>``: its
    name (a global of ``mpi4py.MPI``, as mpi4py pickles it) where the
    program's ``mpi4py.MPI`` holds it, else a lookup of the name."""
    if _held_by_program(name, obj):
        return name
    return (_lookup, (name,))


class _ClassRef:
    """A public class in a pickle made where ``mpi4py.MPI`` does not hold
    it: unpickles as the class (and calls as it, so it can stand first
    in a ``__reduce__`` value)."""

    def __init__(self, cls):
        self._cls = cls

    def __call__(self, *args, **kwargs):
        return self._cls(*args, **kwargs)

    def __reduce__(self):
        return (_lookup, (self._cls.__name__,))


def class_ref(cls):
    """``cls`` as a ``__reduce__`` value names it: the class itself where
    it pickles by name (a program's subclass, or the program's
    ``mpi4py.MPI`` holds it), else a stand-in that unpickles as it."""
    if cls not in _PUBLISHED or _held_by_program(cls.__name__, cls):
        return cls
    return _ClassRef(cls)
