"""Docstrings in mpi4py's shape, made from the simulator's own texts.

mpi4py's compiled API carries its signature in each docstring: a
function's or method's reads ``'Get_rank(self) -> int'``, a blank line,
then the text; a property's ``'rank: int'``, a blank line, the text; a
class's is the text indented on lines of its own (``'\\n    Text.\\n
'``). Tools and tests that read them (``help()``, documentation
builders, mpi4py's ``test_doc``) drop the first line of a function's
docstring, so a one-line text without the signature before it reads as
empty.

:func:`shape` gives the public API that shape once, at import: the
signature line is built from :func:`inspect.signature` (annotations
where the code has them; a default that is one of the module's named
handles, such as ``SUM``, shows by name rather than as an address), and
the text is the docstring written in the code, unchanged. Writing the
text stays with the code; only the shape is made here.
"""
import inspect
import textwrap

from simulator.mpi.naming import is_ours

__all__ = ['shape']

# Functions already given their signature line: one function object may
# sit under several names (``py2f = toint``), and must get it once.
_shaped = set()


class _Named:
    """A default value shown by its name in a signature (``op=SUM``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def _signature_line(name, function, named):
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):     # no introspectable signature
        return '{}(...)'.format(name)
    parameters = []
    for parameter in signature.parameters.values():
        default = parameter.default
        if default is not parameter.empty and id(default) in named:
            parameter = parameter.replace(default=_Named(named[id(default)]))
        parameters.append(parameter)
    return name + str(signature.replace(parameters=parameters))


def _text(doc):
    """``doc`` dedented, its first paragraph (the summary) on one line, as
    mpi4py's summaries are: readers take the first line for it."""
    summary, blank, rest = inspect.cleandoc(doc).partition('\n\n')
    summary = ' '.join(line.strip() for line in summary.splitlines())
    return summary + blank + rest


def _shape_function(function, named):
    if function in _shaped or not function.__doc__ or not is_ours(function):
        return
    _shaped.add(function)
    function.__doc__ = '{}\n\n{}'.format(
        _signature_line(function.__name__, function, named),
        _text(function.__doc__))


def _shape_property(name, prop):
    if prop in _shaped or not prop.__doc__ or prop.fget is None or \
            not is_ours(prop.fget):
        return
    _shaped.add(prop)
    returns = inspect.signature(prop.fget).return_annotation
    head = name if returns is inspect.Signature.empty else '{}: {}'.format(
        name, inspect.formatannotation(returns))
    prop.__doc__ = '{}\n\n{}'.format(head, _text(prop.__doc__))


def _shape_class(cls, named):
    if cls in _shaped or not is_ours(cls):
        return
    _shaped.add(cls)
    for base in cls.__mro__[1:]:        # the methods it inherits too
        _shape_class(base, named)
    if cls.__doc__:
        cls.__doc__ = '\n{}\n    '.format(textwrap.indent(
            _text(cls.__doc__), '    '))
    for name, value in vars(cls).items():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value):
            _shape_function(value, named)
        elif type(value) is property:
            _shape_property(name, value)
        elif isinstance(value, type):
            _shape_class(value, named)


def shape(namespace):
    """Give the classes and functions of ``namespace`` (a module's public
    names and their values), their methods and properties, docstrings in
    mpi4py's shape."""
    # Handles (not ints or strings, whose values many names share) that a
    # signature may show by name.
    named = {id(value): name for name, value in namespace.items()
             if not name.startswith('_') and not isinstance(
                 value, (int, float, str, bytes, type, type(None)))
             and not inspect.isroutine(value)}
    for value in namespace.values():
        if isinstance(value, type):
            _shape_class(value, named)
        elif inspect.isfunction(value):
            _shape_function(value, named)
