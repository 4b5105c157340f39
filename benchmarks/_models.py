"""Benchmark models: ResNet-50's 161 parameter shapes, the MNIST MLP.

``resnet50_shapes()`` lists the standard ResNet-50 parameter shapes (conv
weights without bias, BatchNorm gamma/beta, fc W/b): 161 arrays, 25.56 M
values. ``ShapesLink(shapes)`` is a Chainer link holding one parameter per
shape, enough for communicator benchmarks (no forward pass).
"""
import chainer
import numpy as np

__all__ = ['resnet50_shapes', 'mlp_shapes', 'ShapesLink', 'resnet50_link',
           'mlp_link']


def resnet50_shapes():
    """The 161 parameter shapes of ResNet-50 (torchvision layout)."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    in_ch = 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        out_ch = width * 4
        for block in range(blocks):
            shapes += [(width, in_ch, 1, 1), (width,), (width,),
                       (width, width, 3, 3), (width,), (width,),
                       (out_ch, width, 1, 1), (out_ch,), (out_ch,)]
            if block == 0:
                shapes += [(out_ch, in_ch, 1, 1), (out_ch,), (out_ch,)]
            in_ch = out_ch
    shapes += [(1000, 2048), (1000,)]
    return shapes


def mlp_shapes(n_in=784, n_units=1000, n_out=10):
    """Shapes of the MNIST MLP 784-1000-1000-10 (W, b per layer)."""
    return [(n_units, n_in), (n_units,), (n_units, n_units), (n_units,),
            (n_out, n_units), (n_out,)]


class ShapesLink(chainer.Link):
    """A link with one float parameter (and grad) per given shape."""

    def __init__(self, shapes, dtype=np.float32, seed=0):
        super().__init__()
        rs = np.random.RandomState(seed)
        with self.init_scope():
            for i, shape in enumerate(shapes):
                data = rs.standard_normal(shape).astype(dtype)
                setattr(self, 'p{:03d}'.format(i), chainer.Parameter(data))
        for p in self.params():
            p.grad = rs.standard_normal(p.shape).astype(dtype)


def resnet50_link(dtype=np.float32, seed=0):
    """ShapesLink with ResNet-50's parameters (161 arrays, 25.6 M)."""
    return ShapesLink(resnet50_shapes(), dtype, seed)


def mlp_link(dtype=np.float32, seed=0):
    """ShapesLink with the MNIST MLP's parameters."""
    return ShapesLink(mlp_shapes(), dtype, seed)
