"""chainermn_lite._malloc: fresh arrays stop page-faulting once tuned.

Process-level behaviour, so each case runs in a subprocess of its own (one
process, no MPI: the tuning is the same under the simulator and mpiexec).
"""
import os
import subprocess
import sys
import textwrap

import pytest

from chainermn_lite import _malloc

_FAULTS_PER_ARRAY = textwrap.dedent("""
    import resource, sys
    import numpy
    from chainermn_lite import _malloc
    tuned = _malloc.tune_malloc() if sys.argv[1] == 'tune' else False
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    def step():
        # A backward step's worth of 512 KiB arrays (received activations,
        # gradients) and one 64 MiB array (a big received message), alive
        # together, then freed together.
        return [numpy.ones(131072, numpy.float32) for _ in range(8)] + \
            [numpy.ones(16 << 20, numpy.float32)]
    for _ in range(5):                       # let malloc settle
        step()
    before = faults()
    for _ in range(50):
        step()
    print(tuned, (faults() - before) / 400.0)
""")


def _faults_per_array(mode, **env):
    out = subprocess.run(
        [sys.executable, '-c', _FAULTS_PER_ARRAY, mode], check=True,
        capture_output=True, text=True, env=dict(os.environ, **env)).stdout
    tuned, faults = out.split()
    return tuned == 'True', float(faults)


def test_tuned_arrays_reuse_memory_instead_of_faulting():
    if _malloc._mallopt() is None:
        pytest.skip('not glibc: tune_malloc is a no-op')
    tuned, faults = _faults_per_array('tune')
    untuned, faults_default = _faults_per_array('plain')
    assert tuned and not untuned
    # 512 KiB is 128 pages: by default every array faults most of them in
    # (the 64 MiB one is faulted in whole, in huge or small pages).
    assert faults_default > 64
    assert faults < 8


def test_environment_turns_the_tuning_off():
    tuned, _ = _faults_per_array('tune', **{_malloc.MALLOC_TUNING_ENV: '0'})
    assert not tuned
