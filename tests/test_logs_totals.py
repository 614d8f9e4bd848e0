"""The start-up total a log prints is kept beside its phases (``BootResult.printed_total_s``).

Every boot log of the reference study's sweep (vLLM 0.10.1.1, the committed copy in
tests/data/study) prints the driver's "initialize_engine took X seconds"; the V0-engine and
upstream logs of tests/test_logs_versions.py (0.3.1 .. 0.11.0) print vLLM's "init engine
(profile, create kv cache, warmup model) took" from 0.7 on and no total before. Each must give
a record, with the total it prints, or none where it prints none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.logs.reader import log_boots, read_log
from tests import test_logs_versions as versions
from tests.conftest import STUDY_DIR

STUDY_LOGS = sorted(Path(STUDY_DIR).rglob("output_model_*.txt"))
# The printed words, read here with a regex of this test's own (not the registry's).
_DRIVER_TOTAL = re.compile(r"^initialize_engine took ([\d.]+) seconds", re.MULTILINE)
_VLLM_TOTAL = re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+)")


def test_the_sweep_is_there() -> None:
    assert len(STUDY_LOGS) >= 30


@pytest.mark.parametrize("path", STUDY_LOGS, ids=[p.stem[:60] for p in STUDY_LOGS])
def test_every_study_log_gives_a_record_with_its_printed_total(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    printed = [float(v) for v in _DRIVER_TOTAL.findall(text)]
    boots = log_boots(path)
    assert len(boots) == len(printed) >= 1
    for boot, total in zip(boots, printed):
        assert boot.printed_total_s == pytest.approx(total)
        assert boot.printed_total_line == "initialize_engine took"
        # A total of the whole engine start, not a phase: at least the phases it holds.
        assert boot.printed_total_s >= sum(
            boot.phases[n] or 0.0 for n in ("model_loading", "torch_compile",
                                            "kv_cache_profiling", "cuda_graph_capture")) - 0.05


V0_SWEEP = {
    "0.3.1": versions.V031_LOG, "0.4.1": versions.V041_LOG, "0.5.0": versions.V050_EAGER_LOG,
    "0.6.0": versions.V060_LOG, "0.7.0": versions.V070_LOG, "0.11.0": versions.V0110_LOG,
}


@pytest.mark.parametrize("release", list(V0_SWEEP))
def test_version_sweep_keeps_the_printed_total(release: str) -> None:
    log = V0_SWEEP[release]
    result = read_log(log)
    printed = _VLLM_TOTAL.search(log)
    if printed is None:
        assert result.printed_total_s is None and result.printed_total_line is None
    else:
        assert result.printed_total_s == pytest.approx(float(printed.group(1)))
        assert result.printed_total_line.startswith("init engine")
    assert result.state == "measured"
