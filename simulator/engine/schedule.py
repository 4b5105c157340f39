"""The scheduler: every choice a real MPI may make differently per run.

Without a :class:`Schedule` (``world.schedule is None``, the default) the
engine matches as it always did: a wildcard receive takes the first
message to arrive, ``Waitany`` the first request found complete, ``Test``
whatever is true at the instant it is called. That instant depends on how
the operating system ran the rank threads, so those choices are neither
explored nor reproducible.

With a schedule every such choice is made by the scheduler, and only at a
*fence*: a moment when every live thread of every rank is blocked (and
no progress thread of a non-blocking collective runs). Between fences the
ranks run freely and do only what cannot depend on timing: eager sends,
receives naming their source (MPI's matching is deterministic without
``ANY_SOURCE``: FIFO per sender, tag and communicator), collectives. What
could depend on timing waits for the next fence:

- a receive from ``ANY_SOURCE`` stays posted, unmatched; so do the
  messages it could take (a later receive may not take a message an
  earlier pending wildcard could still take, as in MPI's posting order);
- ``Probe(ANY_SOURCE)``, and ``Waitany`` over several requests, block
  until the fence chooses among the messages / complete requests;
- ``Test``, ``Iprobe``, ``Get_status`` (polls) block until a fence and
  report what holds there.

Because threads make only timing-independent progress between fences,
the state at a fence (which messages are queued, which receives posted,
where each rank stands) is the same in every run that made the same
earlier choices, however the threads were interleaved. So a seed gives the
same choices, and the same outcome, on any machine. Each fence makes one
choice: one wildcard receive (or Probe, or Waitany) and which of its
candidates it takes. When none is pending the polls are answered
together; when nothing is pending at all it is a deadlock, as before.

Candidates are only those a real MPI could deliver: for each sender, the
earliest queued message that matches (non-overtaking), and only if no
receive posted earlier by the same rank could take it; any message may
have been delayed in the network, so any such candidate may win. Standard
sends complete as the world's ``send_mode`` says (by default as Open MPI's
eager limit does), unless it is ``'mixed'``: then each standard send is
eager or rendezvous, drawn per message from the seed (a real MPI may make
any send wait for its receive).

Two kinds of :class:`Schedule`: seeded (``Schedule(seed)``: the fence
chooses the decision and the candidate at random) and systematic
(``Schedule(prefix=[...])``: it follows ``prefix`` then takes the first
option, and :meth:`Schedule.branches` lists (choice, options) so that
a depth-first search can enumerate every distinct outcome). Decisions
pending at one fence are taken in a fixed order, since they commute,
unless a later message shows that one of them could have taken it had
it waited: only then is deferring that decision a branch (a dynamic
partial-order reduction in the spirit of DAMPI's late messages).

``Cancel`` of a receive happens at a fence too (whether a message matched
first is timing). Limit: threads of one rank that race each other stay
timing-dependent.
"""
import random
import time

from simulator.engine import p2p
from simulator.engine.world import POLL_GRACE

__all__ = ['Schedule', 'Pending']


class Pending:
    """A thread waiting for the scheduler's answer at the next fence.

    ``options()`` (lock held) lists what may be answered now; a decision
    (``poll=False``) waits for a non-empty list, a poll is answered with
    one option, or None when the list is empty.
    """

    __slots__ = ('rank', 'seq', 'options', 'poll', 'answered', 'answer')

    def __init__(self, rank, seq, options, poll):
        self.rank = rank
        self.seq = seq
        self.options = options
        self.poll = poll
        self.answered = False
        self.answer = None


