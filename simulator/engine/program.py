"""What a rank runs: a Python program given as a script, a module or code.

``python -m simulator`` runs one program on every rank of the first job;
a Spawn runs one per spawned application. Both load it here
(:func:`load_code`, :func:`python_program`) and run it here
(:func:`execute`): each rank in a fresh ``__main__`` namespace, as a
process runs its program.

The simulator runs ranks as threads of this interpreter, so it can only
spawn programs this interpreter can run: a command that is a Python
interpreter (any ``python``, ``python3``, ``python3.11``..., run by this
one) or a script whose ``#!`` line names one. Any other executable cannot
become a rank (:class:`ForeignCommand`).
"""
import builtins
import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import re
import shutil
import sys
import zipfile

from simulator.engine.actors import current
from simulator.engine.modules import runs_per_rank

__all__ = ['Program', 'ForeignCommand', 'NoMainModule', 'load_code',
           'python_program', 'check_command', 'spawned_program', 'execute']

_PYTHON = re.compile(r'python[0-9.]*[a-z]?(\.exe)?')
# Interpreter options that take a value as the next word.
_WITH_VALUE = ('-W', '-X')
# Options that set sys.flags: their letters, and -X's names.
_LETTER_FLAGS = {'d': 'debug', 'O': 'optimize', 'B': 'dont_write_bytecode',
                 's': 'no_user_site', 'S': 'no_site',
                 'E': 'ignore_environment', 'I': 'isolated',
                 'b': 'bytes_warning', 'q': 'quiet', 'v': 'verbose',
                 'P': 'safe_path', 'i': 'inspect'}
_X_FLAGS = {'dev': 'dev_mode', 'utf8': 'utf8_mode'}


class ForeignCommand(Exception):
    """A command that exists but is not a Python program: the simulator
    cannot run it as a rank."""


class Program:
    """A loaded program: ``code``, the initial globals ``base``, its
    ``argv`` (``sys.argv`` of the process) and ``path`` (what Python puts
    first on ``sys.path`` for it: the script's folder, or '' for ``-c``
    and ``-m``, the working directory)."""

    __slots__ = ('code', 'base', 'argv', 'path', 'options')

    def __init__(self, code, base, argv, path, options=()):
        self.code, self.base, self.argv, self.path = code, base, argv, path
        # the interpreter options before the program (python -O ...)
        self.options = list(options)

    def unapplied_options(self):
        """The interpreter options that would set ``sys.flags`` other than
        this interpreter's (``['-O (sys.flags.optimize 1, here 0)']``):
        rank threads share one interpreter, so they are not applied."""
        wanted = {}
        words = iter(self.options)
        for word in words:
            if word in ('-X', '-W'):
                word += next(words, '')
            if word.startswith('-X'):
                name = _X_FLAGS.get(word[2:].partition('=')[0])
                if name:
                    wanted[name] = (word, 1)
                continue
            if word.startswith('-W'):
                continue
            for letter in word[1:]:
                name = _LETTER_FLAGS.get(letter)
                if name:
                    count = wanted.get(name, ('', 0))[1] + 1
                    wanted[name] = ('-' + letter * count, count)
        said = []
        for name, (word, value) in wanted.items():
            here = getattr(sys.flags, name, None)
            if here is not None and int(here) < value:
                said.append('{} (sys.flags.{} {}, here {})'.format(
                    word, name, value, int(here)))
        return said


def load_code(target, module):
    """(code object, initial globals) for a script path or module name."""
    if module:
        before = set(sys.modules)
        try:
            spec = importlib.util.find_spec(target)
            if spec is None:
                raise SystemExit('simulator: no module named {!r}'.format(
                    target))
            if spec.submodule_search_locations is not None:
                target += '.__main__'
                spec = importlib.util.find_spec(target)
        finally:
            # Finding it imported its packages: each rank imports its own
            # (execute), as each process does before it runs the module.
            # Libraries they imported stay, shared as every library.
            for name in set(sys.modules) - before:
                if runs_per_rank(name, getattr(sys.modules[name],
                                               '__file__', None)):
                    del sys.modules[name]
        code = spec.loader.get_code(target)
        base = {'__package__': target.rpartition('.')[0],
                '__loader__': spec.loader, '__spec__': spec,
                '__file__': spec.origin, '__cached__': spec.cached}
        return code, base
    path = os.path.abspath(target)
    if os.path.isdir(path) or zipfile.is_zipfile(path):
        return _main_module_of(path)
    with open(path, 'rb') as f:
        source = f.read()
    code = compile(source, path, 'exec')
    return code, {'__package__': None,
                  '__loader__': importlib.machinery.SourceFileLoader(
                      '__main__', path),
                  '__spec__': None, '__file__': path, '__cached__': None}


class NoMainModule(Exception):
    """A directory or zip file given as the script holds no
    ``__main__`` module (python's words: "can't find '__main__' module in
    PATH")."""


