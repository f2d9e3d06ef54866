"""Reports: one self-contained HTML page (inline CSS and SVG charts) comparing
systems, and static PNG images for papers and slides.

>>> from receval.report import report
>>> callable(report)
True
"""

from .html import Report, report

__all__ = ["Report", "report"]
