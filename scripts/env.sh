# Sourced by scripts/main and scripts/test: the venv and the Open MPI settings
# this project runs with (root in containers, more ranks than cores, no OFI).
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="${VENV:-$top/.venv}/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
export OMPI_MCA_btl='^ofi' OMPI_MCA_mtl='^ofi'
# One BLAS thread per rank: several ranks share the cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
