"""Argument checks shared by the public entry points: a wrong object
passed where a communicator or an optimizer belongs fails at the call that
received it, naming the call and the value, not later inside a step."""

__all__ = ['check_communicator', 'check_optimizer']

# What every communicator has, and all these entry points read (checked
# by name, so that a user's own communicator class or a stand-in passes).
_COMMUNICATOR_NAMES = ('rank', 'size')


def check_communicator(communicator, caller):
    """Raise TypeError unless ``communicator`` looks like a communicator
    from ``chainermn_lite.create_communicator``."""
    missing = [name for name in _COMMUNICATOR_NAMES
               if not hasattr(communicator, name)]
    if missing:
        raise TypeError(
            '{}: expected a communicator from '
            'chainermn_lite.create_communicator, got {!r} (it has no {})'
            .format(caller, communicator, ', '.join(missing)))


def check_optimizer(optimizer, caller):
    """Raise TypeError unless ``optimizer`` looks like a Chainer
    optimizer (``setup`` and ``update``)."""
    if not (hasattr(optimizer, 'setup') and hasattr(optimizer, 'update')):
        raise TypeError('{}: expected a Chainer optimizer (with setup and '
                        'update), got {!r}'.format(caller, optimizer))
