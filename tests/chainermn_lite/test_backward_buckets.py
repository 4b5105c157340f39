"""Gradient readiness during backward, and the bucket plan (one process)."""
import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np

from chainermn_lite import _backward_buckets as buckets


class _Counter(chainer.FunctionHook):
    """Counts the function backwards that have run."""

    name = 'counter'

    def __init__(self):
        self.done = 0

    def backward_postprocess(self, function, in_data, out_grad):
        self.done += 1


class _Deep(chainer.Chain):
    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(0)
        with self.init_scope():
            self.l1 = L.Linear(4, 6, initialW=rng.normal(size=(6, 4)))
            self.l2 = L.Linear(6, 6, initialW=rng.normal(size=(6, 6)))
            self.l3 = L.Linear(6, 2, initialW=rng.normal(size=(2, 6)))

    def forward(self, x):
        return F.sum(self.l3(F.relu(self.l2(F.relu(self.l1(x))))) ** 2)


def _run(model, loss_fn, use_zerograds=False):
    """(reports [(param name, backwards done when final, array)], loss)."""
    names = {id(p): n for n, p in model.namedparams()}
    params = list(model.params())
    counter = _Counter()
    reports = []
    readiness = buckets.GradReadiness(
        params, lambda i, a: reports.append(
            (names[id(params[i])], counter.done, a)))
    if use_zerograds:
        model.zerograds()
    else:
        model.cleargrads()
    loss = loss_fn()
    readiness.count_uses(loss)
    with counter, readiness:
        loss.backward()
    readiness.finish()
    return reports, counter.done


def test_last_layer_grads_are_final_long_before_backward_ends():
    model = _Deep()
    x = np.random.RandomState(1).normal(size=(3, 4)).astype(np.float32)
    reports, total = _run(model, lambda: model(x))
    when = {name: done for name, done, _ in reports}
    assert sorted(when) == sorted(n for n, _ in model.namedparams())
    # l3's backward is the second function to run (after sum and pow):
    # its W and b are final then, while l1's only at the very end.
    assert when['/l3/W'] <= 3 and when['/l3/b'] <= 3
    assert when['/l1/W'] == when['/l1/b'] == total
    assert when['/l3/W'] < when['/l2/W'] < when['/l1/W']
    # The arrays handed over are the very grads Chainer leaves.
    params = dict(model.namedparams())
    for name, _, array in reports:
        assert array is params[name].grad


class _Shared(chainer.Chain):
    """W used twice (two contributions summed), two params added directly
    (F.add hands both the same gradient array), a param never used and
    one that keeps a grad from before backward."""

    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(2)
        with self.init_scope():
            self.W = chainer.Parameter(rng.normal(size=(3, 3))
                                       .astype(np.float32))
            self.a = chainer.Parameter(rng.normal(size=(3,))
                                       .astype(np.float32))
            self.b = chainer.Parameter(rng.normal(size=(3,))
                                       .astype(np.float32))
            self.unused = chainer.Parameter(np.ones(2, np.float32))

    def forward(self, x):
        h = F.tanh(F.linear(F.tanh(F.linear(x, self.W)), self.W))
        return F.sum(h * F.broadcast_to(self.a + self.b, h.shape))


def test_shared_aliased_and_unused_params_get_chainers_values():
    model = _Shared()
    x = np.random.RandomState(3).normal(size=(4, 3)).astype(np.float32)
    for zerograds in (False, True):
        reports, _ = _run(model, lambda: model(x), use_zerograds=zerograds)
        got = {name: array for name, _, array in reports}
        params = dict(model.namedparams())
        for name, p in params.items():
            if p.grad is None:
                assert got[name] is None, name
            else:
                np.testing.assert_array_equal(got[name], p.grad,
                                              err_msg=name)
        assert (got['/unused'] is None) is (not zerograds)
        # a and b got one array from F.add's backward, which also flows
        # on to the broadcast's input: each is handed over as a copy.
        assert not np.shares_memory(got['/a'], got['/b'])


def test_grads_written_in_place_after_readiness_do_not_corrupt_backward():
    # The reducer averages a final grad in place while backward goes on;
    # doing that at once (here: scaling by 0) must not change any other
    # param's grad.
    model = _Shared()
    x = np.random.RandomState(4).normal(size=(4, 3)).astype(np.float32)
    model.cleargrads()
    model(x).backward()
    expected = {n: p.grad.copy() for n, p in model.namedparams()
                if p.grad is not None}
    params = list(model.params())
    model.cleargrads()
    loss = model(x)
    handed = {}

    def scale_now(i, array):
        if array is not None:
            handed[i] = array.copy()
            array *= 0
    readiness = buckets.GradReadiness(params, scale_now)
    readiness.count_uses(loss)
    with readiness:
        loss.backward()
    readiness.finish()
    names = [n for n, _ in model.namedparams()]
    by_name = dict(zip([id(p) for p in params], range(len(params))))
    for name, p in model.namedparams():
        if name in expected:
            np.testing.assert_array_equal(handed[by_name[id(p)]],
                                          expected[name], err_msg=name)
    assert len(names) == len(params)


def test_bucket_plan_reverse_creation_order_and_size():
    class P:
        def __init__(self, n):
            self.data = np.zeros(n, np.float32)
    params = [P(10), P(300), P(5), P(1000), P(2)]   # 40 1200 20 4000 8 B
    plan = buckets.BucketPlan(params, bucket_bytes=1300)
    # Reverse order; a param that would overflow the bucket starts the
    # next one, and a bucket takes at least one param (4000 B > 1300).
    assert plan.buckets == [[4], [3], [2, 1, 0]]
    assert [plan.bucket_of[i] for i in range(5)] == [2, 2, 2, 1, 0]
    one = buckets.BucketPlan(params, bucket_bytes=1 << 20)
    assert one.buckets == [[4, 3, 2, 1, 0]]
