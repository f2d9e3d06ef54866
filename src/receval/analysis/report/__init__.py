"""Reports: one self-contained HTML page (inline CSS and SVG charts) comparing
systems, and static PNG images for papers and slides.

>>> from receval.analysis.report import report
>>> callable(report)
True
"""

from receval.analysis.report.html import Report, report

__all__ = ["Report", "report"]
