"""The seed guide's pathological model-parallel graphs are reported with a
hint naming the rank whose send was never back-propagated, not a hang or a
silent pass. These runs fail on purpose, so they are simulator only."""
import inspect

import chainer
import chainer.functions as F
import numpy as np
import pytest

import chainermn_lite
import simulator

F_ = chainermn_lite.functions
ERRORS = (simulator.DeadlockError, simulator.UnmatchedMessageError)


def _comm(mpi_comm):
    return chainermn_lite.create_communicator('naive', mpi_comm=mpi_comm)


def _x():
    return chainer.Variable(np.ones((2, 3), np.float32))


def forgot_delegate(mpi_comm):
    """Case (a): rank 0 receives without passing send's delegate."""
    comm = _comm(mpi_comm)
    for _ in range(2):
        if comm.rank == 0:
            F_.send(_x() * 2, comm, rank=1)
            y = F_.recv(comm, rank=1)           # delegate_variable missing
            F.sum(y).backward()
        else:
            h = F_.recv(comm, rank=0)
            F_.send(h * 3, comm, rank=0).backward()


def two_sends_without_pseudo_connect(mpi_comm):
    """Case (b): only the second send's delegate is returned."""
    comm = _comm(mpi_comm)
    if comm.rank == 0:
        x = _x()
        F_.send(x * 2, comm, rank=1)
        phi2 = F_.send(x * 3, comm, rank=1)
        phi2.backward()                          # phi1 is lost
    else:
        z1 = F_.recv(comm, rank=0)
        z2 = F_.recv(comm, rank=0)
        F.sum(z1 * z2).backward()


def receiver_drops_its_graph(mpi_comm):
    """Rank 1 returns its output but not its send's delegate."""
    comm = _comm(mpi_comm)
    if comm.rank == 0:
        phi = F_.send(_x(), comm, rank=1)
        phi.backward()                           # waits for a gradient
    else:
        h = F_.recv(comm, rank=0)
        F_.send(h * 3, comm, rank=0)
        # rank 1 never back-propagates: its recv's backward never runs


def _line_of(fn, snippet):
    """'file:line' of the first line of ``fn`` that contains ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    offset = next(i for i, text in enumerate(lines) if snippet in text)
    return '{}:{}'.format(inspect.getsourcefile(fn), start + offset)


def _report(fn, send_mode):
    with pytest.raises(ERRORS) as info:
        simulator.run(fn, 2, send_mode=send_mode, timeout=60)
    return str(info.value)


@pytest.mark.simulator_only('deliberately broken graph: deadlock/leftover')
@pytest.mark.parametrize('send_mode', ['eager', 'rendezvous'])
def test_forgotten_delegate_variable_is_explained(send_mode):
    text = _report(forgot_delegate, send_mode)
    assert 'rank 0 never ran the backward of its matching ' \
           'functions.send(x, rank=1, tag=0)' in text
    assert 'delegate_variable=phi' in text and 'pseudo_connect' in text
    assert 'test_model_parallel_hints.py' in text      # the user's line
    if send_mode == 'eager':
        # the line of the send whose backward never ran
        assert 'sent in forward from forgot_delegate ({})'.format(
            _line_of(forgot_delegate, 'F_.send(_x() * 2')) in text


@pytest.mark.simulator_only('deliberately broken graph: leftover gradient')
def test_two_sends_without_pseudo_connect_are_explained():
    text = _report(two_sends_without_pseudo_connect, 'eager')
    assert 'rank 0 never ran the backward of its matching ' \
           'functions.send(x, rank=1, tag=0)' in text
    assert 'pseudo_connect(phi1, phi2)' in text
    for send in ('F_.send(x * 2', 'F_.send(x * 3'):
        assert _line_of(two_sends_without_pseudo_connect, send) in text


@pytest.mark.simulator_only('deliberately broken graph: deadlock')
def test_receiver_that_never_backprops_is_explained():
    text = _report(receiver_drops_its_graph, 'eager')
    assert 'rank 0 waits in the backward of its functions.send(x, rank=1, ' \
           'tag=0)' in text
    assert 'rank 1 never back-propagated its functions.recv(rank=0, ' \
           'tag=0)' in text


@pytest.mark.simulator_only('checks the explainer on a healthy run')
def test_no_hint_for_reports_without_model_parallel_calls():
    def plain_deadlock(comm):
        comm.recv(source=1 - comm.Get_rank(), tag=7)

    with pytest.raises(simulator.DeadlockError) as info:
        simulator.run(plain_deadlock, 2, timeout=60)
    assert 'model parallel' not in str(info.value)
