import numpy as np

from chainermn_lite import testing


def test_get_device_cpu():
    device = testing.get_device()
    assert device.xp is np
    assert str(device) == '@numpy'
