"""Dynamic processes: Spawn / Spawn_multiple start Python children with
their own COMM_WORLD, argv and Get_parent(), joined to the parents by an
intercommunicator; ports join two groups; checked in both worlds. On the
simulator only: what Open MPI cannot show (a foreign command refused, a
failing or stuck child reported instead of a hang)."""

import sys
import textwrap

import pytest

import simulator
from simulator.errors import DeadlockError

# The child picks the MPI its parent runs on: argv[1] is 'sim' (the
# simulator's threads, where mpi4py is not stood in by the pytest
# plugin) or 'real' (a process spawned by Open MPI).
CHILD = textwrap.dedent('''\
    import os
    import sys
    if sys.argv[1] == 'sim':
        from simulator import mpi as MPI
    else:
        from mpi4py import MPI
    parent = MPI.Comm.Get_parent()
    assert parent != MPI.COMM_NULL
    world = MPI.COMM_WORLD
    greeting = parent.recv(source=0, tag=1)
    parent.send({'argv': sys.argv[1:], 'rank': world.Get_rank(),
                 'size': world.Get_size(), 'remote': parent.Get_remote_size(),
                 'appnum': world.Get_attr(MPI.APPNUM), 'greeting': greeting,
                 'same': MPI.Comm.Get_parent() is parent,
                 'env': (os.environ['OMPI_COMM_WORLD_RANK'],
                         os.environ['OMPI_COMM_WORLD_SIZE'])},
                dest=0, tag=2)
    data = parent.bcast(None, root=0)
    total = world.allreduce(data * (world.Get_rank() + 1))
    if world.Get_rank() == 0:
        parent.send(total, dest=0, tag=3)
    parent.Disconnect()
    assert parent == MPI.COMM_NULL and MPI.Comm.Get_parent() == MPI.COMM_NULL
    ''')


def _child(tmp_path, text=CHILD, name='child.py'):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _mode(simulated):
    return 'sim' if simulated else 'real'


@pytest.mark.mpi(sizes=(1, 2))
def test_spawned_children_talk_to_their_parents(mpi_comm, MPI, simulated,
                                                tmp_path):
    script = _child(tmp_path)
    errcodes = []
    inter = mpi_comm.Spawn(sys.executable, [script, _mode(simulated),
                                            'alpha'], 2, root=0,
                           errcodes=errcodes)
    assert type(inter) is MPI.Intercomm and inter.Is_inter()
    assert errcodes == [MPI.SUCCESS] * 2
    assert (inter.Get_size(), inter.Get_remote_size()) == \
        (mpi_comm.Get_size(), 2)
    assert inter.Get_rank() == mpi_comm.Get_rank()
    if mpi_comm.Get_rank() == 0:
        for child in range(2):
            inter.send(('hello', child), dest=child, tag=1)
        seen = [inter.recv(source=child, tag=2) for child in range(2)]
        for child, info in enumerate(seen):
            assert info == {'argv': [_mode(simulated), 'alpha'],
                            'rank': child, 'size': 2, 'remote':
                            mpi_comm.Get_size(), 'appnum': 0,
                            'greeting': ('hello', child), 'same': True,
                            'env': (str(child), '2')}
    inter.bcast(10 if mpi_comm.Get_rank() == 0 else None,
                root=MPI.ROOT if mpi_comm.Get_rank() == 0 else MPI.PROC_NULL)
    if mpi_comm.Get_rank() == 0:
        assert inter.recv(source=0, tag=3) == 10 * 1 + 10 * 2
    inter.Disconnect()
    assert inter == MPI.COMM_NULL
    assert MPI.Comm.Get_parent() == MPI.COMM_NULL


APPS = textwrap.dedent('''\
    import sys
    if sys.argv[1] == 'sim':
        from simulator import mpi as MPI
    else:
        from mpi4py import MPI
    parent = MPI.Comm.Get_parent()
    world = MPI.COMM_WORLD
    parent.send((sys.argv[2], world.Get_rank(), world.Get_size(),
                 world.Get_attr(MPI.APPNUM)), dest=0)
    parent.Disconnect()
    ''')


@pytest.mark.mpi(sizes=(1, 2))
def test_spawn_multiple_numbers_the_applications(mpi_comm, MPI, simulated,
                                                 tmp_path):
    script = _child(tmp_path, APPS, 'apps.py')
    mode = _mode(simulated)
    errcodes = []
    inter = mpi_comm.Spawn_multiple(
        [sys.executable] * 2, [[script, mode, 'first'],
                               [script, mode, 'second']], [1, 2],
        errcodes=errcodes)
    assert errcodes == [[MPI.SUCCESS], [MPI.SUCCESS] * 2]
    assert inter.Get_remote_size() == 3
    if mpi_comm.Get_rank() == 0:
        got = sorted(inter.recv(source=child) for child in range(3))
        assert got == [('first', 0, 3, 0), ('second', 1, 3, 1),
                       ('second', 2, 3, 1)]
    inter.Disconnect()