def _main_module_of(path):
    """(code, globals) of the ``__main__`` module python runs for a
    directory or zip file given as the script (a zipapp): found by the
    path's own importer, ``sys.path[0]`` the path itself (the directory
    of the module's ``__file__``)."""
    importer = pkgutil.get_importer(path)
    spec = importer.find_spec('__main__') if importer is not None else None
    if spec is None or spec.loader is None:
        raise NoMainModule("can't find '__main__' module in {!r}".format(
            path))
    return spec.loader.get_code('__main__'), {
        '__package__': '', '__loader__': spec.loader, '__spec__': spec,
        '__file__': spec.origin, '__cached__': spec.cached}


def command_code(text):
    """(code object, initial globals) for ``python -c text``."""
    return compile(text, '<string>', 'exec'), {
        '__package__': None,
        '__loader__': importlib.machinery.BuiltinImporter, '__spec__': None}


def python_program(args):
    """The program ``python ARGS...`` runs: a script, ``-m module`` or
    ``-c code``, after the interpreter's own options (which this
    interpreter's settings replace). Raises ValueError for what cannot
    run as a rank (no program: an interactive interpreter; ``-``:
    standard input)."""
    args = [os.fspath(a) for a in args]
    i = 0
    while i < len(args):
        word = args[i]
        if word in ('-c', '-m'):
            if i + 1 == len(args):
                raise ValueError('python {}: argument expected'.format(word))
            rest = args[i + 2:]
            if word == '-c':
                code, base = command_code(args[i + 1])
                return Program(code, base, ['-c'] + rest, '', args[:i])
            try:
                code, base = load_code(args[i + 1], True)
            except SystemExit as missing:
                raise ValueError(str(missing)) from None
            return Program(code, base, [base['__file__']] + rest, '',
                           args[:i])
        if word == '-':
            raise ValueError('python -: a spawned rank has no standard input '
                             'to read its program from')
        if word.startswith(_WITH_VALUE):
            i += 1 if len(word) > 2 else 2
            continue
        if word.startswith('-') and len(word) > 1:
            i += 1      # -u, -B, -E, -I, -O...: this interpreter's apply
            continue
        try:
            code, base = load_code(word, False)
        except NoMainModule as missing:
            raise ValueError('python: {}'.format(missing)) from None
        return Program(code, base, args[i:],
                       os.path.dirname(base['__file__']), args[:i])
    raise ValueError('python without a script, -m or -c would be an '
                     'interactive interpreter')


def _is_python(path):
    if os.path.realpath(path) == os.path.realpath(sys.executable):
        return True
    return _PYTHON.fullmatch(os.path.basename(path)) is not None


def _shebang(path):
    """The words of ``path``'s ``#!`` line, or None."""
    try:
        with open(path, 'rb') as f:
            first = f.readline(4096)
    except OSError:
        return None
    if not first.startswith(b'#!'):
        return None
    return first[2:].decode('utf-8', 'replace').split()


def check_command(command):
    """How ``command`` (a path, or a name looked up on the calling rank's
    ``PATH``) runs a program: the interpreter words to put before its
    arguments (``[]``: it is a Python interpreter; ``[..., SCRIPT]``: a
    script run by the Python its ``#!`` line names). Raises
    FileNotFoundError when it names no executable file and
    :class:`ForeignCommand` when it is neither."""
    command = os.fspath(command)
    found = command if os.sep in command else shutil.which(command)
    if found is None or not os.path.isfile(found) or \
            not os.access(found, os.X_OK):
        raise FileNotFoundError('no executable {!r} (as mpiexec would '
                                'look for it)'.format(command))
    if _is_python(found):
        return []
    words = _shebang(found)
    if words and words[0].endswith('/env') and len(words) > 1:
        words = words[1:]
    if words and _is_python(words[0]):
        return words[1:] + [found]
    raise ForeignCommand(
        '{!r} is not a Python interpreter or a Python script: the '
        'simulator runs spawned ranks as threads of its own interpreter, '
        'so it cannot run other executables'.format(command))


def spawned_program(command, args):
    """The Program that ``command`` with ``args`` runs when spawned
    (raises as :func:`check_command` and :func:`python_program`)."""
    words = check_command(command)
    program = python_program(words + [os.fspath(a) for a in args])
    if words:
        # A script run by its #! line: argv[0] is the command as given.
        program.argv[0] = os.fspath(command)
    return program


_BEFORE_BUILTINS = ('__package__', '__loader__', '__spec__')


def execute(program):
    """Run ``program`` (a Program, or (code, base)) in the calling rank, in
    a fresh ``__main__`` namespace (what pickle finds ``__main__``'s
    classes in: the rank's ``main_namespace``)."""
    code, base = (program.code, program.base) \
        if isinstance(program, Program) else program
    # In the order, and with the names, python's own __main__ has them.
    namespace = {'__name__': '__main__', '__doc__': None}
    namespace.update((k, base[k]) for k in _BEFORE_BUILTINS if k in base)
    namespace.update(__annotations__={}, __builtins__=builtins)
    namespace.update(base)
    current().main_namespace = namespace
    if namespace.get('__spec__') is not None and namespace['__package__']:
        # python -m imports the module's package first (runpy).
        importlib.import_module(namespace['__package__'])
    exec(code, namespace)
