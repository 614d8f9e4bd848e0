"""Metamorphic tests of the log reader: a log pasted another way is the same boot.

Every log the reader is tested on (the public threads' logs, the reference study's, the CPU
boot's) goes through each paste transform below, and through pairs of them, and must give the
record the clean log gives: state, phases, subphases, phase notes (the unfinished phase among
them), the printed total and the metadata. Two boots pasted one after the other give two such
records. The transforms are generated here, not written by hand, so a new log in the corpus is
checked under every paste form at once.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from harness.logs.reader import log_boots
from tests.conftest import STUDY_DIR

DATA = Path(__file__).resolve().parent / "data"
CORPUS = sorted([*(DATA / "logs" / "public").glob("*.log"), *DATA.glob("*.log"),
                 *STUDY_DIR.glob("**/output_model_*.txt")])
_NUMBER = re.compile(r"(?<![\w.\[;])\d+(?:\.\d+)?(?:\s?(?:seconds|secs|s|GiB|GB|MB)\b)?")
_LEVEL = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR)\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: list[str], text: str) -> str:
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def ansi(text: str) -> str:
    """Coloured as a terminal shows it: the level green, every number bold."""
    coloured = _LEVEL.sub(lambda m: f"\x1b[32m{m[1]}\x1b[0m", text)
    return _NUMBER.sub(lambda m: f"\x1b[1m{m[0]}\x1b[0m", coloured)


def bold(text: str) -> str:
    """Every value with its unit in markdown bold: "took **34.11 seconds**"."""
    return re.sub(r"(?<![\w.*])(\d+(?:\.\d+)?\s?(?:seconds|secs|s|GiB|GB|MB))\b",
                  r"**\1**", text)


def quoted(text: str) -> str:
    return _join(["> " + line for line in _lines(text)], text)


def indented(text: str) -> str:
    return _join(["    " + line for line in _lines(text)], text)


def compose(text: str) -> str:
    """docker compose's service prefix."""
    return _join(["vllm-openai-1  | " + line for line in _lines(text)], text)


def kubernetes(text: str) -> str:
    """kubectl logs --timestamps: an RFC 3339 stamp with nanoseconds, a microsecond a line."""
    return _join([f"2025-06-01T12:00:00.{i:09d}Z {line}" for i, line in enumerate(_lines(text))],
                 text)


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def no_final_newline(text: str) -> str:
    return text.rstrip("\n")


def wrapped(text: str, width: int = 80) -> str:
    """A terminal's hard wrap: every ``width`` visible columns (colour codes take none), the
    rest of the line going on at column 0."""
    out = []
    for line in _lines(text):
        chunk, visible = "", 0
        for token in re.findall(r"\x1b\[[0-9;]*m|.", line):
            if not token.startswith("\x1b") and visible == width:
                out.append(chunk)
                chunk, visible = "", 0
            chunk += token
            visible += not token.startswith("\x1b")
        out.append(chunk)
    return _join(out, text)


def two_boots(text: str) -> str:
    """The same boot twice, as a restarted pod appends it (a newline between them)."""
    return text + ("" if text.endswith("\n") else "\n") + text


# Applied in this order when paired: what vLLM's terminal does first, what the paster does last.
TRANSFORMS = {f.__name__: f for f in (two_boots, bold, ansi, indented, compose, kubernetes,
                                      wrapped, quoted, crlf, no_final_newline)}
PAIRS = [f"{a}+{b}" for a, b in itertools.combinations(TRANSFORMS, 2)]

# (log file name, transform) that truly cannot be undone, each with why; the transform's
# pairs with others are marked too. Kept short. A defect found here is fixed in the reader, or
# listed as "(open defect)" until it is: the marks are strict, so a fix shows as a failure.
_NO_BOOT_LINE = ("no line a boot prints once (an excerpt of {}) and {}: a second copy reads as "
                 "the same boot going on")
