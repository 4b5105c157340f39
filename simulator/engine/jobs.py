"""Jobs: the launches that make up one simulated world.

A world starts as one job (what ``mpiexec -n N`` launched). MPI's dynamic
processes (``Comm.Spawn``) add jobs while it runs: each spawned job is a
set of new world ranks with its own ``COMM_WORLD``, its own command line
per rank and its own launcher variables, and a link to the group that
spawned it (its parent intercommunicator). The engine keeps every rank
of every job in one world, so matching, deadlock reports, failures and
virtual time span parents and children alike.
"""

__all__ = ['Job', 'block_placement']


def block_placement(count, nodes):
    """Node of each of ``count`` ranks placed block-wise on ``nodes``
    hosts (mpiexec's default by-slot mapping): earlier nodes take the
    remainder."""
    nodes = max(1, min(nodes, count))
    per_node, extra = divmod(count, nodes)
    placed = []
    for node in range(nodes):
        placed += [node] * (per_node + (node < extra))
    return placed


class Job:
    """One launch in a world: ``ranks`` (consecutive world ranks, job rank
    i is world rank ``ranks[i]``), ``node_of`` (job rank -> node),
    ``appnum`` (job rank -> its application's index, MPI_APPNUM),
    ``launch`` (job rank -> launcher variables that differ from the
    first job's: OMPI_COMMAND...; None: none), ``parent``: what the
    layer above keeps about the group that spawned it (None for the
    first job)."""

    __slots__ = ('id', 'ranks', 'node_of', 'appnum', 'launch', 'parent')

    def __init__(self, job_id, ranks, node_of, appnum=None, launch=None,
                 parent=None):
        self.id = job_id
        self.ranks = list(ranks)
        self.node_of = list(node_of)
        count = len(self.ranks)
        self.appnum = list(appnum) if appnum is not None else [0] * count
        self.launch = launch
        self.parent = parent

    def job_rank(self, world_rank):
        """The rank of ``world_rank`` in this job's COMM_WORLD."""
        return world_rank - self.ranks[0]

    def __repr__(self):
        return '<Job {} ranks {}..{}>'.format(self.id, self.ranks[0],
                                              self.ranks[-1])
