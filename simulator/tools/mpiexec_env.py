"""The environment this project starts Open MPI's ``mpiexec`` in.

What ``scripts/env.sh`` exports, for the tools, tests and benchmarks that
launch ``mpiexec`` themselves: running as root (containers), more ranks
than cores, no libfabric transports (they probe for networks a container
lacks), one BLAS thread per rank. The variables of an enclosing MPI job
are dropped, so that a test that itself runs under ``mpiexec`` starts a
job of its own rather than joining that one.

``run_mpiexec`` runs such a command once more when ``mpiexec`` could not
start the job at all: under load, with other jobs starting at the same
moment, Open MPI 5.0.11's ``mpiexec`` now and then exits 213 with "The
PMIx server's listener thread failed to start" before any rank runs.
"""
import os
import subprocess

__all__ = ['MPIEXEC_ENV', 'mpiexec_environment', 'did_not_start',
           'run_mpiexec']

MPIEXEC_ENV = {
    'OMPI_ALLOW_RUN_AS_ROOT': '1',
    'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
    'PRTE_MCA_rmaps_default_mapping_policy': ':oversubscribe',
    'OMPI_MCA_btl': '^ofi',
    'OMPI_MCA_mtl': '^ofi',
    'OMP_NUM_THREADS': '1',
    'OPENBLAS_NUM_THREADS': '1',
}
_ENCLOSING_JOB = ('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_RANK')


def mpiexec_environment(pythonpath=(), base=None, keep=False):
    """A copy of ``base`` (default ``os.environ``) for starting
    ``mpiexec``: :data:`MPIEXEC_ENV` set (with ``keep``, values already
    there win, as ``env.sh`` keeps a thread count it finds), the folders
    ``pythonpath`` first on ``PYTHONPATH``, and the enclosing job's
    variables removed."""
    env = dict(os.environ if base is None else base)
    for name, value in MPIEXEC_ENV.items():
        if not keep or name not in env:
            env[name] = value
    paths = [p for p in list(pythonpath) + [env.get('PYTHONPATH')] if p]
    if paths:
        env['PYTHONPATH'] = os.pathsep.join(paths)
    for name in _ENCLOSING_JOB:
        env.pop(name, None)
    return env


def did_not_start(done):
    """Whether the finished ``mpiexec`` run ``done`` (a CompletedProcess
    with text output) never started its job, as Open MPI says."""
    return done.returncode != 0 and 'failed to start' in (
        (done.stderr or '') + (done.stdout or ''))


def run_mpiexec(command, *, lost=False, **kwargs):
    """``subprocess.run(command, **kwargs)`` for an ``mpiexec`` command
    line with text output, run again once if its job did not start; with
    ``lost``, also if ``mpiexec`` never returned (``timeout``) or died of
    a signal itself (under load Open MPI 5.0.11's ``mpiexec`` does so now
    and then with a job whose rank aborts or exits non-zero; the same job
    run again ends as usual)."""
    for attempt in (1, 2):
        try:
            done = subprocess.run(command, **kwargs)
        except subprocess.TimeoutExpired:
            if attempt == 2 or not lost:
                raise
            continue
        again = did_not_start(done) or (lost and done.returncode < 0)
        if attempt == 2 or not again:
            return done
