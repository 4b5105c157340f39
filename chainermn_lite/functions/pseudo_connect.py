"""pseudo_connect: join a delegate variable to the variables that follow.

Two spellings must work. The seed guide writes ``psi = pseudo_connect(phi1,
phi2)`` and uses ``psi`` as a Variable; ChainerMN 7.8.1 returns a tuple and
unpacks it, ``x, = pseudo_connect(phi, x)``. With one actual variable the
result is therefore a Variable that also unpacks as a 1-tuple (iterating it
yields itself once); with several it is a tuple of Variables.
"""
import chainer
from chainer import backend

from chainermn_lite.functions import _wire

__all__ = ['PseudoConnect', 'pseudo_connect', 'ConnectedVariable']


class ConnectedVariable(chainer.Variable):
    """A Variable that unpacks as ``(self,)``: ``x, = pseudo_connect(d, x)``.

    Only iteration differs from a Variable (``len`` and indexing still see
    the rows of the array); iterate ``psi.array`` to walk the rows.
    """

    def __iter__(self):
        yield self


class PseudoConnect(chainer.FunctionNode):
    """Forward: the actual inputs unchanged; backward: also the delegate."""

    def forward(self, inputs):
        delegate = inputs[0]
        self._delegate_spec = (delegate.shape, delegate.dtype)
        self._actual_specs = [(x.shape, x.dtype) for x in inputs[1:]]
        self._xp = backend.get_array_module(delegate)
        return inputs[1:]

    def backward(self, indexes, grad_outputs):
        out = []
        for i in indexes:
            if i == 0:
                # A non-None zero gradient keeps Chainer walking into the
                # delegate's creator (e.g. a send whose backward must run).
                shape, dtype = self._delegate_spec
                out.append(_wire.zeros_grad(shape, dtype, self._xp))
            elif grad_outputs[i - 1] is None:
                # ``psi.backward()`` on a delegate gives no gradient; zeros
                # still carry backward on to the actual variable's creator
                # (typically another send).
                shape, dtype = self._actual_specs[i - 1]
                out.append(_wire.zeros_grad(shape, dtype, self._xp))
            else:
                out.append(grad_outputs[i - 1])
        return tuple(out)


def pseudo_connect(delegate_variable, *actual_variables):
    """pseudo_connect(delegate_variable, *actual_variables): the actual
    variables, connected to ``delegate_variable`` for backward.

    The result has the values of ``actual_variables``; back-propagating
    through it also back-propagates ``delegate_variable`` (e.g. the return
    value of ``send``), after everything that depends on the result. One
    actual variable gives a Variable (that also unpacks as a 1-tuple),
    several give a tuple. ``delegate_variable`` may be None.
    """
    if not actual_variables:
        raise TypeError('pseudo_connect: give at least one actual variable '
                        'after the delegate variable')
    if isinstance(delegate_variable, (tuple, list)):
        raise TypeError('pseudo_connect: delegate_variable must be one '
                        'Variable, got a {} of {}'.format(
                            type(delegate_variable).__name__,
                            len(delegate_variable)))
    if delegate_variable is None:
        xp = backend.get_array_module(*actual_variables)
        delegate_variable = _wire.empty_delegate(xp)
    ys = PseudoConnect().apply((delegate_variable,) + actual_variables)
    if len(ys) == 1:
        y = ys[0]
        y.__class__ = ConnectedVariable
        return y
    return ys
