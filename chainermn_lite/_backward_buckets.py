"""Gradient means that start while ``backward`` still runs (``overlap``).

Chainer 7.8.1 walks the graph from the loss in one loop and only writes
the parameters' ``.grad`` when the loop is over; a parameter's gradient
is final, though, as soon as the last function that takes it has run its
backward. ``GradReadiness`` knows which functions those are: before
backward it counts, in the loss's graph, the uses of every parameter; a
``FunctionHook`` then hears each function finish and takes the gradients
it returned (its ``backward`` is wrapped on the instance, for that call
only). When a parameter's last use is done its gradient is the sum of what
it got, in the order Chainer sums it, so the value is Chainer's own.

``BucketPlan`` groups the parameters, in reverse order of creation (the
order in which backward finishes them), into buckets of about
``bucket_bytes``. ``BucketReducer`` runs on a helper thread over a ``Dup``
of the communicator: it takes the buckets in order, waits for each to be
complete and averages it with the communicator's own gradient strategy
(``mean_bucket``: on MPI the non-overlapped mean of the bucket's arrays,
in place), while the main thread goes on with backward. The
optimizer then waits only for what is still in flight. Without a hooked
backward (``loss.backward()`` called by the user) the same buckets are
reduced in the same order after the fact, so both paths give the same
bits.

A gradient array that may share memory with a gradient flowing on through
the graph (``F.add`` hands its output's gradient to both inputs, a reshape
hands a view) is copied before it is averaged in place; so is one that is
already another parameter's.
"""
import threading

import chainer
import numpy

from chainermn_lite.communicators import _grads

__all__ = ['DEFAULT_BUCKET_BYTES', 'BucketPlan', 'GradReadiness',
           'BucketReducer', 'is_missing', 'array_of']

# A few MiB: big enough that a bucket's collective is bandwidth-bound,
# small enough that the first bucket starts early in backward.
DEFAULT_BUCKET_BYTES = 4 * 1024 * 1024


class BucketPlan:
    """Buckets of ``params`` (given in creation order), filled in reverse
    order: ``buckets`` is a list of lists of indexes into ``params``,
    ``bucket_of`` the bucket of each parameter."""

    def __init__(self, params, bucket_bytes):
        self.params = list(params)
        self.buckets = []
        self.bucket_of = [None] * len(self.params)
        size = bucket_bytes
        for i in reversed(range(len(self.params))):
            nbytes = self.params[i].data.nbytes
            if not self.buckets or size + nbytes > bucket_bytes:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(i)
            self.bucket_of[i] = len(self.buckets) - 1
            size += nbytes

    def check_agreement(self, mpi_comm, module):
        """Every rank must have the same buckets (parameter sizes and
        dtypes in the same order): one small Allreduce, once per plan;
        GradientMismatchError naming the ranks' parameters otherwise."""
        entries = [(1, p.data.size, ord(p.data.dtype.char))
                   for p in self.params]
        if mpi_comm.Get_size() > 1 and not _grads._agree(
                mpi_comm, module, _grads._fingerprint(entries)):
            raise _grads.GradientMismatchError(
                'overlap (rank {}): ranks disagree on the parameters to '
                'average (sizes and dtypes in creation order); this rank '
                'has {}'.format(mpi_comm.Get_rank(), [
                    (p.name, tuple(p.data.shape), str(p.data.dtype))
                    for p in self.params]))


class GradReadiness(chainer.FunctionHook):
    """Calls ``on_final(index, array or None)`` for each parameter of
    ``params`` as soon as its gradient is final during backward; ``finish``
    reports the rest (those whose uses were never all reached)."""

    name = 'chainermn_lite-grad-readiness'

    def __init__(self, params, on_final):
        self._index = {id(p.node): i for i, p in enumerate(params)}
        self._params = params
        self._on_final = on_final
        self._uses = {}          # id(func) -> [(input index, param index)]
        self._remaining = [0] * len(params)
        self._got = [[] for _ in params]
        self._done = [False] * len(params)

    def count_uses(self, loss):
        """Count, in ``loss``'s graph, each parameter's uses; parameters
        with none are final at once. Call before ``loss.backward``."""
        index = self._index
        seen = set()
        stack = [loss.creator_node] if loss.creator_node is not None else []
        while stack:
            func = stack.pop()
            if id(func) in seen:
                continue
            seen.add(id(func))
            uses = None
            for k, node in enumerate(func.inputs):
                i = index.get(id(node))
                if i is not None:
                    if uses is None:
                        uses = self._uses[id(func)] = []
                    uses.append((k, i))
                    self._remaining[i] += 1
                elif node.creator_node is not None:
                    stack.append(node.creator_node)
        # The gradient a parameter holds before backward (zerograds, or
        # an accumulation over several backward calls) comes first in
        # Chainer's sum.
        for i, p in enumerate(self._params):
            if p.grad_var is not None:
                self._got[i].append(p.grad_var)
        for i, n in enumerate(self._remaining):
            if n == 0:
                self._final(i, None)

    def backward_preprocess(self, function, in_data, out_grad):
        uses = self._uses.get(id(function))
        if uses is None:
            return
        original = function.backward
        captured = []

        def backward(target_input_indexes, grad_outputs):
            gxs = original(target_input_indexes, grad_outputs)
            captured.append((target_input_indexes, gxs))
            return gxs
        try:
            function.backward = backward
        except AttributeError:   # a node with __slots__: final at the end
            del self._uses[id(function)]
            return
        self._captured = captured

    def backward_postprocess(self, function, in_data, out_grad):
        uses = self._uses.pop(id(function), None)
        if uses is None:
            return
        del function.backward
        captured, self._captured = self._captured, None
        if not captured:
            return
        targets, gxs = captured[0]
        n_inputs = len(function.inputs)
        if len(gxs) == n_inputs:
            by_input = dict(enumerate(gxs))
        else:
            by_input = dict(zip(targets, gxs))
        for k, i in uses:
            if k not in targets:
                continue       # Chainer skipped this input (no grad)
            gx = by_input.get(k)
            if gx is not None and gx.raw_array is not None:
                if _may_alias(gx.array, in_data, out_grad):
                    gx = chainer.Variable(gx.array.copy(),
                                          requires_grad=False)
                self._got[i].append(gx)
            self._remaining[i] -= 1
            if self._remaining[i] == 0:
                self._final(i, None)

    def _final(self, i, array):
        if self._done[i]:
            return
        self._done[i] = True
        if array is None:
            got = self._got[i]
            self._got[i] = None
            if not got:
                array = None
            elif len(got) == 1:
                array = got[0].array
            else:
                # Chainer's own sum of the same list: the same bits.
                array = chainer.functions.add(*got).array
        self._on_final(i, array)

    def finish(self):
        """Report every parameter not final yet with its ``.grad`` as
        backward left it (call after backward)."""
        for i, p in enumerate(self._params):
            if not self._done[i]:
                self._final(i, p.grad)


