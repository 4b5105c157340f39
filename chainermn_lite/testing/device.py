"""get_device: the Chainer device a ChainerMN test runs on."""
import chainer

__all__ = ['get_device']


def get_device(device_id=None, use_chainerx=False):
    """get_device(device_id=None, use_chainerx=False): a chainer device.

    No id: the CPU (NumPy, or ChainerX native); an id: that GPU through
    CuPy (or ChainerX cuda).
    """
    if device_id is None:
        spec = 'native:0' if use_chainerx else '@numpy'
    elif use_chainerx:
        spec = 'cuda:{}'.format(device_id)
    else:
        spec = '@cupy:{}'.format(device_id)
    return chainer.get_device(spec)
