"""Is a model split across ranks the same model as the unsplit one?

``assert_model_parallel_equivalent`` trains both side by side for a few
steps from the same weights on the same batches and asserts, on every rank,
that the losses, every parameter's gradient and the parameters after each
optimizer step agree. It only uses the chainermn_lite communicator it is
given, so the same test runs on the simulator and under ``mpiexec``. The
unsplit model runs on every rank locally (CPU arithmetic is deterministic,
so every rank computes the same reference).

Parameters of the split model are mapped to the full model's by
``param_map(rank, path)`` -> ``full_path`` or ``(full_path, index)``, where
``index`` selects this rank's piece of a partitioned parameter (e.g.
``(slice(0, 50), slice(None))`` for a row block). The default drops the
all-digit components of a path, which is what ``MultiNodeChainList`` (a
ChainList) inserts: ``/0/l1/W`` on a rank maps to ``/l1/W``. Every
parameter of the full model must be covered by some rank.
"""
import chainer
import numpy

__all__ = ['assert_model_parallel_equivalent', 'default_param_map',
           'EquivalenceReport']


def default_param_map(rank, path):
    """``path`` without its all-digit components (ChainList indices)."""
    parts = [p for p in path.split('/') if p and not p.isdigit()]
    return '/' + '/'.join(parts)


class EquivalenceReport:
    """What was compared: per-step losses of both models on this rank."""

    def __init__(self):
        self.split_losses = []
        self.full_losses = []
        self.compared_params = 0

    def __repr__(self):
        return ('EquivalenceReport(steps={}, compared_params={}, '
                'full_losses={})'.format(len(self.full_losses),
                                         self.compared_params,
                                         self.full_losses))


def _resolve(mapped):
    if isinstance(mapped, tuple):
        path, index = mapped
        return path, index
    return mapped, Ellipsis


class _Pairing:
    """Split parameters of this rank with their full-model counterparts."""

    def __init__(self, split_model, full_model, rank, param_map):
        full = dict(full_model.namedparams())
        self.pairs = []
        for path, param in sorted(split_model.namedparams()):
            full_path, index = _resolve(param_map(rank, path))
            if full_path not in full:
                raise KeyError(
                    'equivalence: parameter {} of rank {} maps to {}, which '
                    'the full model lacks (it has {})'.format(
                        path, rank, full_path, sorted(full)))
            self.pairs.append((path, param, full_path, full[full_path],
                               index))
        self.full_names = set(full)

    def covered(self):
        return {full_path for _, _, full_path, _, _ in self.pairs}


def _needs_warm_up(model):
    return any(p.array is None for p in model.params())


def _close(a, b, rtol, atol):
    a = numpy.zeros_like(b) if a is None else a
    return a.shape == b.shape and numpy.allclose(a, b, rtol=rtol, atol=atol)


def _describe(a, b):
    if a is None:
        return 'None vs max|ref| {:.3g}'.format(float(numpy.abs(b).max()))
    if a.shape != b.shape:
        return 'shape {} vs {}'.format(a.shape, b.shape)
    diff = numpy.abs(a.astype(numpy.float64) - b)
    return 'max abs diff {:.3g} (max|ref| {:.3g})'.format(
        float(diff.max()) if diff.size else 0.0,
        float(numpy.abs(b).max()) if b.size else 0.0)


def _agree_or_raise(comm, problems, what):
    """Every rank raises the same AssertionError if any rank found one."""
    everyone = comm.allgather_obj(problems)
    lines = ['rank {}: {}'.format(r, p) for r, ps in enumerate(everyone)
             for p in ps]
    if lines:
        raise AssertionError('split model differs from the full model ({}):'
                             '\n  '.format(what) + '\n  '.join(lines[:40]))


def assert_model_parallel_equivalent(split_model, full_model, make_inputs,
                                     loss_fn, comm, steps=3, optimizer=None,
                                     param_map=None, output_ranks=(0,),
                                     n_model_args=1, rtol=1e-5, atol=1e-6):
    """Train ``split_model`` (this rank's part) and ``full_model`` side by
    side and assert they agree; returns an EquivalenceReport.

    ``make_inputs(step)`` gives a batch (tuple of arrays; rank 0's is
    broadcast). Both models are called with ``batch[:n_model_args]``; on
    the ``output_ranks`` the loss is ``loss_fn(y, *batch)``, elsewhere the
    split model's return value (a delegate variable) is back-propagated.
    ``optimizer`` is a factory (e.g. ``chainer.optimizers.Adam`` or a
    lambda), called once per model; the default is SGD(lr=0.1).
    """
    rank = comm.rank
    if isinstance(output_ranks, int):
        output_ranks = (output_ranks,)
    param_map = param_map or default_param_map
    make_optimizer = optimizer or (lambda: chainer.optimizers.SGD(lr=0.1))

    def batch_of(step):
        return comm.bcast_obj(make_inputs(step) if rank == 0 else None)

    first = batch_of(0)
    warm = comm.allgather_obj(_needs_warm_up(split_model) or
                              _needs_warm_up(full_model))
    if any(warm):
        # Lazily initialised links get their shapes from one forward pass;
        # without a graph no backward (and no gradient message) follows.
        with chainer.no_backprop_mode():
            split_model(*first[:n_model_args])
            full_model(*first[:n_model_args])
    comm.bcast_data(full_model)
    pairing = _Pairing(split_model, full_model, rank, param_map)
    for _, param, _, full_param, index in pairing.pairs:
        param.array[...] = full_param.array[index]
    missing = pairing.full_names - set().union(
        *comm.allgather_obj(pairing.covered()))
    if missing:
        raise AssertionError('equivalence: no rank holds parameters {} of '
                             'the full model; fix param_map'.format(
                                 sorted(missing)))

    split_opt = make_optimizer()
    split_opt.setup(split_model)
    full_opt = make_optimizer()
    full_opt.setup(full_model)
    report = EquivalenceReport()
    report.compared_params = len(pairing.pairs)
    for step in range(steps):
        batch = first if step == 0 else batch_of(step)
        args = batch[:n_model_args]
        split_model.cleargrads()
        full_model.cleargrads()
        y = split_model(*args)
        problems = []
        if rank in output_ranks:
            split_loss = loss_fn(y, *batch)
            split_loss.backward()
            report.split_losses.append(float(split_loss.array))
        else:
            y.backward()
        full_loss = loss_fn(full_model(*args), *batch)
        full_loss.backward()
        report.full_losses.append(float(full_loss.array))
        if rank in output_ranks and not numpy.allclose(
                report.split_losses[-1], report.full_losses[-1], rtol=rtol,
                atol=atol):
            problems.append('step {} loss {} vs full {}'.format(
                step, report.split_losses[-1], report.full_losses[-1]))
        for path, param, full_path, full_param, index in pairing.pairs:
            ref = full_param.grad
            ref = numpy.zeros_like(full_param.array) if ref is None else ref
            if not _close(param.grad, ref[index], rtol, atol):
                problems.append('step {} grad of {} (full {}): {}'.format(
                    step, path, full_path, _describe(param.grad, ref[index])))
        _agree_or_raise(comm, problems, 'gradients, step {}'.format(step))
        split_opt.update()
        full_opt.update()
        problems = []
        for path, param, full_path, full_param, index in pairing.pairs:
            if not _close(param.array, full_param.array[index], rtol, atol):
                problems.append('after step {} {} (full {}): {}'.format(
                    step, path, full_path,
                    _describe(param.array, full_param.array[index])))
        _agree_or_raise(comm, problems, 'parameters, step {}'.format(step))
    return report
