"""Dynamic processes (MPI 4.0, chapter 11), inside one simulated world.

``Spawn`` / ``Spawn_multiple`` add a job of new ranks to the running world
(:func:`simulator.engine.ranks.start_job`): each runs its Python program
(:mod:`simulator.engine.program`) with its own ``COMM_WORLD``, command
line and launcher variables, and ``Get_parent()`` gives it the
intercommunicator to the group that spawned it. A command that is not a
Python program cannot become a rank thread: NotSimulated, naming it.

Ports (``Open_port``, ``Accept``, ``Connect``) and published names join
groups of the same world; ``Join`` joins the two ranks at the ends of a
socket. Every connection is an intercommunicator of
:mod:`simulator.mpi.intercomm`, so it behaves as those made by
``Create_intercomm``. Waits here use the engine's blocking protocol: an
``Accept`` that nobody can ever connect to is a deadlock, reported.
"""
import copy
import os
import struct
import sys
import warnings

from simulator.engine import collectives as coll
from simulator.engine.actors import current
from simulator.engine.process import process_state, spawned_environ
from simulator.engine.program import (ForeignCommand, check_command,
                                      execute, spawned_program)
from simulator.engine.ranks import start_job
from simulator.engine.shared_state import SharedStateWarning
from simulator.engine.trace import CallRecord, capture
from simulator.mpi.constants import ERR_ARG, ERR_UNKNOWN, SUCCESS
from simulator.mpi.constants import Exception as MPIException
from simulator.mpi.intercomm import InterState
from simulator.mpi.unsupported import NotSimulated
from simulator.mpi.values import VALUES

# Error classes with behaviour here (values.py only names them).
ERR_NAME, ERR_PORT, ERR_SPAWN = (VALUES['ERR_NAME'], VALUES['ERR_PORT'],
                                 VALUES['ERR_SPAWN'])

__all__ = ['spawn', 'spawn_apps', 'spawn_multiple_apps', 'parent_state',
           'accept_or_connect', 'join', 'Open_port', 'Close_port',
           'Publish_name', 'Unpublish_name', 'Lookup_name']


# -- Spawn ------------------------------------------------------------------
def _fspath(obj, what):
    if isinstance(obj, bytes):
        return obj.decode()
    try:
        return os.fspath(obj)
    except TypeError:
        raise TypeError('{}: expected a path-like command, got {!r}'.format(
            what, obj)) from None


def _argv(args):
    # mpi4py's rules: None is no arguments, a string one argument.
    if args is None:
        return []
    if isinstance(args, (str, bytes)):
        args = [args]
    return [_fspath(a, 'Spawn args') for a in args]


def spawn_apps(command, args, maxprocs, info):
    """The root's one application of ``Spawn``: [(command, argv,
    maxprocs)]."""
    return [(_fspath(command, 'Spawn'), _argv(args), maxprocs)]


def _expect(count, sequence, what):
    if len(sequence) != count:
        raise ValueError('{}: expecting {} items, got {}'.format(
            what, count, len(sequence)))


def spawn_multiple_apps(command, args, maxprocs, info):
    """The root's applications of ``Spawn_multiple``, with mpi4py's
    checks (ValueError where the lengths disagree)."""
    if isinstance(command, (str, bytes)) or hasattr(command, '__fspath__'):
        raise ValueError('Spawn_multiple: expecting a sequence of '
                         'path-like commands, got {!r}'.format(command))
    commands = [_fspath(c, 'Spawn_multiple') for c in command]
    count = len(commands)
    if args is None:
        argvs = [[]] * count
    elif isinstance(args, (str, bytes)):
        argvs = [_argv(args)] * count
    else:
        args = list(args)
        _expect(count, args, 'Spawn_multiple args')
        argvs = [_argv(a) for a in args]
    if maxprocs is None or isinstance(maxprocs, int):
        counts = [1 if maxprocs is None else maxprocs] * count
    else:
        counts = list(maxprocs)
        _expect(count, counts, 'Spawn_multiple maxprocs')
    if info is not None and not _is_info(info):
        _expect(count, list(info), 'Spawn_multiple info')
    return list(zip(commands, argvs, counts))


def _is_info(obj):
    return any(k.__name__ == 'Info' for k in type(obj).__mro__)


def _check_apps(apps):
    """Every application runs here, or the error all ranks raise."""
    for command, _, count in apps:
        if not isinstance(count, int) or count < 1:
            return MPIException(ERR_SPAWN, 'Spawn: maxprocs {!r} for {!r} '
                                'must be >= 1'.format(count, command))
        try:
            check_command(command)
        except FileNotFoundError as error:
            # Open MPI's launcher fails so (MPI_ERR_UNKNOWN).
            return MPIException(ERR_UNKNOWN, 'Spawn: {}'.format(error))
        except ForeignCommand as error:
            return NotSimulated('simulator.mpi: Spawn: {}'.format(error))
    return None


