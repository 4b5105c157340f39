"""Changes one rank makes to mpi4py's ABI registry (mpi4py's own tests
make them) stay in that rank's process."""
import importlib

from mpi4py import MPI

comm = MPI.COMM_WORLD
abi = importlib.import_module('mpi4py._mpiabi')
before = sorted((k, sorted(v)) for k, v in abi._registry.items())
abi._register('mpi4py.rank{}'.format(comm.rank), '')
abi._get_mpiabi.mpiabi = 'rank{}'.format(comm.rank)
comm.Barrier()
print('OUT rank={} before={} after={} abi={} finder={}'.format(
    comm.rank, before, sorted(abi._registry), abi._get_mpiabi(),
    abi.__name__ + '._Finder' if abi._Finder else None), flush=True)
comm.Barrier()