CANNOT: dict[tuple[str, str], str] = {
    ("003-ray-serve-nested-echo.log", "two_boots"): _NO_BOOT_LINE.format(
        "one loading line and its Ray echo", "one instant"),
    ("026-tpu-inference-precompile.log", "two_boots"): _NO_BOOT_LINE.format(
        "TPU precompile lines", "a second of whole-second timestamps, which processes "
        "flushing a second apart also give"),
    ("032-v1-traceback-only-load.log", "two_boots"): _NO_BOOT_LINE.format(
        "a worker's traceback", "no timestamp; a chained traceback repeats its frames too"),
    ("033-v1-engine-core-traceback-init.log", "two_boots"): _NO_BOOT_LINE.format(
        "an engine's traceback", "one instant"),
    **{(name, "two_boots"): _NO_BOOT_LINE.format(what, "a second or less of whole-second "
                                                  "timestamps, which processes flushing a second "
                                                  "apart also give")
       for name, what in [("007-nemotron-ray-data.log", "three compile lines"),
                          ("011-club3090-fp8-mtp.log", "six loading lines"),
                          ("020-ray-v0-capture-oom.log", "four profiling and capture lines"),
                          ("021-gguf-v0-tp-memory-profiling.log", "ranks' profiling lines"),
                          ("030-whisper-v0-profile-crash.log", "a profiling run and its crash")]},
    # The corpus logs added with the reader's normaliser (036-054), where a second copy does
    # not read as a second boot: excerpts with no line a boot prints once, or pastes that are
    # several boots already.
    **{(name, "two_boots"): why for name, why in [
        ("036-npu-ascend-0260-load-total.log", _NO_BOOT_LINE.format(
            "two loading lines of Ascend workers", "one second")),
        ("037-npu-ascend-dp4-loaders.log", "four data-parallel engines' loading lines, already "
                                           "several engines: a copy is more of the same"),
        ("048-xpu-woq-traceback.log", _NO_BOOT_LINE.format("a traceback", "no timestamp")),
        ("051-npu-ascend-tp2-progress.log", _NO_BOOT_LINE.format(
            "a weights line between progress bars", "one instant")),
        ("054-rocm-mi50-pp-tp-loading.log", _NO_BOOT_LINE.format(
            "PP x TP loading lines", "one second")),
        ("049-torchtitan-actor-prefix.log", _NO_BOOT_LINE.format(
            "one Dynamo line inside an actor tag", "one instant")),
        ("061-v0-066-memory-profiling-worker.log", _NO_BOOT_LINE.format(
            "a weights line and a worker's profiling lines", "one second"))]},
    # Session heldout3's batch (075-089): excerpts of listings a process prints once, with no
    # line that starts a boot.
    **{(name, "two_boots"): why for name, why in [
        ("082-hpu-gaudi1-preload-crash.log", _NO_BOOT_LINE.format(
            "a Gaudi runner's memory lines and its crash", "one second")),
        ("085-rocm-0231-journalctl-banner.log", _NO_BOOT_LINE.format(
            "the serve banner's lines", "one instant")),
        ("086-npu-ascend-v0-plugin-activated.log", _NO_BOOT_LINE.format(
            "the plugin listing", "one instant")),
        ("087-compose-livepeer-v0-tp2.log", _NO_BOOT_LINE.format(
            "an app's lines and one config line", "a few seconds")),
        ("089-hpu-gaudi3-v1-runtime.log", _NO_BOOT_LINE.format(
            "vllm-gaudi's runtime listing", "one instant"))]},
    # Sessions heldout4-6's batches (090-140): excerpts of a boot's middle, with no line that
    # starts a boot, and one whose header the reader does not read (121's reader gap).
    **{(name, "two_boots"): why for name, why in [
        ("092-v1-2026-aot-load-eagle-recompile.log", _NO_BOOT_LINE.format(
            "an AOT cache load, the warm-up and a drafter's recompile", "one second")),
        ("095-v1-dp0-tp8-ep-capture-bars.log", _NO_BOOT_LINE.format(
            "capture bars and ranks' lines after them", "one instant")),
        ("104-v1-tp0-blank-prefix-drafter.log", _NO_BOOT_LINE.format(
            "a weights line between progress bars and the drafter's start", "one instant")),
        ("106-v1-fastsafetensors-tp0-enforce-eager.log", _NO_BOOT_LINE.format(
            "shard bars, a weights line and the drafter's start", "one instant")),
        ("107-compose-gb10-fastsafetensor-bars.log", _NO_BOOT_LINE.format(
            "an attention-backend line and a loader's bars", "one instant")),
        ("109-v0-vllmworkerprocess-memory-profiling.log", _NO_BOOT_LINE.format(
            "workers' memory-profiling lines", "one instant")),
        ("110-npu-ascend-v0-literal-ansi-caret.log", _NO_BOOT_LINE.format(
            "an Ascend plugin's warnings", "one instant")),
        ("113-v1-072-v1-mode-download-bars.log", "no line the reader cuts boots at (an "
         "excerpt of a worker's load start, backend lines and download bars: a load start "
         "opens another engine only after a second 'Model loading took') and one second: a "
         "second copy reads as the same boot going on"),
        ("116-rocm-compose-capture-crash-nobar.log", _NO_BOOT_LINE.format(
            "capture bars and a worker's traceback", "one instant")),
        ("117-npu-double-prefix-weights-325s.log", _NO_BOOT_LINE.format(
            "shard bars and a weights line", "one instant")),
        ("118-v1-tp1-download-glued-bar.log", _NO_BOOT_LINE.format(
            "a download line and shard bars", "one instant")),
        ("123-v1-021-tp4-cudagraph-profiling-notice.log", _NO_BOOT_LINE.format(
            "ranks' KV-cache and graph-memory lines", "one second")),
        ("128-v1-tp2-capture-bars-one-line.log", _NO_BOOT_LINE.format(
            "capture bars and ranks' graph-pool lines", "one instant")),
        ("129-v0-seven-process-capture-finished-no-took.log", _NO_BOOT_LINE.format(
            "seven processes' capture lines", "one instant")),
        ("136-xpu-tp4-space-padded-lines.log", _NO_BOOT_LINE.format(
            "ranks' backend and checkpoint lines", "one instant")),
        ("138-hpu-2026-sampler-warmup-worker-tp0.log", _NO_BOOT_LINE.format(
            "vllm-gaudi's sampler warm-up lines", "one instant"))]},
}


