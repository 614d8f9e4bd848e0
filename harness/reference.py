"""The float32 reference a boot's answer is judged against, computed on this machine.

transformers runs the pristine model folder in float32 on the CPU, in a process of its own and
never inside a timed boot, and gives (1) the prompt's token ids as the folder's own tokenizer
and chat template make them and (2), teacher-forced along the tokens vLLM generated, the
log-probability of each of them, its rank and the reference's top tokens at that step.

Results are cached in the fixture root (``references/``), keyed by the model folder's recipe
id, the torch and transformers versions and the CPU's identity (its flags pick the kernels),
and within a file by question, tokenization and continuation: a cell whose vLLM generates the
tokens an earlier cell did costs a file read.

    python -m harness.reference REQUEST.json OUT.json   (what :func:`teacher_forced` runs)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from harness.machine import cpu_fingerprint, cpu_identity

REFERENCE_FORMAT = 1
# Alternatives kept per step, for the record (the judge needs only rank and log-probs).
REFERENCE_TOP_K = 5
REFERENCE_TIMEOUT_S = 900.0


class ReferenceError(RuntimeError):
    """The reference could not be computed (transformers missing, the folder unreadable, ...)."""


def _installed(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def model_identity(model_path: Path) -> str:
    """The fixture's recipe id; for a folder that is not a fixture, its files' names, sizes and
    modification times (a changed file is another model)."""
    try:
        recipe = json.loads((model_path / "coldstart_fixture.json").read_text()).get("recipe")
    except (OSError, json.JSONDecodeError):
        recipe = None
    if recipe:
        return f"recipe:{recipe}"
    files = sorted((f.relative_to(model_path).as_posix(), f.stat().st_size, f.stat().st_mtime_ns)
                   for f in model_path.rglob("*") if f.is_file())
    return "files:" + hashlib.sha256(json.dumps(files).encode()).hexdigest()[:16]


def cache_key(model_path: Path) -> dict[str, Any]:
    return {"format": REFERENCE_FORMAT, "model": model_identity(model_path),
            "torch": _installed("torch"), "transformers": _installed("transformers"),
            "cpu": cpu_fingerprint(), "cpu_model": cpu_identity()["model_name"]}


def cache_file(model_path: Path) -> Path:
    from fixtures.catalog import fixture_root

    key = json.dumps(cache_key(model_path), sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return fixture_root() / "references" / f"{model_path.name}-{digest}.json"


def _request_key(question: str, add_special_tokens: bool, continuation: list[int]) -> str:
    text = json.dumps([question, add_special_tokens, continuation])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def teacher_forced(model_path: Path, question: str, add_special_tokens: bool,
                   continuation: list[int], *,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """``{"prompt_token_ids", "prompt_text", "steps": [{token_id, logprob, rank, top}], "cache"}``.

    Computed in a fresh process on a cache miss (the caller's process never loads torch nor
    maps the weights, which would keep them in the page cache a later boot wants evicted).
    """
    model_path = Path(model_path).resolve()
    path = cache_file(model_path)
    key = _request_key(question, add_special_tokens, list(continuation))
    cached = _read(path).get("entries", {}).get(key)
    if cached is not None:
        return {**cached, "cache": str(path), "cached": True}
    if progress:
        progress("computing the float32 reference with transformers (outside the boot)")
    with tempfile.TemporaryDirectory(prefix="coldstart-reference-") as tmp:
        request, out = Path(tmp) / "request.json", Path(tmp) / "out.json"
        request.write_text(json.dumps({"model_path": str(model_path), "question": question,
                                       "add_special_tokens": add_special_tokens,
                                       "continuation": list(continuation)}))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}
        try:
            done = subprocess.run([sys.executable, "-m", "harness.reference", str(request),
                                   str(out)], capture_output=True, text=True, env=env,
                                  timeout=REFERENCE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise ReferenceError(f"the reference took over {REFERENCE_TIMEOUT_S:.0f} s") from exc
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ReferenceError(f"the reference process exited {done.returncode}: {last}")
        computed = json.loads(out.read_text())
    _store(path, key, computed)
    return {**computed, "cache": str(path), "cached": False}


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) and doc.get("format") == REFERENCE_FORMAT else {}


def _store(path: Path, key: str, computed: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = _read(path) or {"format": REFERENCE_FORMAT}
    doc["key"] = cache_key(Path(computed["model_path"]))
    doc.setdefault("entries", {})[key] = computed
    # Renamed into place: a concurrent reader sees the old file or the new one, never half.
    # Two writers at once may lose one's entry; it is computed again when next asked for.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)


# ------------------------------------------------------------------ the reference process
def _prompt(tokenizer: Any, question: str) -> str:
    # As the child builds it (harness/_child.py chat_prompt), from the pristine tokenizer.
    try:
        return tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                             tokenize=False, add_generation_prompt=True)
    except Exception:  # tokenizers without a chat template
        return question


def compute(model_path: str, question: str, add_special_tokens: bool,
            continuation: list[int]) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    prompt_text = _prompt(tokenizer, question)
    prompt_ids = list(tokenizer(prompt_text, add_special_tokens=add_special_tokens)["input_ids"])
    # float32 whatever the folder's dtype: the reference must not share bf16's rounding.
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model.eval()
    vocab = model.get_output_embeddings().weight.shape[0]
    # Teacher-forced up to the first token outside the model's vocabulary (none from a model
    # vLLM ran, but the ids come from another process): the steps after it have no prefix.
    valid = next((i for i, t in enumerate(continuation) if not 0 <= t < vocab),
                 len(continuation))
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids + list(continuation[:valid])])).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
    steps = []
    for i, token in enumerate(continuation):
        if i >= valid:
            steps.append({"token_id": token, "logprob": None, "rank": None, "top": []})
            continue
        row = logprobs[len(prompt_ids) - 1 + i]
        top = torch.topk(row, REFERENCE_TOP_K)
        steps.append({"token_id": token, "logprob": float(row[token]),
                      "rank": int((row > row[token]).sum()),
                      "top": [[int(t), float(v)] for v, t in zip(top.values, top.indices)]})
    return {"model_path": model_path, "question": question,
            "add_special_tokens": add_special_tokens, "prompt_text": prompt_text,
            "prompt_token_ids": prompt_ids, "continuation": list(continuation), "steps": steps,
            "dtype": "float32", "versions": {"torch": torch.__version__,
                                             "transformers": _installed("transformers")}}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m harness.reference REQUEST.json OUT.json", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    result = compute(request["model_path"], request["question"], request["add_special_tokens"],
                     request["continuation"])
    Path(args[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
