"""ChainerMN's private ``_memory_utility`` names that scripts and
ChainerMN's own tests import."""

__all__ = ['array_to_buffer_object']


def array_to_buffer_object(array, mpi_dtype=None):
    """array_to_buffer_object(array, mpi_dtype=MPI.FLOAT): an mpi4py
    buffer spec for a NumPy or CuPy array (mpi4py reads CuPy arrays through
    ``__cuda_array_interface__``)."""
    if mpi_dtype is None:
        return array
    return [array, mpi_dtype]
