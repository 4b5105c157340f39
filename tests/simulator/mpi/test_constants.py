"""simulator.mpi.constants: BOTTOM, IN_PLACE and BUFFER_AUTOMATIC as
mpi4py 4 gives them over Open MPI 5: named addresses (0, 1, 0) that export
zero bytes owned by nothing, compare and hash as their int, pickle by
name, and are no ints (no arithmetic). Both ways."""
import operator
import pickle

import numpy as np
import pytest

SIZES = (1, 2)
NAMES = ('BOTTOM', 'IN_PLACE', 'BUFFER_AUTOMATIC')


@pytest.mark.mpi(sizes=SIZES)
@pytest.mark.parametrize('name', NAMES)
def test_address_constants(mpi_comm, MPI, name):
    constant = getattr(MPI, name)
    value = {'IN_PLACE': 1}.get(name, 0)
    assert int(constant) == value and MPI.Get_address(constant) == value
    assert constant == value and value == constant and constant != None  # noqa: E711
    assert constant != 0.5 and hash(constant) == hash(value)
    assert bool(constant) == bool(value)
    assert type(constant)() == constant and repr(constant) == name
    view = memoryview(constant)
    assert (view.nbytes, view.obj, view.readonly) == (0, None, False)
    with pytest.raises(TypeError):
        constant + 1
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(constant, protocol))
        assert type(again) is type(constant) and again == constant
    assert isinstance(constant, int) is False


@pytest.mark.mpi(sizes=SIZES)
def test_bottom_is_an_index_and_in_place_still_works(mpi_comm, MPI):
    assert operator.index(MPI.BOTTOM) == 0
    with pytest.raises(TypeError):
        operator.index(MPI.IN_PLACE)
    data = np.full(3, mpi_comm.rank + 1.0)
    mpi_comm.Allreduce(MPI.IN_PLACE, data, op=MPI.SUM)
    size = mpi_comm.size
    assert data.tolist() == [size * (size + 1) / 2] * 3
