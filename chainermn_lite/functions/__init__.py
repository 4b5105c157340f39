"""Differentiable communication (Chainer FunctionNodes)."""
