"""A rank's view of a communicator, as the engine matches messages on it.

Ranks of one communicator share a context id (``ctx``) and a group (comm
rank -> world rank); messages and collectives are matched per context.
Each rank holds its own :class:`CommState`, never shared between ranks.
"""

__all__ = ['CommState']


class CommState:
    """One rank's view of a communicator (never shared between ranks)."""

    __slots__ = ('world', 'ctx', 'group', 'rank', 'name', 'seq', 'unusable',
                 'world_rank', 'title', 'props', 'peers')

    def __init__(self, world, ctx, group, rank, name, title=None):
        self.world = world
        self.ctx = ctx
        self.group = group
        # Whom point-to-point ranks name: the group itself, except on an
        # intercommunicator (the remote group).
        self.peers = group
        self.rank = rank
        self.world_rank = group[rank]
        # ``name`` tells people which communicator a report is about;
        # ``title`` is what Get_name returns: like Open MPI, '' for a
        # communicator made by Split or Dup until Set_name names it.
        self.name = name
        self.title = name if title is None else title
        self.seq = 0
        # Why the handle cannot be used now (freed, an Idup not yet
        # complete), or None: one check on every call.
        self.unusable = None
        # What the MPI facade keeps per communicator handle (error
        # handler, attributes, info hints); the engine never reads it.
        self.props = {}

    def next_seq(self):
        """Number this rank's next collective call on the communicator."""
        self.seq += 1
        return self.seq
