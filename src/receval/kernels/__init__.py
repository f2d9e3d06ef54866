"""Engine-neutral metric kernels: NumPy functions on per-user arrays, never on ids."""

from .batch import Batch

__all__ = ["Batch"]
