"""The simulator's engine: it knows messages, collectives and threads,
not mpi4py's API.

- :mod:`~simulator.engine.world`: one job: topology, the lock, blocking
  and the deadlock check, failure;
- :mod:`~simulator.engine.actors` / :mod:`~simulator.engine.ranks`: the
  threads of each rank and how a world is run;
- :mod:`~simulator.engine.process`, :mod:`~simulator.engine.modules`,
  :mod:`~simulator.engine.shared_state`: a rank is a process: its private
  process state and modules, and the process-wide changes reported;
- :mod:`~simulator.engine.activity`: what a rank waits for, and waiting;
- :mod:`~simulator.engine.schedule`: the choices a real MPI may make
  differently (wildcard matches, Waitany, polls), made by a seed;
- :mod:`~simulator.engine.communicator`, :mod:`~simulator.engine.p2p`,
  :mod:`~simulator.engine.collectives`,
  :mod:`~simulator.engine.reduction_order`: matching and reduction order;
- :mod:`~simulator.engine.trace`, :mod:`~simulator.engine.libraries`,
  :mod:`~simulator.engine.reports`: call records, the user's lines, and
  the reports checks raise.
"""
