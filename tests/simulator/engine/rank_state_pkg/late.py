"""A submodule no other module imports."""
__all__ = ['loads']

loads = 1
