"""A run, or two runs compared, as one self-contained HTML page: ``python -m analysis.report
RUN.json [NEW.json]`` (``cli``).

A run as its cells (``cells``), the figures (``plots``), what both pages share and the templates
(``page``, ``templates/``), the run page (``run_page``) and the comparison page
(``comparison_page``).
"""

from analysis.report.comparison_page import render_comparison
from analysis.report.page import CSP
from analysis.report.run_page import render_run

__all__ = ["CSP", "render_comparison", "render_run"]
