"""The log reader on garbled, reordered and truncated input: it never crashes, never invents."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from document import boot_result
from harness.logs.reader import read_log
from harness.logs.scan import HAS_DIGIT, LOOKS_TIMED, scan_lines
from tests.conftest import CPU_032_LOG, GPU_0101_LOG

REAL_LINES = GPU_0101_LOG.splitlines() + CPU_032_LOG.splitlines()
_SETTINGS = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@st.composite
def garbled(draw: st.DrawFn, line: str) -> str:
    """A real line with a few characters deleted, replaced or inserted."""
    chars = list(line)
    for _ in range(draw(st.integers(0, 4))):
        if not chars:
            break
        i = draw(st.integers(0, len(chars) - 1))
        action = draw(st.sampled_from(["delete", "replace", "insert"]))
        if action == "delete":
            del chars[i]
        else:
            c = draw(st.characters(codec="utf-8"))
            chars[i:i + (action == "replace")] = [c]
    return "".join(chars)


any_line = st.one_of(
    st.sampled_from(REAL_LINES),
    st.sampled_from(REAL_LINES).flatmap(garbled),
    st.text(max_size=200),
    st.from_regex(r"(INFO|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d(\.\d{3})? \[x\.py:\d+\] .{0,60} "
                  r"took -?[\d.]+(e\d+)? (s|secs|seconds)", fullmatch=True),
)


def _check(result: boot_result.BootResult) -> None:
    for name in boot_result.PHASE_NAMES:
        value = result.phases[name]
        if value is None:
            assert result.phase_notes.get(name), name  # every gap says why
        else:
            assert math.isfinite(value) and value >= 0, (name, value)
    assert set(result.subphases) <= set(boot_result.SUBPHASE_NAMES)
    for value in result.subphases.values():
        assert value is None or (math.isfinite(value) and value >= 0)


# Found by hypothesis on a clean clone: a mutated engine line names "v.10.1.1", no release.
@_SETTINGS
@given(st.lists(any_line, max_size=40))
@example(['\x1b[1;36m(EngineCore_0 pid=985958)\x1b[0;0m INFO 02-09 18:06:16.128 [core.py:74] '
          "Initializing a V1 LLM engine (v.10.1.1) with config: model='../../models/qwen-0.5b',"
          ' enforce_eager=False, device_config=cuda'])
def test_any_lines_never_crash(lines: list[str]) -> None:
    scan = scan_lines(lines)
    for line in scan.unread:
        assert LOOKS_TIMED.search(line) and HAS_DIGIT.search(line)
    result = read_log("\n".join(lines) + "\n")
    _check(result)
    boot_result.BootResult.model_validate(result.model_dump(mode="json"))


@_SETTINGS
@given(st.sampled_from([GPU_0101_LOG, CPU_032_LOG]).flatmap(
    lambda log: st.tuples(st.just(log), st.permutations(log.splitlines()))))
def test_reordered_lines_give_the_same_durations(log_and_lines: tuple[str, list[str]]) -> None:
    # Durations come from the lines themselves, not their order.
    log, lines = log_and_lines
    in_order = scan_lines(log.splitlines())
    shuffled = scan_lines(lines)
    assert sorted(shuffled.occurrences) == sorted(in_order.occurrences)
    for key, values in in_order.occurrences.items():
        assert sorted(shuffled.occurrences[key]) == sorted(values)
    _check(read_log("\n".join(lines) + "\n"))


@_SETTINGS
@given(st.integers(0, len(GPU_0101_LOG) - 1))
def test_truncated_log_is_a_failed_boot_with_what_it_completed(cut: int) -> None:
    # A killed boot leaves its log cut anywhere, mid-line included.
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "vllm.log"
        log.write_text(GPU_0101_LOG[:cut])
        result = read_log(log)
    _check(result)
    # Start-up ends with the engine's line, whole: its newline is not needed (a log's last
    # line is read without one; a unit cut short is not, test_logs_facts.py holds that).
    end_of_startup = GPU_0101_LOG.index("\n", GPU_0101_LOG.index("init engine (profile"))
    if cut < end_of_startup:
        assert (result.state, result.evidence.truncated) == ("failed", True)
        assert result.error
    else:
        assert result.state == "measured"
    full = read_log(GPU_0101_LOG)
    for name in boot_result.PHASE_NAMES:
        # A phase read from a cut log is the full log's value or absent, never another one.
        assert result.phases[name] in (None, full.phases[name]), name
    for key, seconds in result.log_durations.items():
        assert seconds == full.log_durations[key], key


@_SETTINGS
@given(st.lists(st.sampled_from(["Frobnicating widgets took 3.2 seconds",
                                 "INFO 11-29 10:00:00 [x.py:1] Tuning kernels takes 0.4 s",
                                 "Reticulating splines: elapsed 12 secs"]), min_size=1))
def test_unknown_timing_lines_are_reported_not_dropped(extra: list[str]) -> None:
    scan = scan_lines(GPU_0101_LOG.splitlines() + extra)
    assert scan.unread == extra
    assert not scan.truncated
