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


def test_every_module_class_is_a_module_type():
    # module_class names a class 'module'; put over anything else (a
    # function slipped in between it and its class) it hides the slip.
    import types

    import simulator.engine.process  # noqa: F401 (registers its classes)
    import simulator.engine.shared_state  # noqa: F401
    from simulator.engine.patches import MODULE_CLASSES
    assert MODULE_CLASSES
    for cls in MODULE_CLASSES:
        assert isinstance(cls, type) and issubclass(cls, types.ModuleType), \
            cls
