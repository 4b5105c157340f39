"""chainermn_lite.timeline: CHAINERMN_LITE_TIMELINE records a real run's
communicator calls into one Chrome trace (run both ways)."""
import json
import os
import tempfile

import numpy as np
import pytest

from chainermn_lite import timeline


def _check_trace(path, size):
    with open(path) as f:
        events = json.load(f)['traceEvents']
    tracks = {e['tid'] for e in events if e['name'] == 'thread_name'}
    assert tracks == set(range(size))
    for e in events:
        assert e['ph'] in ('M', 'X', 's', 'f')
        if e['ph'] == 'X':
            assert e['ts'] >= 0 and e['dur'] >= 0
    return events


@pytest.mark.mpi(sizes=(2,))
def test_real_run_timeline_has_a_track_per_rank_and_send_arrows(
        mpi_comm, make_communicator):
    rank = mpi_comm.Get_rank()
    folder = mpi_comm.bcast(tempfile.mkdtemp() if rank == 0 else None)
    path = os.path.join(folder, 'run.json')
    os.environ[timeline.TIMELINE_ENV] = path
    try:
        comm = make_communicator(mpi_comm, 'flat')
    finally:
        # Every rank has made its communicator before any unsets it (the
        # pytest plugin's rank threads may share the environment).
        mpi_comm.Barrier()
        os.environ.pop(timeline.TIMELINE_ENV, None)
    if rank == 0:
        comm.send(np.arange(4, dtype=np.float32), dest=1, tag=5)
    else:
        comm.recv(source=0, tag=5)
    comm.allreduce_obj(rank)
    mpi_comm.Barrier()
    timeline.flush()
    mpi_comm.Barrier()
    if rank == 0:
        events = _check_trace(path, 2)
        calls = {(e['tid'], e['name']): e for e in events
                 if e['ph'] == 'X'}
        assert calls[(0, 'send')]['args']['dest'] == 1
        assert calls[(0, 'send')]['args']['bytes'] == 16
        assert calls[(1, 'recv')]['args'] == {'source': 0, 'tag': 5,
                                              'comm': comm.name}
        assert (1, 'allreduce_obj') in calls
        flows = [e for e in events if e['ph'] in ('s', 'f')]
        assert sorted((e['ph'], e['tid']) for e in flows) == [
            ('f', 1), ('s', 0)]
        assert not [f for f in os.listdir(folder) if '.rank' in f]
    mpi_comm.Barrier()


@pytest.mark.simulator_only('checks a helper on files, no MPI program')
def test_merge_command_names_missing_parts(tmp_path, capsys):
    assert timeline.main([str(tmp_path / 'none.json')]) == 1
    assert 'none.json.rank*.json' in capsys.readouterr().err
    assert timeline.main([]) == 2
