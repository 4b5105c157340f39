"""simulator.calibrate: the description it writes loads as a machine.

The probe itself runs under mpiexec (about 20 s), so the suite checks the
description it writes from a probe's figures; benchmarks/
bench_prediction.py runs the whole calibration."""
import pytest

from simulator.calibrate import describe, main
from simulator.engine.netmodel import load_machine

pytestmark = pytest.mark.simulator_only('runs mpiexec itself, once')


def test_description_round_trips(tmp_path):
    figures = {'latency': 1.5e-6, 'bandwidth': 4.2e9,
               'reduce_bandwidth': [[1 << 16, 9e9], [1 << 24, 3e9]],
               'copy_bandwidth': [[1 << 16, 2e10], [1 << 24, 6e9]],
               'selection': 'openmpi', 'cores': 2, 'host': 'box'}
    path = tmp_path / 'm.toml'
    path.write_text(describe(figures, 'python -m simulator.calibrate'))
    m = load_machine(str(path))
    assert m.links['intra'].latency == pytest.approx(1.5e-6)
    assert m.links['intra'].bandwidth == pytest.approx(4.2e9)
    assert m.links['inter'] is m.links['intra']
    assert m.cores_per_node == 2 and m.selection == 'openmpi'
    assert m.reduce_bandwidth.points == [(1 << 16, 9e9), (1 << 24, 3e9)]
    assert m.copy_bandwidth.at(1 << 24) == 6e9
    assert m.name.startswith('box')


def test_missing_mpiexec_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(['-o', str(tmp_path / 'x.toml'), '--mpiexec',
              'no-such-mpiexec'])
    assert "'no-such-mpiexec'" in capsys.readouterr().err


def test_selection_follows_the_library_that_ran_the_probe():
    import types

    from simulator.calibrate import _library

    def mpi(version):
        return types.SimpleNamespace(Get_library_version=lambda: version)
    assert _library(mpi('Open MPI v5.0.11, package: Open MPI')) == 'openmpi'
    assert _library(mpi('MPICH Version: 4.2.0')) == 'threshold'
