"""What a rank can observe of its own process: prints one OUT line per
fact, the same under mpiexec and on the simulator (ranks <= cores, where
Open MPI numbers local ranks in world order): its arguments and command
line as given, the launcher's variables, its streams and threads."""
import builtins
import inspect
import io
import json
import multiprocessing
import os
import re
import sys
import threading
import traceback
import warnings

from mpi4py import MPI



def _terminal_size(fd):
    try:
        return tuple(os.get_terminal_size(fd))
    except OSError as error:
        return error.strerror


world = MPI.COMM_WORLD
facts = {
    # __main__ as python makes it: names in order, a loader for the file
    'main_names': [n for n in globals() if n.startswith('__')],
    'main_loader': type(__loader__).__name__,
    'cached': __cached__,
    'module_types': sorted({str(type(m)) for m in (
        sys, builtins, threading, warnings, json, os)}),
    # a process numbers the threads it names from Thread-1
    'thread_names': [threading.Thread(target=print).name for _ in 'ab'],
    'process_names': [multiprocessing.Process(target=print).name
                      for _ in 'ab'],
    # mpiexec keeps its own PRTE_* (the launch's oversubscription here)
    'prte_variables': sorted(k for k in os.environ if k.startswith('PRTE_')),
    'stdout_tty': sys.stdout.isatty(),
    # the streams are text files (libraries check before reconfigure())
    'text_streams': [isinstance(s, io.TextIOWrapper)
                     for s in (sys.stdin, sys.stdout, sys.stderr)],
    'stdin': [sys.stdin.name, sys.stdin.encoding.lower()],
    # mpiexec makes each process the leader of its own process group
    'multiprocessing_pid': multiprocessing.current_process().pid ==
    os.getpid(),
    'group_leader': [os.getpgrp() == os.getpid(),
                     os.getpgid(0) == os.getpid()],
    'stderr_tty': sys.stderr.isatty(),
    # the descriptors under the streams answer alike
    'fd_ttys': [os.isatty(fd) for fd in (0, 1, 2)],
    'terminal_sizes': [_terminal_size(fd) for fd in (0, 1, 2)],
    'stream_reprs': [repr(s) for s in (sys.stdout, sys.stderr, sys.stdin)],
    'main_thread': threading.current_thread() is threading.main_thread(),
    'threads': threading.active_count(),
    'universe': world.Get_attr(MPI.UNIVERSE_SIZE),
    # Open MPI counts Wtime from MPI_Init: a process reads about 0
    'wtime_from_start': 0 <= MPI.Wtime() < 60,
    'argv': sys.argv,
    'orig_argv': getattr(sys, 'orig_argv', None),
    'file': __file__,
    'path0': sys.path[0],
    # the whole search path: the launcher's own first entry is not there
    'path': sys.path,
    'namespace': bool(re.fullmatch(r'prterun-.+-\d+@1',
                                   os.environ.get('PMIX_NAMESPACE', ''))),
}
for name in ('RANK', 'SIZE', 'LOCAL_RANK', 'LOCAL_SIZE', 'NODE_RANK'):
    facts[name] = os.environ.get('OMPI_COMM_WORLD_' + name)
for name in ('PMIX_RANK', 'PMIX_HOSTNAME', 'OMPI_COMMAND', 'OMPI_ARGV',
             'OMPI_MCA_num_procs', 'OMPI_NUM_APP_CTX', 'OMPI_TOOL_NAME',
             'OMPI_MCA_initial_wdir', 'OMPI_VERSION', 'PRTE_LAUNCHED'):
    facts[name] = os.environ.get(name)
# __main__ as a module object: the script's own names, both ways
main = sys.modules['__main__']
main.set_through_main = world.rank
facts['main_module'] = [
    main.__doc__ == __doc__, type(main.__loader__).__name__,
    main.__spec__ is __spec__, globals().get('set_through_main'),
    str(type(main))]
try:
    del main.never_set
except AttributeError as error:
    facts['main_del'] = str(error)
facts['main_thread_repr'] = repr(threading.main_thread()).split(',')[0]


def _warned_at(stacklevel):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        warnings.warn('where', stacklevel=stacklevel)
    return os.path.basename(caught[0].filename), caught[0].lineno


# a warning's stacklevel counts the program's frames and no launcher's:
# above the stack it is sys:1; a thread's target is called by threading
facts['warned_at'] = [_warned_at(1), _warned_at(2), _warned_at(3)]
seen = []
thread = threading.Thread(target=lambda: seen.append(_warned_at(3)))
thread.start()
thread.join()
facts['thread_warned_at'] = seen[0][0]
# ... and the stack a program inspects is its own
facts['stack'] = [[f.function for f in inspect.stack()],
                  len(traceback.format_stack()),
                  [name for _, _, name, _ in traceback.extract_stack()]]
for name in sorted(facts):
    print('OUT rank={} {}={}'.format(world.rank, name, facts[name]))
