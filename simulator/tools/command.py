"""What ``python -m simulator`` does once :mod:`simulator.tools.cli` has
read its options and settled the address layout: load the script and run
it on rank threads, in virtual time, at several sizes or under many
schedules.

Apart from the CLI because of what it imports (the engine, the mpi4py
facade, NumPy: ~0.5 s): the CLI may execute the process again first, and
that second start must not pay for them twice.
"""
import os
import signal
import sys
import traceback

from simulator.engine.actors import current
from simulator.engine.clock import ESTIMATES, VirtualTime
from simulator.engine.modules import register_private_module
from simulator.engine.process import ProcessExit
from simulator.engine.program import NoMainModule, execute
from simulator.engine.trace import as_processes_traceback
from simulator.errors import AbortError, SimulatorError
from simulator.engine.netmodel import DEFAULT_MACHINE, load_machine
from simulator.tools.explore import (DEFAULT_BOUND, explore_script,
                                     parse_schedule)
from simulator.tools.launch import (RankInput, RankMainModule, RankStream,
                                    captured_streams,
                                    command_code, install_mpi4py, load_code,
                                    run, terminal_descriptors)
from simulator.tools.timeline import scaling_table, write_timeline

__all__ = ['run_command']


def _clock(options):
    """A VirtualTime for one run, or None with virtual time off."""
    if not options.virtual_time:
        return None
    machine = load_machine(options.machine or DEFAULT_MACHINE)
    return VirtualTime(machine, options.compute_scale,
                       timeline=bool(options.timeline),
                       estimate=options.compute_estimate or ESTIMATES[0],
                       one_core=not options.all_cores)


def run_command(options, parser, argv, sizes):
    """Run the script as ``options`` (parsed from ``argv`` by ``parser``)
    say, at ``sizes``; returns the exit status."""
    for name in options.private_module:
        register_private_module(name)
    try:
        _clock(options)
    except (ValueError, OSError) as error:   # a bad machine description
        parser.error(str(error))
    if options.schedule is not None:
        try:
            options.schedule = parse_schedule(options.schedule)
        except ValueError as error:
            parser.error(str(error))
    if options.bound is None:
        options.bound = DEFAULT_BOUND
    try:
        if options.command:
            code, base = command_code(options.target)
        else:
            code, base = load_code(options.target, options.module)
    except SyntaxError as error:
        # As python reports a program it cannot compile (exit status 1).
        sys.stderr.write(''.join(traceback.format_exception_only(
            type(error), error)))
        return 1
    except NoMainModule as error:
        # A directory or zip file without one: python's words, status 1.
        sys.stderr.write('{}: {}\n'.format(
            (getattr(sys, 'orig_argv', None) or ['python'])[0], error))
        return 1
    except OSError as error:
        # As python reports a script it cannot open (exit status 2).
        sys.stderr.write("{}: can't open file {!r}: [Errno {}] {}\n".format(
            (getattr(sys, 'orig_argv', None) or ['python'])[0],
            os.path.abspath(options.target), error.errno, error.strerror))
        return 2
    install_mpi4py()
    # As python would: the script's path as given (a module's file with
    # -m, '-c' with -c), and the command line the program would have had
    # on its own.
    sys.argv = ['-c' if options.command else base['__file__']
                if options.module else options.target] + options.args
    sys.orig_argv = _interpreter_words(sys.orig_argv) + (
        ['-m'] if options.module else ['-c'] if options.command else []) + \
        [options.target] + options.args
    if options.command or not options.module:
        # as python's own: '' for -c, the script's folder; the working
        # directory for -m, which python -m simulator put there already
        entry = '' if options.command else os.path.dirname(base['__file__'])
        if getattr(options, 'replace_path0', False):
            sys.path[0] = entry
        else:
            sys.path.insert(0, entry)
    if options.explore is not None:
        return _explore(options, argv, code, base, sizes[0])
    if options.sizes is None:
        status, clock = _run_script(options, code, base, sizes[0])
        if clock is not None:
            print(clock.summary())
            if options.timeline:
                write_timeline(clock, options.timeline)
                print('timeline: {}'.format(options.timeline))
        return status
    rows = []
    # Only the table is printed: the ranks' own output goes nowhere. One
    # sink for all runs: libraries keep the stream they first saw (Chainer's
    # PrintReport binds sys.stdout as a default argument).
    # The first size runs twice: libraries' first-use costs (lazy imports,
    # set-up), paid once per process, would fall on the first run only.
    with open(os.devnull, 'w') as sink:
        for i, size in enumerate([sizes[0]] + sizes):
            status, clock = _run_script(options, code, base, size, sink)
            if status:
                print('simulator: the run at {} ranks failed (exit {}); run '
                      'it with -n {} to see why'.format(size, status, size),
                      file=sys.stderr)
                return status
            if i:
                rows.append((size, clock))
    print(scaling_table(rows))
    return 0




