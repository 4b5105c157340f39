"""Run one program under many schedules; report failures and divergence.

A program's *outcome* under a schedule is what each rank observably did:
its result (functions) or its output lines and the exit status (scripts).
:func:`explore` runs a function, :func:`explore_script` a script, either

- under ``runs`` seeded schedules (seeds ``first_seed``, ``first_seed +
  1``...), or
- systematically (``runs='all'``): a depth-first search over the choices
  of :class:`~simulator.engine.schedule.Schedule` (wildcard matches,
  Waitany, probes and polls with several answers), each run taking the
  next unexplored branch, until every branch is covered or ``bound`` runs
  were made. Decisions pending at one moment commute, so their order is
  branched on only where a later message could have been taken by a
  decision had it waited (a dynamic partial-order reduction).

It stops at the first schedule that fails (a deadlock, a fired check, a
rank's exception) or whose outcome differs from the first run's, and says
how to replay it: ``--schedule SEED`` or ``--schedule choices:1,0,2``.
"""
import io
import re
import shlex

from simulator.engine.schedule import Schedule
from simulator.tools.launch import run

__all__ = ['explore', 'explore_script', 'Exploration', 'parse_schedule',
           'schedule_spec', 'normalize', 'DEFAULT_BOUND']

DEFAULT_BOUND = 1000
# Wall-clock figures that differ between any two runs: Chainer's
# ProgressBar rates and estimates (PrintReport's elapsed_time column is
# masked by column, see normalize()).
_CLOCK_NOISE = (r'[\d.]+ iters/sec', r'Estimated time to finish: .*',
                r'\d+:\d\d:\d\d(\.\d+)?')


def parse_schedule(text):
    """A Schedule from its command-line spelling: ``SEED`` or
    ``choices:I,J,...`` (a systematic run's choices)."""
    text = str(text).strip()
    if text.startswith('choices:'):
        body = text[len('choices:'):]
        try:
            prefix = [int(c) for c in body.split(',') if c != '']
        except ValueError:
            prefix = None
        if prefix is None or any(c < 0 for c in prefix):
            raise ValueError('--schedule choices:... wants comma-separated '
                             'ints >= 0, got {!r}'.format(text))
        return Schedule(prefix=prefix)
    try:
        seed = int(text)
    except ValueError:
        raise ValueError('--schedule wants a seed (int >= 0) or '
                         'choices:I,J,..., got {!r}'.format(text)) from None
    return Schedule(seed)


def schedule_spec(schedule):
    """The command-line spelling of ``schedule`` (see parse_schedule)."""
    if schedule.prefix is None:
        return str(schedule.seed)
    return 'choices:' + ','.join(str(c) for c, _ in schedule.trace)


def _next_prefix(trace):
    """The next branch of a depth-first search after a run's ``trace``."""
    for i in range(len(trace) - 1, -1, -1):
        choice, n = trace[i]
        if choice + 1 < n:
            return [c for c, _ in trace[:i]] + [choice + 1]
    return None


class Exploration:
    """What an exploration found.

    ``runs``: schedules run; ``complete``: systematic search covered every
    branch (False when ``bound`` cut it, None for seeded runs);
    ``outcomes``: distinct outcomes seen; ``failure``: (spec, error) of
    the first failing schedule; ``diverged``: (spec_a, spec_b, line_a,
    line_b) of the first schedule whose outcome differs from the first.
    """

    def __init__(self):
        self.runs = 0
        self.complete = None
        self.outcomes = 0
        self.failure = None
        self.diverged = None

    @property
    def ok(self):
        """True when no schedule failed or diverged."""
        return self.failure is None and self.diverged is None

    def summary(self):
        """One line: how many schedules, and whether the search was cut."""
        if not self.ok:
            return 'found after {} schedule{}'.format(
                self.runs, '' if self.runs == 1 else 's')
        if self.complete is None:
            scope = '{} seeded schedules'.format(self.runs)
        elif self.complete:
            scope = 'all {} schedules (search complete)'.format(self.runs)
        else:
            scope = '{} schedules (bound reached, search incomplete)'.format(
                self.runs)
        return 'explored {}, {} distinct outcome{}'.format(
            scope, self.outcomes, '' if self.outcomes == 1 else 's')

    def __repr__(self):
        return '<Exploration {}{}>'.format(
            self.summary(), '' if self.ok else ', FAILED')


def _schedules(runs, first_seed, bound):
    """Yield fresh schedules; a systematic one's successor is read from
    its trace, once the caller has run it."""
    if runs == 'all':
        prefix = []
        while prefix is not None:
            schedule = Schedule(prefix=prefix)
            yield schedule
            prefix = _next_prefix(schedule.branches())
        return
    if type(runs) is not int or runs < 1:
        raise ValueError("runs must be an int >= 1 or 'all', got "
                         '{!r}'.format(runs))
    for seed in range(first_seed, first_seed + runs):
        yield Schedule(seed)


