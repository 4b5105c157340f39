"""The differential fuzzer: random valid mpi4py programs, run on the
simulator and under ``mpiexec``, compared bit for bit.

``python -m simulator.fuzz --help`` for the command line; see
:mod:`simulator.fuzz.runner`. Layers: :mod:`~simulator.fuzz.model` (the
generator's view of the world), the operation kinds
(:mod:`~simulator.fuzz.comm_ops`, :mod:`~simulator.fuzz.coll`,
:mod:`~simulator.fuzz.obj`, :mod:`~simulator.fuzz.p2p`,
:mod:`~simulator.fuzz.icoll`, :mod:`~simulator.fuzz.loc`,
:mod:`~simulator.fuzz.persist`, :mod:`~simulator.fuzz.groups`,
:mod:`~simulator.fuzz.rma`, :mod:`~simulator.fuzz.dtypes`,
:mod:`~simulator.fuzz.topo`, :mod:`~simulator.fuzz.io`,
:mod:`~simulator.fuzz.inter`),
:mod:`~simulator.fuzz.gen` (programs and their families),
:mod:`~simulator.fuzz.runner` (running and comparing);
:mod:`~simulator.fuzz.runtime` is pasted into every program.
"""
from simulator.fuzz.gen import generate
from simulator.fuzz.runner import (Run, compare, fuzz_one, main,
                                   run_in_process, run_mpiexec,
                                   run_simulator)

__all__ = ['generate', 'Run', 'compare', 'fuzz_one', 'main',
           'run_in_process', 'run_mpiexec', 'run_simulator']
