"""The ``simulator`` package: ``import simulator`` is cheap (its names are
imported when first used, PEP 562), and every name it offers is there."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Heavy modules a bare ``import simulator`` must not import: the engine,
# the facade, NumPy, Chainer.
_HEAVY = ('simulator.engine.world', 'simulator.engine.clock',
          'simulator.mpi', 'simulator.tools.launch', 'numpy', 'chainer')

_PROGRAM = '''
import json, sys
import simulator
found = {"after_import": [m for m in %r if m in sys.modules]}
from simulator import *
import simulator.engine.actors, simulator.engine.reports
import simulator.engine.libraries, simulator.errors, simulator.tools.explore
import simulator.tools.launch
homes = {"run": simulator.tools.launch, "explore": simulator.tools.explore,
         "current": simulator.engine.actors,
         "register_explainer": simulator.engine.reports,
         "register_library": simulator.engine.libraries}
found["same"] = {name: getattr(simulator, name) is getattr(
    homes.get(name, simulator.errors), name) and globals()[name] is
    getattr(simulator, name) for name in simulator.__all__}
found["dir"] = [name for name in simulator.__all__
                if name not in dir(simulator)]
found["mpi"] = simulator.mpi.COMM_WORLD is simulator.mpi.COMM_WORLD
try:
    simulator.no_such_name
except AttributeError as error:
    found["missing"] = str(error)
print(json.dumps(found))
''' % (_HEAVY,)


def test_import_simulator_imports_nothing_heavy_and_offers_every_name():
    done = subprocess.run([sys.executable, '-c', _PROGRAM], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found['after_import'] == []
    assert found['same'] and all(found['same'].values()), found['same']
    assert len(found['same']) == 16
    assert found['dir'] == []
    assert found['mpi'] is True
    assert "has no attribute 'no_such_name'" in found['missing']
