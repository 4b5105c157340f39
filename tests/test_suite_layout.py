"""The test tree itself: every test module's file name is unique.

pytest's default import mode imports test modules by their base name (the
folders have no ``__init__.py``), so two ``test_x.py`` in different folders
collide. Under xdist each worker may import only one of them and the run
passes; the real-MPI part of CI runs without xdist and fails at collection.
"""
import collections
import os

ROOT = os.path.dirname(os.path.abspath(__file__))


def test_test_module_names_are_unique():
    where = collections.defaultdict(list)
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.startswith('test_') and name.endswith('.py'):
                where[name].append(os.path.relpath(folder, ROOT))
    clashes = {name: dirs for name, dirs in where.items() if len(dirs) > 1}
    assert not clashes, 'test modules sharing a file name: {}'.format(clashes)
