"""Fixtures for the simulator's tests."""
import warnings

import pytest

import simulator


@pytest.fixture
def warnings_of():
    """``warnings_of(body, category, size=2)``: the messages of the
    ``category`` warnings that ``simulator.run(body, size)`` gave (from
    any rank), all of them shown."""
    def run(body, category, size=2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            simulator.run(body, size)
        return [str(w.message) for w in caught
                if issubclass(w.category, category)]
    return run


@pytest.fixture
def error_class():
    """``error_class(fn, *args)``: the error class of the MPI.Exception
    (the simulator's or mpi4py's) that ``fn(*args)`` raises; an
    AssertionError if it raises none."""
    def classify(fn, *args):
        try:
            fn(*args)
        except Exception as error:
            if not hasattr(error, 'Get_error_class'):
                raise
            return error.Get_error_class()
        raise AssertionError('{} raised no MPI.Exception'.format(fn))
    return classify