@pytest.mark.mpi(sizes=(2, 3))
def test_accept_and_connect_join_two_groups(mpi_comm, MPI):
    rank = mpi_comm.Get_rank()
    server = rank == 0
    half = mpi_comm.Split(0 if server else 1, rank)
    port = MPI.Open_port() if server else None
    port = mpi_comm.bcast(port, root=0)
    if server:
        MPI.Publish_name('spawn-test', port)
        assert MPI.Lookup_name('spawn-test') == port
        MPI.Unpublish_name('spawn-test', port)
        inter = half.Accept(port)
        MPI.Close_port(port)
    else:
        inter = half.Connect(port)
    assert inter.Get_remote_size() == (mpi_comm.Get_size() - 1 if server
                                       else 1)
    got = inter.bcast('from the server' if server else None,
                      root=MPI.ROOT if server else 0)
    assert got == (None if server else 'from the server')
    inter.Free()
    half.Free()


@pytest.mark.simulator_only('Open MPI runs any executable; the simulator '
                            'only Python programs')
def test_a_command_that_is_not_python_is_refused_on_every_rank():
    def body(comm):
        from simulator import mpi
        with pytest.raises(NotImplementedError) as info:
            comm.Spawn('/bin/echo', ['hi'], 1)
        assert "'/bin/echo'" in str(info.value)
        assert 'Python' in str(info.value)
        with pytest.raises(mpi.Exception) as info:
            comm.Spawn('/no/such/program', [], 1)
        assert info.value.Get_error_class() == mpi.ERR_UNKNOWN
        assert '/no/such/program' in info.value.__notes__[0]
        return mpi.COMM_WORLD.Get_size()
    assert simulator.run(body, 2, timeout=60) == [2, 2]


@pytest.mark.simulator_only('under mpiexec a failing child aborts the job')
def test_a_child_that_raises_is_reported_to_the_waiting_parent(tmp_path):
    script = _child(tmp_path, textwrap.dedent('''\
        from simulator import mpi as MPI
        MPI.Comm.Get_parent()
        raise ValueError('the child broke')
        '''), 'broken.py')

    def body(comm):
        inter = comm.Spawn(sys.executable, [script], 1)
        inter.recv(source=0)        # never sent: the child failed
    with pytest.raises(ValueError, match='the child broke') as info:
        simulator.run(body, 2, timeout=60)
    assert any('raised in rank 2 of 3 (rank 0 of the job a Spawn started)'
               in note for note in info.value.__notes__)


@pytest.mark.simulator_only('a spawned process applies its interpreter '
                            'options: there is nothing to say')
def test_interpreter_options_a_spawned_rank_cannot_have_are_reported(
        tmp_path):
    from simulator.engine.shared_state import SharedStateWarning
    script = _child(tmp_path, textwrap.dedent('''\
        import sys
        from simulator import mpi as MPI
        MPI.Comm.Get_parent().send(sys.flags.optimize, dest=0)
        '''), 'optimized.py')

    def body(comm):
        inter = comm.Spawn(sys.executable, ['-OO', script], 1)
        return inter.recv(source=0)
    with pytest.warns(SharedStateWarning) as caught:
        assert simulator.run(body, 1, timeout=60) == [sys.flags.optimize]
    said = [str(w.message) for w in caught]
    assert any(m.startswith('rank 1 was spawned as python -OO (sys.flags.'
                            'optimize 2, here 0)') for m in said), said
    assert all(w.filename == script for w in caught)


@pytest.mark.simulator_only('a deliberate deadlock')
def test_a_child_left_waiting_for_its_parents_is_a_deadlock(tmp_path):
    script = _child(tmp_path, textwrap.dedent('''\
        from simulator import mpi as MPI
        MPI.Comm.Get_parent().recv(source=0, tag=9)
        '''), 'waits.py')

    def body(comm):
        comm.Spawn(sys.executable, [script], 1)     # and never sends
    with pytest.raises(DeadlockError) as info:
        simulator.run(body, 1, timeout=60)
    assert 'recv(peer=0, tag=9' in str(info.value)


@pytest.mark.simulator_only("virtual time is the simulator's model")
def test_spawned_ranks_keep_virtual_time_from_their_spawn(tmp_path):
    from simulator.engine.clock import VirtualTime
    from simulator.engine.netmodel import Link, Machine
    latency, bandwidth = 1e-3, 1e6      # 9 ms for 8000 bytes
    hop = latency + 8000 / bandwidth
    script = _child(tmp_path, textwrap.dedent('''\
        import numpy as np
        from simulator import mpi as MPI
        parent = MPI.Comm.Get_parent()
        data = np.empty(1000)
        parent.Recv(data, source=0)
        parent.Send(data, dest=0)
        parent.Disconnect()
        '''), 'echo.py')

    def body(comm):
        import numpy as np
        inter = comm.Spawn(sys.executable, [script], 1)
        data = np.arange(1000.0)
        inter.Send(data, dest=0)
        inter.Recv(data, source=0)
        inter.Disconnect()
        return data.sum()
    clock = VirtualTime(Machine('slow', Link('intra', latency, bandwidth)),
                        compute_scale=1e-9)
    assert simulator.run(body, 1, clock=clock, timeout=60) == [499500.0]
    assert len(clock.clocks) == 2       # the parent's and the child's
    parent, child = (c.now for c in clock.clocks)
    assert parent >= 2 * hop and child >= hop
    assert parent == pytest.approx(child, abs=hop / 2)
