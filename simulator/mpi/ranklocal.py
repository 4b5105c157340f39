"""Tables a rank keeps as its own process would (handle numbers, keyvals,
attributes): one per rank, kept on its context; outside a rank one table
per name serves import-time code. Its own module, importing nothing of
``simulator.mpi``, so that every module there may use it."""
from simulator.engine.actors import current

__all__ = ['rank_local']

_OUTSIDE = {}


def rank_local(name, make=dict):
    """The calling rank's own ``name`` table, made by ``make()`` at first
    use (a rank is a process); outside a rank, one for import-time
    code."""
    ctx = current()
    local = _OUTSIDE if ctx is None else ctx.local
    table = local.get(name)
    if table is None:
        table = local[name] = make()
    return table
