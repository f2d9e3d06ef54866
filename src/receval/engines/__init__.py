"""Engines turn ids into per-user arrays and run the kernels on them."""
