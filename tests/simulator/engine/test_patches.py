"""simulator.engine.patches: a patch set is installed by its first holder
and undone by its last, whatever the nesting (in-process only: it is about
this process's own state)."""
from simulator.engine.patches import PatchSet


def test_installed_once_and_undone_by_the_last_holder():
    log = []

    def install():
        log.append('install')
        return [lambda: log.append('undo a'), lambda: log.append('undo b')]

    patches = PatchSet(install)
    assert not patches.active
    with patches.held():
        with patches.held():
            assert patches.active and log == ['install']
        assert patches.active and log == ['install']
    assert not patches.active
    assert log == ['install', 'undo b', 'undo a']


def test_undone_when_the_holder_raises():
    undone = []
    patches = PatchSet(lambda: [lambda: undone.append(True)])
    try:
        with patches.held():
            raise KeyError('boom')
    except KeyError:
        pass
    assert undone == [True] and not patches.active
