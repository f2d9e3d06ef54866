"""Interaction data: a synthetic log built into the package, and file readers.

- :func:`synthetic_interactions`: a deterministic, realistic interaction log
  (Zipf-like item popularity, users with tastes over item genres, timestamps),
  generated at run time — no download, no data file.
- :func:`read_interactions`: CSV, Parquet and the MovieLens formats.
"""

from .readers import as_frame, detect_format, read_interactions
from .synthetic import synthetic_interactions

__all__ = ["as_frame", "detect_format", "read_interactions", "synthetic_interactions"]
