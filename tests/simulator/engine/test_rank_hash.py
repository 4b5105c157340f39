"""hash() of strings per rank, as each process's own hash secret gives
(the whole-program comparison with mpiexec, with and without
PYTHONHASHSEED, is tests/simulator/tools' hash_probe.py)."""
import dataclasses
import os
import pathlib

import pytest

# Outside any world: the interpreter's own secret.
_PATH_HASH = pathlib.PurePath('data/train').__hash__()


class _Key(str):
    def __hash__(self):
        return 11


@pytest.mark.mpi(sizes=(1, 3))
def test_a_hash_the_program_defines_is_the_same_everywhere(mpi_comm):
    assert mpi_comm.allgather((hash(_Key('a')), hash((_Key('b'), 4)))) == \
        [(11, hash((11, 4)))] * mpi_comm.size


@pytest.mark.mpi(sizes=(1, 3))
def test_equal_objects_hash_equal_within_a_rank(mpi_comm):
    assert hash(('a', 1)) == hash(('a', 1.0))
    assert hash(b'ab') == hash(memoryview(b'ab'))
    assert hash(frozenset({'x', 'y'})) == hash(frozenset({'y', 'x'}))
    assert {pathlib.PurePath('a'): 1}[pathlib.PurePath('a')] == 1


@pytest.mark.simulator_only('compares with the interpreter secret, which '
                            'only one process has')
@pytest.mark.mpi(sizes=(2,))
def test_libraries_hash_with_the_process_secret(mpi_comm):
    # A library's own hash() (pathlib's, inside __hash__) is the
    # process's: caches libraries share between ranks keep working.
    assert pathlib.PurePath('data/train').__hash__() == _PATH_HASH
    if os.environ.get('PYTHONHASHSEED', 'random') == 'random':
        assert hash(pathlib.PurePath('data/train')) != _PATH_HASH


@dataclasses.dataclass(frozen=True)
class _Point:
    name: str


class _Named:
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return self.name == other.name

    def __hash__(self):
        return hash(self.name)


# Built at import, outside any rank (as a test module or a library
# builds its tables): the keys' own __hash__ must find them in a rank.
_TABLE = {_Point('a'): 1, _Named('b'): 2}


@pytest.mark.mpi(sizes=(1, 2))
def test_keys_hashed_by_their_own_hash_method_are_found_in_a_rank(mpi_comm):
    assert _TABLE[_Point('a')] == 1 and _TABLE[_Named('b')] == 2
