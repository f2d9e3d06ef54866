"""Reading inputs: in-memory tables and mappings (files come through the same path)."""

from receval.io.tables import read_recs, read_truth
from receval.records import Columns, RecsData, TruthData

__all__ = ["Columns", "RecsData", "TruthData", "read_recs", "read_truth"]
