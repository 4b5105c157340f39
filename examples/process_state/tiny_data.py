"""The sibling module of train_chainermn_style.py: a toy data set and
module-level state (how often this process built it)."""
import numpy as np

__all__ = ['make', 'loads']

loads = 0


def make(n=96, dim=8, seed=0):
    """Two Gaussian blobs as a list of (x, label); counts the call."""
    global loads
    loads += 1
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=n).astype(np.int32)
    x = (rng.normal(size=(n, dim)) + labels[:, None]).astype(np.float32)
    return list(zip(x, labels))
