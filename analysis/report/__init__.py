"""A run, or two runs compared, as one self-contained HTML page: ``coldstart report RUN.json
[NEW.json]``.

The run page: where each cell's seconds went (the median round, the boot of median wall time,
cut into the six phases and the residual, cells grouped by their axes, failed and skipped
cells with their reason), each cell's median per phase (``analysis.compare.median_of_rounds``:
the median the comparison states too), what each axis changes (compile cache, page cache
beside the storage floor, loader, ...), every round of every cell, the median round's timeline
(the same tracks as ``coldstart trace``), the machine, the versions and the command that made
the run. A cell is labelled by every axis that varies across the run, never cut.

The comparison page: per cell and phase, base vs new with their rounds, the change and the
verdict of ``analysis.compare`` (its code decides, with the same options; the page only
shows), the changes that fail the gate first, then where each phase's change went (its
sub-phases, its part in no sub-phase, the residual). Two runs with no cell in common are
refused, as ``analysis.compare`` refuses them.

The page needs no network: plots are matplotlib SVG inlined as ``data:`` images, the style
is inline, there is no script, and a Content-Security-Policy forbids loading anything else.
Every string read from a result file is HTML-escaped: the markup is in jinja2 templates
(``analysis/report/templates``) with autoescape on.

A run as its cells (``cells``), the figures (``plots``), what both pages share and the templates
(``page``, ``templates/``), the run page (``run_page``) and the comparison page
(``comparison_page``). The fit's markdown report (``coldstart fit --out-dir``) lives in
``analysis.fit.markdown``; the command line in ``coldstart.commands.report``.
"""
