"""Reading inputs: in-memory tables and mappings (files come through the same path)."""

from .tables import Columns, RecsData, TruthData, read_recs, read_truth

__all__ = ["Columns", "RecsData", "TruthData", "read_recs", "read_truth"]
