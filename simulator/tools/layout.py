"""The same address-space layout in every run: what ``python -m
simulator`` does in virtual time unless ``--no-fixed-layout``.

The CPU time of the same Python code moves with where the kernel places
the interpreter, the libraries and their buffers, which address-space
randomisation changes from process to process; virtual time charges that
CPU time, so its predictions move with it (see the README, "Virtual
time").
"""
import ctypes
import os
import sys

__all__ = ['fixed_layout']

# personality(2): map libraries, heap and stacks where they were last time.
_ADDR_NO_RANDOMIZE = 0x0040000
_QUERY = 0xffffffff
# Set across the re-execution only: a kernel that keeps randomising must
# not make the process execute itself forever.
_REEXECUTED = 'SIMULATOR_FIXED_LAYOUT_REEXECUTED'
# 0: the kernel randomises no process (a re-execution would change nothing).
_RANDOMISE = '/proc/sys/kernel/randomize_va_space'


def fixed_layout():
    """Make this process's address-space layout the same in every run:
    if it is randomised, execute the process's own command line again
    with randomisation off (what ``setarch -R`` does; the call then does
    not return). True when the layout is fixed, False where it cannot be
    (not Linux, or the kernel refuses).

    Why: the CPU time of the same Python code moves with where the
    kernel places the interpreter, the libraries and their buffers: one
    Chainer training step, its median over 3 s of repetitions on one
    core, took 26.1 to 35.5 ms in six processes, and 25.7 to 26.1 ms in
    five with the layout fixed (2026-11-26, load 2-3).
    """
    again = os.environ.pop(_REEXECUTED, None) is not None
    try:
        personality = ctypes.CDLL(None, use_errno=True).personality
    except (OSError, AttributeError):
        return False
    persona = personality(_QUERY)
    if persona == -1:
        return False
    if persona & _ADDR_NO_RANDOMIZE or not _kernel_randomises():
        return True
    if again or personality(persona | _ADDR_NO_RANDOMIZE) == -1:
        return False
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.environ[_REEXECUTED] = '1'
    try:
        os.execv(sys.executable, sys.orig_argv)
    except OSError:
        # The interpreter cannot be executed again (gone, or a sandbox):
        # run on, randomised, as where the kernel refuses; the programs
        # this one starts get the layout they would have had.
        del os.environ[_REEXECUTED]
        personality(persona)
        return False


def _kernel_randomises():
    try:
        with open(_RANDOMISE) as f:
            return f.read().strip() != '0'
    except OSError:
        return True