class Schedule:
    """The choices of one run: drawn from ``seed``, or following
    ``prefix`` (systematic exploration).

    ``trace`` records each choice as (index taken, number of options);
    ``fences`` counts the fences that made a choice.
    """

    def __init__(self, seed=0, prefix=None):
        if prefix is None and (type(seed) is not int or seed < 0):
            raise ValueError('a schedule seed must be an int >= 0, got '
                             '{!r}'.format(seed))
        self.seed = seed
        self.prefix = None if prefix is None else list(prefix)
        self._rng = random.Random(seed)
        self.trace = []
        self.fences = 0
        self.started = False    # a Schedule drives one run
        self._pending = []
        self._seq = {}          # rank -> choice points made so far
        self._wildcards = {}    # posted ANY_SOURCE Recv -> seq
        self._sends = {}        # rank -> standard sends so far
        self._idle = None       # (version, since): polls see no change
        # Systematic runs: [step, rank, ctx, tag, senders, late] of each
        # wildcard decision made while other decisions were pending.
        self._watch = []

    def __repr__(self):
        if self.prefix is not None:
            return 'Schedule(prefix={})'.format(self.prefix)
        return 'Schedule({})'.format(self.seed)

    # -- drawing --------------------------------------------------------
    def choose(self, n, deferrable=False):
        """Index of the option taken among ``n`` (n >= 1). With
        ``deferrable`` (systematic runs) the prefix may also say ``n``:
        make another decision of this fence first."""
        if n == 1 and not deferrable:
            return 0
        step = len(self.trace)
        if self.prefix is None:
            choice = self._rng.randrange(n)
        elif step < len(self.prefix):
            choice = min(self.prefix[step], n if deferrable else n - 1)
        else:
            choice = 0
        self.trace.append((choice, n + (choice == n)))
        return choice

    def branches(self):
        """The trace as (choice, options) for a depth-first search: a
        decision that a later message could have changed (see
        :meth:`sent`) gets one more option, deferring it."""
        trace = list(self.trace)
        for watch in self._watch:
            if watch[-1]:
                choice, n = trace[watch[0]]
                trace[watch[0]] = (choice, n + 1)
        return trace

    def sent(self, dest, ctx, msg):
        """``msg`` was sent to world rank ``dest`` (lock held): a watched
        wildcard decision of ``dest`` that could have taken it, had it
        waited, is worth deferring in another run (the dynamic part of
        the partial-order reduction: only such decisions are reordered)."""
        for watch in self._watch:
            step, rank, wctx, tag, senders, late = watch
            if not late and rank == dest and wctx == ctx and \
                    msg.source not in senders and \
                    msg.matches(p2p.ANY_SOURCE, tag):
                watch[-1] = True

    def _next_seq(self, rank):
        seq = self._seq.get(rank, 0)
        self._seq[rank] = seq + 1
        return seq

    def rendezvous(self, world, rank):
        """Whether ``rank``'s next standard send waits for its receive.

        Drawn from (seed, rank, send number), not from the shared draw,
        so that the ranks' threads may ask in any order.
        """
        if world.send_mode != 'mixed':
            return world.send_mode == 'rendezvous'
        n = self._sends.get(rank, 0)
        self._sends[rank] = n + 1
        base = self.seed if self.prefix is None else 0
        return random.Random((base * 65537 + rank) * 1000003 + n).random() \
            < 0.5

    # -- the hooks ------------------------------------------------------
    def defer(self, recv):
        """True when ``recv`` must wait for a fence to be matched (lock
        held): a receive from any source."""
        if recv.source != p2p.ANY_SOURCE:
            return False
        self._wildcards[recv] = self._next_seq(recv.rank)
        return True

    def await_choice(self, world, rank, record, options, poll=False,
                     hopeless=None):
        """Block the calling thread until a fence answers (lock held).

        Returns the option chosen among ``options()`` (None for a poll
        that found nothing).
        """
        token = Pending(rank, self._next_seq(rank), options, poll)
        self._pending.append(token)
        try:
            world.block(lambda: token.answered, record, hopeless)
        finally:
            self._pending.remove(token)
        return token.answer

    def poll(self, world, rank, record, ready):
        """A Test/Iprobe-like poll of ``ready()``: answered at a fence."""
        return self.await_choice(
            world, rank, record, lambda: [True] if ready() else [],
            poll=True) is not None

    # -- fences -----------------------------------------------------------
    def _decisions(self, world):
        points = []
        for recv in list(self._wildcards):
            if recv.message is not None or recv.cancelled:
                del self._wildcards[recv]
                continue
            options = p2p.recv_candidates(world, recv)
            if options:
                points.append((recv.rank, self._wildcards[recv], recv,
                               options))
        for token in self._pending:
            if not token.poll and not token.answered:
                options = token.options()
                if options:
                    points.append((token.rank, token.seq, token, options))
        points.sort(key=lambda p: p[:2])
        return points

    def fence(self, world):
        """Every live thread is blocked (lock held): make one choice.

        Returns True when a choice woke somebody, False when nothing is
        left to choose (a deadlock, or polls that can never succeed).
        """
        points = self._decisions(world)
        if points:
            self._idle = None
            if self.prefix is None:
                _, _, what, options = points[self.choose(len(points))]
                k = self.choose(len(options))
            else:
                # Decisions at one fence commute unless one of them would
                # have had another candidate had it waited: take them in
                # a fixed order; branch on the option, and on deferring
                # it once a later run shows it worth it (see sent()).
                i = 0
                while True:
                    _, _, what, options = points[i]
                    deferrable = i + 1 < len(points)
                    step = len(self.trace)
                    k = self.choose(len(options), deferrable)
                    if k < len(options):
                        break
                    i += 1
                if deferrable and not isinstance(what, Pending):
                    self._watch.append([step, what.rank, what.ctx, what.tag,
                                        {m.source for m in options}, False])
            choice = options[k]
            self.fences += 1
            if isinstance(what, Pending):
                self._answer(world, what, choice)
            else:
                del self._wildcards[what]
                p2p.match(world, what, choice)
            return True
        polls = sorted((t for t in self._pending
                        if t.poll and not t.answered),
                       key=lambda t: (t.rank, t.seq))
        if not polls:
            return False
        answers = [t.options() for t in polls]
        if not any(answers):
            # Every poll would fail again: a loop of them is a deadlock
            # once the world has stayed unchanged for the grace period.
            now = time.monotonic()
            if self._idle is None or self._idle[0] != world.version:
                self._idle = (world.version, now)
            elif now - self._idle[1] >= POLL_GRACE:
                return False
        self.fences += 1
        for token, options in zip(polls, answers):
            self._answer(world, token, options[self.choose(len(options))]
                         if options else None)
        return True

    def _answer(self, world, token, choice):
        token.answer = choice
        token.answered = True
        world.wake(token.rank)