def _call_excepthook(error):
    """As the interpreter does with a program's uncaught exception: the
    rank's ``sys.excepthook`` (per rank, see
    :mod:`simulator.engine.rank_sys`: Python's own, which prints the
    traceback to the rank's stderr, or the program's) reports it, in
    every rank that raised one, as each process of ``mpiexec`` does. A
    hook that aborts the job (an MPI abort hook) ends it with its
    ``AbortError``; a hook that fails is reported as Python reports it."""
    hook = sys.excepthook
    if isinstance(error, SimulatorError):
        # The simulator's own reports (a deadlock, a rank that failed
        # while this one waited) are not the program's exceptions: under
        # mpiexec the process would hang or be killed.
        return
    tb = as_processes_traceback(error.__traceback__)
    error.__traceback__ = tb
    try:
        hook(type(error), error, tb)
    except AbortError as abort:
        abort.simulator_reported_by_hook = True
        raise abort from None
    except ProcessExit:
        raise       # the hook's os._exit(n): the rank ends with status n
    except BaseException as failure:  # noqa: B902 -- printed as Python does
        sys.stderr.write('Error in sys.excepthook:\n')
        traceback.print_exception(type(failure), failure,
                                  failure.__traceback__.tb_next,
                                  file=sys.stderr, chain=False)
        sys.stderr.write('\nOriginal exception was:\n')
        traceback.print_exception(type(error), error, tb, file=sys.stderr,
                                  chain=False)
    error.simulator_reported_by_hook = True


def _interpreter_words(orig_argv):
    """The interpreter and its own options (``python -X utf8``) from the
    command line that ran ``python -m simulator``."""
    for i in range(len(orig_argv) - 1):
        if orig_argv[i] == '-m' and orig_argv[i + 1] == 'simulator':
            return orig_argv[:i]
    return orig_argv[:1]


def _explore(options, argv, code, base, size):
    """``--explore``: run the script under many schedules."""
    runs = options.explore
    if runs != 'all':
        try:
            runs = int(runs)
        except ValueError:
            raise SystemExit('simulator: --explore wants a number of '
                             "schedules or 'all', got {!r}".format(runs)) \
                from None

    def replay(spec):
        # The user's command, the exploration options replaced.
        head = argv[:len(argv) - len(options.args) - 1]
        keep, skip = [], False
        for word in head:
            if skip:
                skip = False
            elif word in ('--explore', '--bound', '--ignore', '--schedule'):
                skip = True
            elif not word.startswith(('--explore=', '--bound=', '--ignore=',
                                      '--schedule=')):
                keep.append(word)
        return (['python', '-m', 'simulator'] + keep + ['--schedule', spec,
                options.target] + options.args)

    # One pair of streams for every run: libraries keep the sys.stdout
    # they first saw (Chainer's PrintReport does).
    streams = (RankStream(_Redirect(), True, tty=True),
               RankStream(_Redirect(), True))

    def run_once(schedule, out, err):
        streams[0]._stream.target, streams[1]._stream.target = out, err
        return _run_script(options, code, base, size, schedule=schedule,
                           streams=streams)[0]

    return explore_script(run_once, replay, runs, bound=options.bound,
                          ignore=options.ignore, out=sys.stdout)


