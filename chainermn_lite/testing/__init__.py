"""Test helpers with ChainerMN's public names (``chainermn.testing``)."""
from chainermn_lite.testing.device import get_device

__all__ = ['get_device']
