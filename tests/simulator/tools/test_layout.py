"""simulator.tools.layout: ``--fixed-layout`` runs the program with
address-space randomisation off (a subprocess: it re-executes itself)."""
import ctypes
import os
import subprocess
import sys

import pytest

_PERSONALITY = (
    'import ctypes, os\n'
    'persona = ctypes.CDLL(None).personality(0xffffffff)\n'
    'print("FIXED", bool(persona & 0x0040000),\n'
    '      "SIMULATOR_FIXED_LAYOUT_REEXECUTED" in os.environ)\n')


@pytest.mark.skipif(not sys.platform.startswith('linux'),
                    reason='address-space randomisation is set on Linux')
def test_fixed_layout_runs_the_program_without_address_randomisation(
        tmp_path):
    (tmp_path / 'prog.py').write_text(_PERSONALITY)
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=root)

    def run(*options):
        done = subprocess.run(
            [sys.executable, '-m', 'simulator', '-n', '1'] + list(options) +
            ['prog.py'], cwd=str(tmp_path), env=env, capture_output=True,
            text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.splitlines() if 'FIXED' in line]
    # fixed, and the marker of the re-execution is not the program's
    assert run('--fixed-layout') == ['[0] FIXED True False']
    if not ctypes.CDLL(None).personality(0xffffffff) & 0x0040000:
        assert run('--virtual-time') == ['[0] FIXED False False']
