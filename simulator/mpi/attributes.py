"""Attribute keys (keyvals) and the attributes they name, for every kind
of object that carries them: communicators, datatypes and windows.

``Create_keyval`` numbers keys in one space per rank (as Open MPI, after
its predefined keys); a key belongs to the kind it was made for, and using
it on another kind is an error (Get_attr alone answers None). Open MPI
reports a bad key with the class ERR_OTHER (ERR_KEYVAL only for
``Get_attr(KEYVAL_INVALID)``): so does the simulator. The copy callback
makes a duplicate's value (``True``: the same object; ``None``/``False``: none;
``NotImplemented`` as its result: none), the delete callback runs when a
value is replaced, deleted or its object freed. A callback that raises
has its traceback printed to stderr and the call fails with ERR_OTHER, as
mpi4py reports a Python error inside an MPI callback. Freeing a key keeps
the callbacks of the values still stored under it.
"""
import itertools
import sys
import traceback

from simulator.mpi.ranklocal import rank_local
from simulator.mpi.constants import ERR_KEYVAL, ERR_OTHER
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.values import VALUES

__all__ = ['Attributes', 'KEYVAL_INVALID', 'FIRST_KEYVAL']

KEYVAL_INVALID = VALUES['KEYVAL_INVALID']
# Open MPI numbers user keys after its predefined ones.
FIRST_KEYVAL = 13

class _Key:
    """One keyval: its kind and callbacks."""

    __slots__ = ('kind', 'copy_fn', 'delete_fn', 'live')

    def __init__(self, kind, copy_fn, delete_fn):
        self.kind, self.copy_fn, self.delete_fn = kind, copy_fn, delete_fn
        self.live = True


def _keys():
    return rank_local('mpi.keyvals', lambda: {
        'next': itertools.count(FIRST_KEYVAL), 'keys': {}})


def _callback(fn, what, keyval, *args):
    """Run a user callback; its exception becomes ERR_OTHER."""
    try:
        return fn(*args)
    except Exception as error:   # noqa: BLE001 -- any error of user code
        traceback.print_exc(file=sys.stderr)
        raise MPIException(ERR_OTHER, '{} callback of keyval {} raised '
                           '{!r}'.format(what, keyval, error)) from error


class Attributes:
    """``Create_keyval``/``Free_keyval``/``Get_attr``/``Set_attr``/
    ``Delete_attr`` as a mixin. A class sets ``_attr_kind`` and
    ``_attr_name``, and defines ``_attr_store(what)`` (the object's dict
    of values in this rank, raising on a null object); predefined keys
    are answered by ``_predefined_attr`` for keys in ``_PREDEFINED_ATTRS``."""

    _attr_kind = 'comm'
    _attr_name = 'Comm'
    _PREDEFINED_ATTRS = ()

    @classmethod
    def Create_keyval(cls, copy_fn=None, delete_fn=None, nopython=False):
        """A new attribute key with its copy and delete callbacks
        (``fn(obj, keyval, value)``)."""
        for name, fn in (('copy_fn', copy_fn), ('delete_fn', delete_fn)):
            if fn is not None and not isinstance(fn, bool) and \
                    not callable(fn):
                raise TypeError('{}.Create_keyval: {} must be callable, '
                                'got {!r}'.format(cls._attr_name, name, fn))
        table = _keys()
        keyval = next(table['next'])
        table['keys'][keyval] = _Key(cls._attr_kind, copy_fn, delete_fn)
        return keyval

    @classmethod
    def Free_keyval(cls, keyval):
        """Free the key (values stored under it stay); returns
        KEYVAL_INVALID."""
        cls._key(keyval, 'Free_keyval').live = False
        return KEYVAL_INVALID

    @classmethod
    def _key(cls, keyval, what, other_kind=False):
        if not isinstance(keyval, int):
            raise TypeError('{}.{}: keyval must be an int, got {!r}'.format(
                cls._attr_name, what, keyval))
        key = _keys()['keys'].get(keyval)
        if key is not None and key.live and key.kind != cls._attr_kind \
                and other_kind:
            return None
        if key is None or not key.live or key.kind != cls._attr_kind:
            error = ERR_KEYVAL if keyval == KEYVAL_INVALID and \
                what == 'Get_attr' else ERR_OTHER
            raise MPIException(error, '{}.{}: {!r} is not a {} attribute '
                               'key'.format(cls._attr_name, what, keyval,
                                            cls._attr_kind))
        return key

    def _attr_store(self, what):
        raise NotImplementedError

    def _predefined_attr(self, keyval):
        raise NotImplementedError

    def Get_attr(self, keyval):
        """The value stored under ``keyval`` (None if none)."""
        store = self._attr_store('Get_attr')
        if isinstance(keyval, int) and keyval in self._PREDEFINED_ATTRS:
            return self._predefined_attr(keyval)
        if self._key(keyval, 'Get_attr', other_kind=True) is None:
            return None
        return store.get(keyval)

    def Set_attr(self, keyval, attrval):
        """Store ``attrval`` under ``keyval`` (a value it replaces goes
        through the delete callback)."""
        store = self._attr_store('Set_attr')
        self._key(keyval, 'Set_attr')
        if keyval in store:
            self._delete_value(keyval, store.pop(keyval))
        store[keyval] = attrval

    def Delete_attr(self, keyval):
        """Remove the value under ``keyval``, running its delete
        callback."""
        store = self._attr_store('Delete_attr')
        self._key(keyval, 'Delete_attr')
        if keyval not in store:
            raise MPIException(ERR_OTHER, '{}.Delete_attr: no attribute '
                               'under key {}'.format(self._attr_name,
                                                     keyval))
        self._delete_value(keyval, store.pop(keyval))

    def _delete_value(self, keyval, value):
        key = _keys()['keys'].get(keyval)
        if key is not None and callable(key.delete_fn):
            _callback(key.delete_fn, 'delete', keyval, self, keyval, value)

    def _copy_attrs_to(self, new):
        """Give ``new`` (this object's duplicate) the values the copy
        callbacks make."""
        old = self._attr_store('Dup')
        if not old:
            return
        keys = _keys()['keys']
        copied = {}
        for keyval, value in list(old.items()):
            copy_fn = getattr(keys.get(keyval), 'copy_fn', None)
            if copy_fn is True:
                copied[keyval] = value
            elif callable(copy_fn):
                result = _callback(copy_fn, 'copy', keyval, self, keyval,
                                   value)
                if result is not NotImplemented:
                    copied[keyval] = result
        new._attr_store('Dup').update(copied)

    def _drop_attrs(self, store):
        """Run the delete callbacks of the values in ``store`` (its
        object is being freed), emptying it."""
        values = list(store.items())
        store.clear()
        for keyval, value in values:
            self._delete_value(keyval, value)