def _cannot(path: Path, name: str) -> str | None:
    """Why ``name`` cannot be undone for this log: listed for the whole combination, or for
    one of its transforms."""
    if (path.name, name) in CANNOT:
        return CANNOT[(path.name, name)]
    return next((CANNOT[(path.name, part)] for part in name.split("+")
                 if (path.name, part) in CANNOT), None)


def _apply(text: str, name: str) -> str:
    for part in name.split("+"):
        text = TRANSFORMS[part](text)
    return text


def _record(result) -> dict:
    """What must not change with the paste: not line numbers, not the log's own text."""
    return {
        "state": result.state, "phases": result.phases, "subphases": result.subphases,
        "phase_notes": result.phase_notes, "printed_total_s": result.printed_total_s,
        "model": result.model, "model_path": result.model_path,
        "vllm_version": result.vllm_version, "platform": result.platform,
        "engine_config": result.engine_config,
        "compile_cache": result.compile_cache_observed,
        "engine": result.evidence.facts.get("engine"),
    }


_CLEAN: dict[Path, tuple[str, list[dict]]] = {}


def _clean(path: Path) -> tuple[str, list[dict]]:
    if path not in _CLEAN:
        text = path.read_text(encoding="utf-8", errors="replace")
        _CLEAN[path] = (text, [_record(r) for r in log_boots(text, model="m")])
    return _CLEAN[path]


def _id(path: Path) -> str:
    return path.relative_to(DATA).as_posix().replace("study/", "").split("/")[-1][:60]


# Every log under every single transform runs in the default tier, and a fifth of the pairs,
# rotating with the log, so that each pair is still read on a fifth of the corpus (about 35
# logs) there; the other pairs run in the slow tier (``pytest -m slow``). All 9,735 cases took
# 205 s of a 17 min default run on a 2-core AMD EPYC, the largest share of any file. A case
# marked as one that cannot be undone (strict xfail) always runs: a fix shows at once.
PAIR_SAMPLE = 5


def _marks(i: int, path: Path, name: str) -> list:
    if _cannot(path, name):
        return [pytest.mark.xfail(reason=_cannot(path, name), strict=True)]
    if name in PAIRS and (PAIRS.index(name) - i) % PAIR_SAMPLE:
        return [pytest.mark.slow]
    return []


CASES = [pytest.param(path, name, id=f"{_id(path)}-{name}", marks=_marks(i, path, name))
         for i, path in enumerate(CORPUS) for name in [*TRANSFORMS, *PAIRS]]


@pytest.mark.parametrize("path,name", CASES)
def test_a_paste_form_reads_as_the_clean_log(path: Path, name: str) -> None:
    text, clean = _clean(path)
    got = [_record(r) for r in log_boots(_apply(text, name), model="m")]
    want = clean * 2 if name.startswith("two_boots") else clean
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w


