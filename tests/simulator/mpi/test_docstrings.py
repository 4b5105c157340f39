"""simulator.mpi.docstrings: the API's docstrings have mpi4py's shape (a
signature line, a blank line, then a text that starts with a capital and
whose summary line and end are sentences; a property's first line names
it; a class's text sits on lines of its own). Both ways: mpi4py's own
docstrings are the model the simulator's must fit."""
import inspect

import pytest

# The Fortran handle conversions: mpi4py documents them with a signature
# only (its own test_doc skips them).
IGNORED = ('py2f', 'f2py')


def _routine(value):
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    # (a descriptor that hides a name, Intercomm's _Absent, is no routine)
    return value if inspect.isroutine(value) and callable(value) else None


def _text_problems(text):
    problems = []
    if not text.strip():
        return ['no text after the first line']
    text = text.strip()
    if not text[0].isupper():
        problems.append('starts with {!r}, not a capital'.format(text[0]))
    if not text.endswith('.'):
        problems.append('does not end with a full stop')
    if not text.partition('\n')[0].endswith('.'):
        problems.append('summary line does not end with a full stop')
    return problems


def _function_problems(name, doc):
    head, _, rest = doc.partition('\n')
    if not head.startswith(name + '('):
        return ['first line {!r} is not its signature'.format(head)]
    if not rest and name.startswith('_'):
        return []       # a private one may carry its signature only
    if not rest.startswith('\n'):
        return ['no blank line after the signature']
    return _text_problems(rest[1:])


def _property_problems(name, doc):
    head, _, rest = doc.partition('\n')
    # mpi4py's own: 'rank: int', or 'error_class(self) -> int'
    if head != name and not head.startswith((name + ':', name + '(')):
        return ['first line {!r} does not name it'.format(head)]
    if not rest.startswith('\n'):
        return ['no blank line after the name']
    return _text_problems(rest[1:])


def _class_problems(doc):
    if not (doc.startswith('\n') and doc.endswith('\n    ')):
        return ['text not on lines of its own: {!r}'.format(doc[:40])]
    return _text_problems(doc)


def _walk(MPI):
    """(qualified name, problems) for each documented object of the API
    that a reader of ``help(MPI)`` meets."""
    found = {}
    seen = set()

    def visit_class(qualname, cls):
        if qualname in found:
            return
        found[qualname] = _class_problems(cls.__doc__ or '')
        shown = set(dir(cls))       # help() lists what dir() does
        for klass in cls.__mro__:
            if klass.__module__ == 'builtins' or klass in seen:
                continue
            seen.add(klass)
            for name, value in vars(klass).items():
                if name not in shown:
                    continue
                routine = _routine(value)
                # Special methods written as the API's functions are
                # (not slot wrappers) count too.
                if name.startswith('__') and type(routine) is not type(
                        MPI.Init):
                    continue
                where = '{}.{}'.format(qualname, name)
                doc = getattr(routine or value, '__doc__', None)
                if name.startswith('_') and not doc or name in IGNORED:
                    continue        # private and undocumented: not shown
                if routine is not None:
                    # an alias (Intersect) shows the signature of its
                    # function (Intersection)
                    found[where] = (_function_problems(routine.__name__, doc)
                                    if doc else ['no docstring'])
                elif inspect.isdatadescriptor(value):
                    found[where] = (_property_problems(name, doc or '')
                                    if doc else ['no docstring'])
                elif isinstance(value, type):
                    visit_class(where, value)

    for name, value in vars(MPI).items():
        if name.startswith('__'):
            continue
        if isinstance(value, type):
            visit_class(name, value)
        elif _routine(value) is not None:
            doc = value.__doc__
            if name.startswith('_') and not doc:
                continue
            found[name] = (_function_problems(value.__name__, doc)
                           if doc else ['no docstring'])
    return found


@pytest.mark.mpi(sizes=(1,))
def test_every_docstring_has_mpi4pys_shape(mpi_comm, MPI):
    found = _walk(MPI)
    assert len(found) > 600, len(found)      # the walk reached the API
    bad = ['{}: {}'.format(name, '; '.join(problems))
           for name, problems in sorted(found.items()) if problems]
    assert not bad, '\n'.join(['{} of {} docstrings:'.format(
        len(bad), len(found))] + bad)
    assert not _text_problems(MPI.__doc__)


@pytest.mark.mpi(sizes=(1,))
def test_signature_line_names_handle_defaults(mpi_comm, MPI):
    head = MPI.Comm.Allreduce.__doc__.partition('\n')[0]
    assert head.startswith('Allreduce(self, sendbuf')
    assert 'op' in head and 'SUM' in head and ' at 0x' not in head
    assert MPI.Comm.Get_rank.__doc__.startswith('Get_rank(self)')
