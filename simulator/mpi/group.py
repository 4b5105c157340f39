"""``MPI.Group``: an ordered set of processes, as world ranks.

A group is a value: its members (world ranks, in group order); which of
them is "this" process is asked of the calling rank, so one group object
answers ``Get_rank`` like each process's own handle would.
"""
import operator

from simulator.engine.actors import current
from simulator.mpi.constants import (ERR_GROUP, ERR_RANK, IDENT,
                                     PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL)
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.constants import predefined_free
from simulator.mpi.handles import HandleMixin, handle_argument_error
from simulator.mpi.naming import reduce_constant, unserializable

__all__ = ['Group', 'GROUP_NULL', 'GROUP_EMPTY']


def _group_argument(value, name):
    """mpi4py's typed ``Group`` argument (None is not one)."""
    if not isinstance(value, Group):
        raise TypeError("Argument '{}' has incorrect type (expected "
                        "mpi4py.MPI.Group, got {})".format(
                            name, type(value).__name__))
    return value


class Group(HandleMixin):
    """The ``Group`` type of mpi4py: set operations, rank translation,
    Compare."""

    __module__ = 'simulator.mpi'

    def __init__(self, group=None):
        # Group() is a null handle; Group(g) another handle to g's group.
        if group is not None and not isinstance(group, Group):
            raise handle_argument_error('Group', group)
        self._members = None if group is None else group._members

    def _handle_target(self):
        return self._members

    @classmethod
    def _from_target(cls, target):
        return cls() if target is None else cls._of(target)

    @classmethod
    def _of(cls, members):
        group = cls()
        group._members = tuple(members)
        return group

    @property
    def _m(self):
        if self._members is None:
            raise MPIException(ERR_GROUP, 'operation on GROUP_NULL')
        return self._members

    def Get_size(self):
        """Number of processes in the group."""
        return len(self._m)

    def Get_rank(self):
        """This process's rank in the group, or UNDEFINED."""
        ctx = current()
        me = None if ctx is None else ctx.rank
        members = self._m
        return members.index(me) if me in members else UNDEFINED

    size = property(Get_size)
    rank = property(Get_rank)

    def _ranks(self, ranks, what):
        members = self._m
        out = []
        for r in ranks:
            r = operator.index(r)       # mpi4py's int array: no floats
            if not 0 <= r < len(members):
                raise MPIException(ERR_RANK, '{}: rank {!r} is not in a '
                                   'group of size {}'.format(
                                       what, r, len(members)))
            out.append(r)
        if len(set(out)) != len(out):
            # Open MPI's classes: Incl's is ERR_RANK, Excl's ERR_GROUP.
            raise MPIException(ERR_GROUP if what == 'Excl' else ERR_RANK,
                               '{}: ranks {} repeat a rank'.format(what, out))
        return out

    def Translate_ranks(self, ranks=None, group=None):
        """The ranks in ``group`` of this group's ``ranks`` (UNDEFINED
        for a process not in ``group``, PROC_NULL stays PROC_NULL)."""
        members = self._m
        if ranks is None:
            ranks = range(len(members))
        other = members if group is None else group._m
        out = []
        for r in ranks:
            r = operator.index(r)
            if r == PROC_NULL:
                out.append(PROC_NULL)
                continue
            if not 0 <= r < len(members):
                raise MPIException(ERR_RANK, 'Translate_ranks: rank {!r} '
                                   'is not in a group of size {}'.format(
                                       r, len(members)))
            world = members[r]
            out.append(other.index(world) if world in other else UNDEFINED)
        return out

    def Compare(self, group):
        """IDENT (same members, same order), SIMILAR or UNEQUAL."""
        a, b = self._m, group._m
        if a == b:
            return IDENT
        return SIMILAR if sorted(a) == sorted(b) else UNEQUAL

    @classmethod
    def Union(cls, group1, group2):
        """The members of ``group1``, then ``group2``'s that are not in it."""
        a = _group_argument(group1, 'group1')._m
        b = _group_argument(group2, 'group2')._m
        return cls._of(a + tuple(m for m in b if m not in a))

    @classmethod
    def Intersection(cls, group1, group2):
        """The members of ``group1`` that are in ``group2``, in that order."""
        a = _group_argument(group1, 'group1')._m
        b = _group_argument(group2, 'group2')._m
        return cls._of(m for m in a if m in b)

    Intersect = Intersection

    @classmethod
    def Difference(cls, group1, group2):
        """The members of ``group1`` that are not in ``group2``."""
        a = _group_argument(group1, 'group1')._m
        b = _group_argument(group2, 'group2')._m
        return cls._of(m for m in a if m not in b)

    @classmethod
    def Create_from_session_pset(cls, session, pset_name):
        """The group of ``session``'s process set ``pset_name``
        (``session.Create_group``)."""
        return session.Create_group(pset_name)

    def Incl(self, ranks):
        """The members at ``ranks``, in that order."""
        members = self._m
        return Group._of(members[r] for r in self._ranks(ranks, 'Incl'))

    def Excl(self, ranks):
        """The members not at ``ranks``."""
        dropped = set(self._ranks(ranks, 'Excl'))
        return Group._of(m for i, m in enumerate(self._m)
                         if i not in dropped)

    def _range_ranks(self, ranges, what):
        out = []
        for first, last, stride in ranges:
            if stride == 0:
                raise MPIException(ERR_RANK, '{}: stride 0 in range '
                                   '{}'.format(what, (first, last, stride)))
            stop = last + (1 if stride > 0 else -1)
            out.extend(range(first, stop, stride))
        return out

    def Range_incl(self, ranges):
        """Incl of the ranks in (first, last, stride) ranges."""
        return self.Incl(self._range_ranks(ranges, 'Range_incl'))

    def Range_excl(self, ranges):
        """Excl of the ranks in (first, last, stride) ranges."""
        return self.Excl(self._range_ranks(ranges, 'Range_excl'))

    def Dup(self):
        """A new handle to the same group."""
        return Group(self)

    def Free(self):
        """Release the handle (it becomes GROUP_NULL)."""
        self._m  # noqa: B018 -- raises on GROUP_NULL
        if self is GROUP_EMPTY:
            raise predefined_free(ERR_GROUP, 'GROUP_EMPTY')
        self._members = None

    def free(self):
        """Call ``Free`` unless null or GROUP_EMPTY (mpi4py's)."""
        if self._members is not None and self is not GROUP_EMPTY:
            self.Free()

    def __bool__(self):
        return self._members is not None

    def __eq__(self, other):
        if not isinstance(other, Group):
            return NotImplemented
        return self._members == other._members

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None     # unhashable, as mpi4py's handles

    def __reduce__(self):
        if self._members is None:
            return self._reduce_copy(GROUP_NULL) \
                if self is not GROUP_NULL else \
                reduce_constant(self, 'GROUP_NULL')
        if self is GROUP_EMPTY:
            return reduce_constant(self, 'GROUP_EMPTY')
        if not self._members:
            # Empty groups are the same on every process.
            return self._reduce_copy(GROUP_EMPTY)
        raise unserializable(self, 'groups are local to a process')

    def _describe(self):
        # the simulator's messages (naming.describe); the repr is mpi4py's
        return '<simulator.mpi.Group {}>'.format(
            'GROUP_NULL' if self._members is None else list(self._members))


GROUP_NULL = Group()
GROUP_EMPTY = Group._of(())