def test_the_default_tier_reads_every_pair_on_some_logs() -> None:
    fast = [c.values for c in CASES if not any(m.name == "slow" for m in c.marks)]
    assert {name for _, name in fast} == {*TRANSFORMS, *PAIRS}
    assert min(sum(name == pair for _, name in fast) for pair in PAIRS) >= len(CORPUS) // 6
    assert len(fast) < len(CASES) / 2


def test_the_corpus_is_every_log_the_reader_is_tested_on() -> None:
    assert len([p for p in CORPUS if "public" in p.parts]) >= 35
    assert len([p for p in CORPUS if p.suffix == ".txt"]) >= 30
    # kept short: the excerpts no copy can split, and the open defects named one by one
    # (30 -> 36: the held-out batch 075-089 brought six such excerpts with 15 logs; 36 -> 22:
    # 044 with bold values and 049 without its final newline read, fixed in the reader;
    # 22 -> 40: the held-out batches 090-140 brought 17 such excerpts and two open defects
    # with 51 logs; 40 -> 37: Dynamo's relogged header and the two defects read)
    assert len(CANNOT) <= 37


# The ending of vLLM 0.5.0 .. 0.7.0 driver scripts, as three held-out logs have it.
_V0_ENDING = ("INFO 09-05 12:00:00 llm_engine.py:213] Initializing an LLM engine (v0.5.0) with "
              "config: model='m'\n"
              "INFO 09-05 12:00:05 model_runner.py:160] Loading model weights took 14.9595 GB\n"
              "INFO 09-05 12:00:09 gpu_executor.py:83] # GPU blocks: 27913, # CPU blocks: 2048\n"
              "INFO 09-05 12:00:14 model_runner.py:965] Graph capturing finished in 5 secs.\n"
              "initialize_engine took 9.82 seconds")


def test_the_last_line_without_a_newline_is_read() -> None:
    boot = log_boots(_V0_ENDING)[-1]
    assert boot.printed_total_s == 9.82
    assert log_boots(_V0_ENDING + "\n")[-1].printed_total_s == 9.82
    assert boot.evidence.partial_last_line == "initialize_engine took 9.82 seconds"


def test_a_one_line_log_without_its_newline_is_the_log_not_a_file_name() -> None:
    line = ("INFO 04-28 16:20:20 [backends.py:1128] [actor=<root>.<generator{'gpus': 0/4}>] "
            "Dynamo bytecode transform time: 15.26 s")
    boot = log_boots(line)[-1]
    assert boot.source_path is None
    assert boot.evidence.partial_last_line == line
    assert boot.phases == log_boots(line + "\n")[-1].phases
    # a line that is no log's is still a file's name: a missing one is an error
    with pytest.raises(FileNotFoundError):
        log_boots("no-such-folder/boot.log")


def test_markdown_and_other_units_read() -> None:
    log = ("INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 15.41 GB and "
           "9.03 seconds\n"
           "INFO 01-01 00:00:40 [core.py:1] init engine (profile, create kv cache, warmup model) "
           "took **34.11 seconds**\n")
    boot = log_boots(log)[-1]
    assert boot.phases["model_loading"] == pytest.approx(9.03)
    assert boot.printed_total_s == pytest.approx(34.11)
    assert boot.evidence.facts["weights_gib"] == pytest.approx(15.41)
    # bold inside inline code: the markers nest, and both pairs come off
    quoted = "main: `init engine (profile, create kv cache, warmup model) took **52.96 seconds**`\n"
    assert log_boots(quoted)[-1].printed_total_s == pytest.approx(52.96)


def test_two_bare_message_boots_are_two_records() -> None:
    bare = ("Initializing a V1 LLM engine (v0.10.1) with config: model='m'\n"
            "Model loading took 1.0 GiB and 4.00 seconds\n"
            "Graph capturing finished in 7 secs, took 0.3 GiB\n"
            "init engine (profile, create kv cache, warmup model) took 20.00 seconds\n")
    boots = log_boots(bare + bare)
    assert len(boots) == 2
    assert [b.printed_total_s for b in boots] == [20.0, 20.0]
    assert [b.phases["cuda_graph_capture"] for b in boots] == [7.0, 7.0]
    # without the start line too: the second total is another boot's
    assert len(log_boots("\n".join(bare.splitlines()[1:] * 2) + "\n")) == 2
