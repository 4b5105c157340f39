"""Test helpers: ChainerMN's public names (``chainermn.testing``), the
split == unsplit model check, a message counter (``counting``), and the
model-parallel hints the simulator adds to its reports (loaded through
the ``simulator.explainers`` entry point, never imported here)."""
from chainermn_lite.testing.counting import counting
from chainermn_lite.testing.device import get_device
from chainermn_lite.testing.equivalence import (
    EquivalenceReport, assert_model_parallel_equivalent, default_param_map)

__all__ = ['counting', 'get_device', 'assert_model_parallel_equivalent',
           'default_param_map', 'EquivalenceReport']
