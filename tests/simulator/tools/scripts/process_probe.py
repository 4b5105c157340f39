"""What a rank can observe of its own process: prints one OUT line per
fact, the same under mpiexec and on the simulator (ranks <= cores, where
Open MPI numbers local ranks in world order)."""
import os
import sys
import threading

from mpi4py import MPI

world = MPI.COMM_WORLD
facts = {
    'stdout_tty': sys.stdout.isatty(),
    'stderr_tty': sys.stderr.isatty(),
    'main_thread': threading.current_thread() is threading.main_thread(),
    'threads': threading.active_count(),
    'universe': world.Get_attr(MPI.UNIVERSE_SIZE),
}
for name in ('RANK', 'SIZE', 'LOCAL_RANK', 'LOCAL_SIZE', 'NODE_RANK'):
    facts[name] = os.environ.get('OMPI_COMM_WORLD_' + name)
for name in sorted(facts):
    print('OUT rank={} {}={}'.format(world.rank, name, facts[name]))