def _child_main(apps):
    def main(context):
        command, args, _ = apps[context.job.appnum[context.job_rank]]
        program = spawned_program(command, args)
        unapplied = program.unapplied_options()
        if unapplied:
            # Said at the spawned program's first line: its own call
            # started nothing yet.
            warnings.warn_explicit(SharedStateWarning(
                'rank {} was spawned as python {}: a spawned process would '
                'run with those interpreter options, but rank threads share '
                'this interpreter, whose sys.flags (and assert statements, '
                'bytecode files...) stand'.format(
                    context.rank, ', '.join(unapplied))),
                SharedStateWarning,
                program.base.get('__file__') or '<string>', 1)
        process_state().argv = list(program.argv)
        if program.path and program.path not in sys.path:
            # What python SCRIPT puts first on its path (the rank's own:
            # see simulator.engine.rank_sys).
            sys.path.insert(0, program.path)
        execute(program)
    return main


def spawn(comm, apps, root, op):
    """``Spawn`` / ``Spawn_multiple`` on the intracommunicator ``comm``,
    collective; ``apps`` (significant at ``root`` only): [(command, argv,
    maxprocs)]. Returns (the parent side's InterState, [errcodes per
    application])."""
    s = comm._s
    root = comm._root(root)
    seq = s.next_seq()
    record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                        raw=capture(3))
    world = s.world
    group = tuple(s.group)

    def combine(args):
        apps = args[root]
        error = _check_apps(apps)
        if error is not None:
            return error
        appnum, launch = [], []
        for index, (command, argv, count) in enumerate(apps):
            appnum += [index] * count
            launch += [spawned_environ([command] + argv,
                                       len(world.jobs))] * count
        return start_job(world, len(appnum), _child_main(apps),
                         appnum=appnum, launch=launch, parent=group)

    if world.clock is not None:
        world.clock.stamp(record)
    slot = coll.arrive(s, seq, op, (('root', root),),
                       apps if s.rank == root else None, record, combine,
                       retire=True)
    coll.wait_ready(s, slot, record)
    if world.clock is not None:
        world.clock.collective(s.world_rank, slot)
    job = slot.result
    if isinstance(job, BaseException):
        raise copy.copy(job)        # each rank its own
    codes = [[SUCCESS] * count for _, _, count in slot.args[root]]
    state = InterState(world, ('spawn', job.id), s.group, s.rank, job.ranks,
                       '{}.{}#{}'.format(s.name, op, seq))
    return state, codes


def parent_state():
    """The calling rank's parent intercommunicator state, or None (not
    spawned, or disconnected)."""
    ctx = current()
    if ctx is None or ctx.job.parent is None:
        return None
    state = ctx.local.get('mpi.parent')
    if state is None:
        job = ctx.job
        state = ctx.local['mpi.parent'] = InterState(
            ctx.world, ('spawn', job.id), job.ranks, ctx.job_rank,
            job.parent, 'MPI_COMM_PARENT', title='MPI_COMM_PARENT')
    return None if state.unusable is not None else state


# -- ports and names ----------------------------------------------------------
class _Port:
    __slots__ = ('accepting', 'connecting')

    def __init__(self):
        self.accepting = []     # _Waiter: roots blocked in Accept
        self.connecting = []


class _Waiter:
    __slots__ = ('rank', 'group', 'answer')

    def __init__(self, rank, group):
        self.rank, self.group, self.answer = rank, group, None


class _Registry:
    """The world's open ports and published names (the launcher's name
    server under mpiexec; lock: the world's)."""

    def __init__(self):
        self.ports = {}
        self.names = {}
        self.opened = 0
        self.links = 0


def _registry(world):
    reg = world.extensions.get('mpi.dynamic')
    if reg is None:
        reg = world.extensions['mpi.dynamic'] = _Registry()
    return reg


def _rank(what):
    ctx = current()
    if ctx is None:
        raise RuntimeError('simulator.mpi.{} used outside a simulated '
                           'rank'.format(what))
    return ctx


def _port_name(port_name, what):
    if not isinstance(port_name, str):
        raise TypeError('{}: port_name must be a str, got {!r}'.format(
            what, port_name))
    return port_name


def Open_port(info=None):
    """A new port name others may ``Connect`` to while this rank (or its
    group) ``Accept``s on it."""
    ctx = _rank('Open_port')
    world = ctx.world
    with world.lock:
        reg = _registry(world)
        reg.opened += 1
        # Open MPI's form: "<job>.<rank>:<tag>".
        name = '{}.{}:{}'.format(ctx.job.id, ctx.job_rank, reg.opened)
        reg.ports[name] = _Port()
    return name


def Close_port(port_name):
    """Release a port name (nobody can connect to it afterwards)."""
    ctx = _rank('Close_port')
    port_name = _port_name(port_name, 'Close_port')
    with ctx.world.lock:
        _registry(ctx.world).ports.pop(port_name, None)