class _Redirect:
    """A stream writing to ``target``, which may change between runs."""

    target = None

    def write(self, text):
        return self.target.write(text)

    def flush(self):
        self.target.flush()


def _run_script(options, code, base, size, sink=None, schedule=None,
                streams=None):
    """Run the script on ``size`` ranks: (exit status, VirtualTime).

    ``schedule`` (default: ``--schedule``'s) orders the run's choices;
    then the ranks' lines come out at the end in rank order, so that a
    seed gives the same output byte for byte, whatever the timing.
    ``streams``: the RankStreams to print through (and report to).
    """
    clock = _clock(options)
    nodes = options.nodes
    if nodes is None:
        nodes = 1 if clock is None else min(size,
                                            clock.machine.nodes_for(size))
    elif options.sizes is not None:
        nodes = min(nodes, size)    # --sizes 1,2,4 --nodes 2
    if schedule is None:
        schedule = options.schedule
    real_out, real_err = report = sys.stdout, sys.stderr
    if streams is None:
        hold = schedule is not None
        out = RankStream(sink or sys.stdout, hold, tty=True)
        err = RankStream(sink or sys.stderr, hold)
    else:
        out, err = streams
        report = out._stream, err._stream
    real_main = sys.modules.get('__main__')
    sys.modules['__main__'] = RankMainModule(real_main)
    sys.stdout, sys.stderr = out, err
    real_in = sys.stdin
    sys.stdin = rank_in = RankInput(real_in)

    def rank_main(comm):
        try:
            execute((code, base))
        except (Exception, KeyboardInterrupt) as error:
            _call_excepthook(error)
            raise
        finally:
            # Not comm.Get_rank(): the program may have finalized MPI.
            rank = current().rank
            out.flush_rank(rank)
            err.flush_rank(rank)

    try:
        with captured_streams({real_out: out, real_err: err}), \
                terminal_descriptors(out, err):
            try:
                run(rank_main, size, nodes=nodes,
                    send_mode=options.send_mode, timeout=options.timeout,
                    seed=options.seed, clock=clock, schedule=schedule)
            finally:
                out.flush_all()
                err.flush_all()
                out.release()
                err.release()
    except SystemExit as stop:
        sys.stdout, sys.stderr = real_out, real_err
        code = stop.code
        if isinstance(code, bool):
            code = int(code)    # unittest's sys.exit(not passed)
        notes = ' ({})'.format('; '.join(stop.__notes__)) \
            if getattr(stop, '__notes__', None) else ''
        # sys.exit('message'): Python prints the message and exits 1.
        report[1].write('{}{}\n'.format(
            'simulator: exit status {}'.format(code)
            if isinstance(code, int) else code, notes))
        report[1].flush()
        return (code if isinstance(code, int) else 1), clock
    except BaseException as error:  # noqa: B902 -- reported, then exit 1
        sys.stdout, sys.stderr = real_out, real_err
        report[0].flush()
        if getattr(error, 'simulator_reported_by_hook', False):
            # The rank's own sys.excepthook reported it, as the
            # interpreter would have it do: only say where it was (and,
            # when the hook aborted the job, that it did).
            said = list(getattr(error, '__notes__', ()))
            if isinstance(error, AbortError):
                said.insert(0, 'simulator: {}'.format(error))
            report[1].write('; '.join(said) + '\n')
        else:
            traceback.print_exception(error, file=report[1])
        if isinstance(error, KeyboardInterrupt):
            # Python then dies of SIGINT, which mpiexec reports as 130.
            return 128 + signal.SIGINT, clock
        # Abort(0) ends mpiexec's job with status 0 too
        status = getattr(error, 'errorcode', None)
        return (1 if status is None else status), clock
    finally:
        rank_in.close_empty()
        sys.stdout, sys.stderr, sys.stdin = real_out, real_err, real_in
        sys.modules['__main__'] = real_main
    return 0, clock
