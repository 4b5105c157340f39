"""simulator.mpi.bufexport: Python classes exporting the buffer protocol
on CPython 3.11. In-process only: it tests the simulator's own machinery,
not the mpi4py API (test_memory and test_constants run that both ways)."""
import ctypes

import numpy as np
import pytest

from simulator.mpi.bufexport import (DelegatingExporter, delegate_buffer,
                                     export_nothing)


@delegate_buffer
class _Exporter(DelegatingExporter):
    __slots__ = ()


def test_delegating_exporter_forwards_its_view():
    exp = _Exporter()
    data = bytearray(b'abc')
    exp._view = memoryview(data)
    np.frombuffer(exp, np.uint8)[0] = ord('x')
    assert data == bytearray(b'xbc')
    exp._view = memoryview(b'ro')
    assert memoryview(exp).readonly
    with pytest.raises(TypeError):          # a writable view refused
        ctypes.c_char.from_buffer(exp)
    exp._view = memoryview(bytearray())     # replaced: old views live on
    assert memoryview(exp).nbytes == 0 and data == bytearray(b'xbc')


def test_export_nothing_and_pythonapi_left_alone():
    @export_nothing
    class Nothing:
        pass

    view = memoryview(Nothing())
    assert (view.nbytes, view.obj, view.readonly) == (0, None, False)
    # the process-wide ctypes.pythonapi entries keep their defaults
    assert ctypes.pythonapi.PyType_GetSlot.argtypes is None
    assert ctypes.pythonapi.PyBuffer_FillInfo.argtypes is None