def Publish_name(service_name, port_name, info=None):
    """Publish ``port_name`` under ``service_name`` for the whole world (a
    second publication replaces the first, without error, as Open MPI
    5.0's)."""
    ctx = _rank('Publish_name')
    service_name = _port_name(service_name, 'Publish_name')
    port_name = _port_name(port_name, 'Publish_name')
    with ctx.world.lock:
        _registry(ctx.world).names[service_name] = port_name


def Unpublish_name(service_name, port_name, info=None):
    """Withdraw a published service name (an unknown one is no error, as
    in Open MPI 5.0)."""
    ctx = _rank('Unpublish_name')
    with ctx.world.lock:
        _registry(ctx.world).names.pop(service_name, None)


def Lookup_name(service_name, info=None):
    """The port published under ``service_name``."""
    ctx = _rank('Lookup_name')
    with ctx.world.lock:
        port = _registry(ctx.world).names.get(service_name)
    if port is None:
        raise MPIException(ERR_NAME, 'Lookup_name: no service {!r} is '
                           'published'.format(service_name))
    return port


def _meet(s, op, port_name, record):
    """The root's side of Accept/Connect: wait for the other side's root
    on ``port_name``; (remote group, context) or an error to raise."""
    world = s.world
    with world.lock:
        world.raise_if_broken(s.world_rank)
        reg = _registry(world)
        port = reg.ports.get(port_name)
        if port is None:
            return MPIException(ERR_PORT, '{}: port {!r} is not open (see '
                                'Open_port)'.format(op, port_name))
        mine, theirs = (port.accepting, port.connecting) \
            if op == 'Accept' else (port.connecting, port.accepting)
        group = tuple(s.group)
        if theirs:
            peer = theirs.pop(0)
            reg.links += 1
            ctx = ('port', port_name, reg.links)
            peer.answer = (group, ctx)
            world.version += 1
            world.wake(peer.rank)
            return peer.group, ctx
        me = _Waiter(s.world_rank, group)
        mine.append(me)
        try:
            world.block(lambda: me.answer is not None, record)
        finally:
            if me in mine:
                mine.remove(me)
        return me.answer


def accept_or_connect(comm, op, port_name, root):
    """``Accept`` / ``Connect`` on ``comm`` (collective): the parent-side
    InterState joining it to the group on the other end of the port."""
    s = comm._s
    root = comm._root(root)
    seq = s.next_seq()
    record = CallRecord(op, s.world_rank, None, None, s.name, seq,
                        raw=capture(3))
    mine = None
    if s.rank == root:
        mine = _meet(s, op, _port_name(port_name, op), record)
    world = s.world
    if world.clock is not None:
        world.clock.stamp(record)
    slot = coll.arrive(s, seq, op, (('root', root),), mine, record,
                       retire=True)
    coll.wait_ready(s, slot, record)
    if world.clock is not None:
        world.clock.collective(s.world_rank, slot)
    found = slot.args[root]
    if isinstance(found, BaseException):
        raise copy.copy(found)
    remote, ctx = found
    return InterState(world, ctx, s.group, s.rank, remote,
                      '{}.{}#{}'.format(s.name, op, seq))


# -- Join -------------------------------------------------------------------
_HELLO = struct.Struct('<QQ')


def _exchange(fd, data):
    os.write(fd, data)
    got = b''
    while len(got) < len(data):
        more = os.read(fd, len(data) - len(got))
        if not more:
            raise MPIException(ERR_ARG, 'Join: the other end of socket {} '
                               'closed before joining'.format(fd))
        got += more
    return got


def join(fd):
    """``Comm.Join``: the two ranks at the ends of the socket ``fd`` swap
    who they are over it, then share an intercommunicator."""
    ctx = _rank('Comm.Join')
    if not isinstance(fd, int) or fd < 0:
        raise TypeError('Join: fd must be a file descriptor (int >= 0), got '
                        '{!r}'.format(fd))
    world, me = ctx.world, ctx.rank
    token = id(world) & 0xFFFFFFFFFFFFFFFF
    try:
        their_world, peer = _HELLO.unpack(_exchange(fd, _HELLO.pack(token,
                                                                    me)))
    except OSError as error:
        raise MPIException(ERR_ARG, 'Join: socket {}: {}'.format(
            fd, error)) from None
    if their_world != token or peer == me or peer >= world.size:
        raise MPIException(ERR_ARG, 'Join: the other end of socket {} is '
                           'not another rank of this simulated world'.format(
                               fd))
    pair = (min(me, peer), max(me, peer))
    counts = ctx.local.setdefault('mpi.join', {})
    counts[pair] = n = counts.get(pair, 0) + 1
    return InterState(world, ('join', pair, n), [me], 0, [peer],
                      'Join#{}'.format(n))