def _may_alias(array, in_data, out_grad):
    """Whether ``array`` may share memory with the function's inputs or
    its outputs' gradients (which flow on through the graph)."""
    xp = chainer.backend.get_array_module(array)
    may_share = getattr(xp, 'may_share_memory', numpy.may_share_memory)
    for other in in_data + out_grad:
        if other is not None and type(other) is type(array) and \
                may_share(array, other):
            return True
    return False


class BucketReducer:
    """Averages the buckets of ``plan`` in order on a helper thread with
    ``comm`` (a ``Dup`` of the optimizer's communicator), each as soon as
    all its gradients are final (``put``). ``wait`` returns the averaged
    gradient arrays, one per parameter (None where backward gave none)."""

    def __init__(self, plan, comm):
        self._plan = plan
        self._comm = comm
        self._arrays = [None] * len(plan.params)
        self._missing = [len(b) for b in plan.buckets]
        self._ready = threading.Condition()
        self._complete = 0          # buckets 0 .. _complete-1 are complete
        self._errors = []
        self._thread = None
        self._taken = set()     # ids of the arrays already some param's
        self.buckets_done = 0   # averaged so far (read by tests, traces)

    def start(self):
        """Start the helper thread (before backward)."""
        self._thread = threading.Thread(
            target=self._run, daemon=True,
            name='chainermn_lite-overlap')
        self._thread.start()

    def put(self, i, array):
        """Parameter ``i``'s final gradient (None: it got none)."""
        if array is None:
            # Reduced as zeros so that every rank's buckets agree; whether
            # it stays None is decided after the mean (zero_fill).
            p = self._plan.params[i]
            array = p.xp.zeros_like(p.data)
            self._arrays[i] = _NoGrad(array)
        else:
            if id(array) in self._taken:    # two params, one array
                array = array.copy()
            self._taken.add(id(array))
            self._arrays[i] = array
        b = self._plan.bucket_of[i]
        self._missing[b] -= 1
        if self._missing[b] == 0:
            with self._ready:
                while self._complete < len(self._missing) and \
                        self._missing[self._complete] == 0:
                    self._complete += 1
                self._ready.notify()

    def _run(self):
        try:
            for b, bucket in enumerate(self._plan.buckets):
                with self._ready:
                    while self._complete <= b:
                        self._ready.wait()
                means = self._comm._mean_bucket(
                    [array_of(self._arrays[i]) for i in bucket])
                for i, mean in zip(bucket, means):
                    entry = self._arrays[i]
                    if type(entry) is _NoGrad:
                        entry.array = mean
                    else:
                        self._arrays[i] = mean
                self.buckets_done = b + 1
        except BaseException as e:        # re-raised by wait()
            self._errors.append(e)

    def reduce_all(self, grads):
        """Average ``grads`` (one per parameter, None for none) bucket by
        bucket on the calling thread, when no hooked backward ran: the
        same calls as the helper thread's."""
        for i, g in enumerate(grads):
            self.put(i, g)
        self._run()
        return self._result()

    def wait(self):
        """Wait for the helper thread; the averaged arrays."""
        self._thread.join()
        return self._result()

    def _result(self):
        if self._errors:
            raise self._errors[0]
        return self._arrays


class _NoGrad:
    """The zeros that stand for a parameter's missing gradient."""

    __slots__ = ('array',)

    def __init__(self, array):
        self.array = array


def array_of(entry):
    """The array of an entry of ``BucketReducer.wait()``."""
    return entry.array if type(entry) is _NoGrad else entry


def is_missing(entry):
    """Whether an entry of ``BucketReducer.wait()`` stands for a gradient
    backward never gave (its ``.array`` holds the mean of the others)."""
    return type(entry) is _NoGrad
