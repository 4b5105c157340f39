"""Dataset scattering across ranks."""