def _search(attempt, runs, first_seed, bound):
    """Run ``attempt(schedule) -> (outcome, error)`` over the schedules."""
    report = Exploration()
    seen = {}
    first = None
    if runs == 'all':
        report.complete = True
    for schedule in _schedules(runs, first_seed, bound):
        if runs == 'all' and report.runs >= bound:
            report.complete = False
            break
        outcome, error = attempt(schedule)
        report.runs += 1
        seen.setdefault(outcome, schedule_spec(schedule))
        report.outcomes = len(seen)
        spec = schedule_spec(schedule)
        if error is not None:
            report.failure = (spec, error)
            break
        if first is None:
            first = (spec, outcome)
        elif outcome != first[1]:
            line_a, line_b = _first_difference(first[1], outcome)
            report.diverged = (first[0], spec, line_a, line_b)
            break
    if not report.ok and report.complete:
        report.complete = False     # stopped before covering every branch
    return report


def _first_difference(a, b):
    for x, y in zip(a, b):
        if x != y:
            return x, y
    return (a[len(b)] if len(a) > len(b) else '<end>',
            b[len(a)] if len(b) > len(a) else '<end>')


def explore(fn, size, runs=20, *, bound=DEFAULT_BOUND, first_seed=0,
            **options):
    """Run ``fn(comm)`` on ``size`` ranks under many schedules.

    ``runs``: a number of seeded schedules, or ``'all'`` (systematic, at
    most ``bound`` runs); ``options`` go to :func:`simulator.run`. Returns
    an :class:`Exploration`; a failing run's exception is in
    ``failure``, with a note naming the schedule that replays it.
    """
    def attempt(schedule):
        try:
            results = run(fn, size, schedule=schedule, **options)
        except Exception as error:  # noqa: B902 -- reported, not raised
            error.add_note('simulator: replay with schedule={!r}'.format(
                schedule_spec(schedule)))
            return ('error', type(error).__name__), error
        return tuple('rank {}: {!r}'.format(r, v)
                     for r, v in enumerate(results)), None
    return _search(attempt, runs, first_seed, bound)


def normalize(lines, ignore=()):
    """Mask wall-clock noise in output ``lines`` before comparing runs.

    Masks Chainer's ProgressBar rates, clock times, the column under an
    ``elapsed_time`` header (PrintReport), and every match of the
    ``ignore`` regular expressions.
    """
    patterns = [re.compile(p) for p in _CLOCK_NOISE + tuple(ignore)]
    out = []
    column = {}                 # rank prefix -> elapsed_time column start
    for line in lines:
        prefix, _, text = line.partition('] ')
        start = column.get(prefix)
        if 'elapsed_time' in text:
            column[prefix] = text.index('elapsed_time')
        elif start is not None and len(text) > start:
            text = text[:start] + '<time>'
        for p in patterns:
            text = p.sub('<masked>', text)
        out.append(prefix + '] ' + text if _ else text)
    return out


def explore_script(run_once, argv_of, runs, *, bound=DEFAULT_BOUND,
                   first_seed=0, ignore=(), out=None):
    """Explore a script: ``run_once(schedule, stdout, stderr) -> status``
    runs it once; ``argv_of(spec)`` is the replay command for a schedule.
    Writes the report to ``out``; returns the exit status (0 when every
    schedule succeeded with the same output)."""
    captured = {}

    def attempt(schedule):
        stdout, stderr = io.StringIO(), io.StringIO()
        status = run_once(schedule, stdout, stderr)
        captured[schedule_spec(schedule)] = (stdout.getvalue(),
                                             stderr.getvalue())
        lines = stdout.getvalue().splitlines()
        # Rank order, not the threads' interleaving, is what a rank sees.
        lines.sort(key=_rank_of)
        outcome = tuple(normalize(lines, ignore)) + (
            'exit status {}'.format(status),)
        return outcome, (status if status else None)

    report = _search(attempt, runs, first_seed, bound)
    if report.failure is not None:
        spec, status = report.failure
        stdout, stderr = captured[spec]
        out.write(stdout)
        out.write(stderr)
        out.write('simulator: schedule {} failed (exit status {}); {}\n'
                  'replay: {}\n'.format(spec, status, report.summary(),
                                        shlex.join(argv_of(spec))))
        return status
    if report.diverged is not None:
        spec_a, spec_b, line_a, line_b = report.diverged
        out.write('simulator: nondeterministic: the output differs between '
                  'schedules; {}\n'
                  '  {}\n    first differing line: {}\n'
                  '  {}\n    first differing line: {}\n'.format(
                      report.summary(), shlex.join(argv_of(spec_a)),
                      line_a, shlex.join(argv_of(spec_b)), line_b))
        return 3
    out.write('simulator: {}; every schedule succeeded with the same '
              'output\n'.format(report.summary()))
    return 0


def _rank_of(line):
    # Stable sort by the "[rank] " prefix keeps each rank's own order.
    if line.startswith('['):
        head = line[1:line.find(']')]
        if head.isdigit():
            return int(head)
    return -1
