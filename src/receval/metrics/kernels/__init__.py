"""Engine-neutral metric kernels: NumPy functions on per-user arrays, never on ids."""

from receval.metrics.kernels.batch import Batch

__all__ = ["Batch"]
