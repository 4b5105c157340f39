"""Tools on top of the simulator: the launcher (:mod:`~simulator.tools.
launch`), ``python -m simulator`` (:mod:`~simulator.tools.cli`), the pytest
plugin for tests written once for both worlds
(:mod:`~simulator.tools.pytest_plugin`) and the runner of suites written
for ``mpiexec`` (:mod:`~simulator.tools.mpiexec_suite`)."""
