"""The package tree is the architecture: layers import only downwards and
no module imports itself back through others.

Layers of the simulator, lowest first: ``errors``; ``engine``; ``mpi``
(the mpi4py facade) and ``nccl`` side by side; ``tools``; ``fuzz``. The
package's ``__init__``/``__main__`` sit on top. chainermn_lite and the
simulator never import each other: the library talks to the mpi4py API,
the simulator implements it.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# layer -> layers it may import (itself included)
ALLOWED = {
    'errors': {'errors'},
    'engine': {'errors', 'engine'},
    'mpi': {'errors', 'engine', 'mpi'},
    'nccl': {'errors', 'engine', 'nccl'},
    'tools': {'errors', 'engine', 'mpi', 'nccl', 'tools'},
    'fuzz': {'errors', 'engine', 'mpi', 'tools', 'fuzz'},
}


def _modules(package):
    """{module name: path} of every module under ``package``."""
    found = {}
    for folder, _, files in os.walk(os.path.join(ROOT, package)):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if rel[-1] == '__init__':
                rel = rel[:-1]
            found['.'.join(rel)] = path
    return found


def _imports(path, module, known):
    """Modules of ``known`` that ``module`` imports, at any depth of its
    code (imports inside functions count)."""
    tree = ast.parse(open(path).read(), path)
    is_package = path.endswith('__init__.py')
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = module.split('.')
                parts = parts[:len(parts) - node.level + is_package]
                base = '.'.join(parts + ([base] if base else []))
            # ``from pkg import sub`` imports the module pkg.sub;
            # ``from pkg import name`` takes a name from pkg's __init__.
            names = [base + '.' + alias.name
                     if base + '.' + alias.name in known else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            # The longest known module the name starts with.
            while name and name not in known:
                name = name.rpartition('.')[0]
            if name and name != module:
                out.add(name)
    return out


def _graph(package):
    known = _modules(package)
    return {m: _imports(p, m, known) for m, p in known.items()}


def _layer(module):
    parts = module.split('.')
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = 'open'
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # Importing a submodule runs its package's __init__ first, but
            # that edge is implied, not written: only written edges count.
            if state.get(nxt) == 'open':
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 'done'
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize('package', ['simulator', 'chainermn_lite'])
def test_no_import_cycles(package):
    cycle = _cycle(_graph(package))
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_simulator_layers_import_only_downwards():
    wrong = []
    for module, imported in sorted(_graph('simulator').items()):
        layer = _layer(module)
        if layer is None:
            continue            # simulator/__init__, __main__: the top
        for other in sorted(imported):
            if _layer(other) not in ALLOWED[layer]:
                wrong.append('{} ({}) imports {}'.format(module, layer,
                                                         other))
    assert not wrong, '\n'.join(wrong)


@pytest.mark.parametrize('package,other', [('simulator', 'chainermn_lite'),
                                           ('chainermn_lite', 'simulator')])
def test_library_and_simulator_never_import_each_other(package, other):
    known = dict(_modules(package), **_modules(other))
    wrong = ['{} imports {}'.format(m, i)
             for m, p in sorted(_modules(package).items())
             for i in sorted(_imports(p, m, known))
             if i.split('.')[0] == other]
    assert not wrong, '\n'.join(wrong)


def test_the_checker_sees_function_level_imports(tmp_path):
    path = tmp_path / 'mod.py'
    path.write_text('def f():\n    from simulator.engine import world\n')
    found = _imports(str(path), 'simulator.mpi.mod',
                     {'simulator.engine.world', 'simulator.engine'})
    assert found == {'simulator.engine.world'}
    assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == \
        ['a', 'b', 'c', 'a']
    assert _cycle({'a': {'b'}, 'b': set()}) is None
