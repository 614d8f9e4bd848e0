"""One shard of a matrix, as a pod or a CI job runs it: the pytest command, with a failed cell
counted as a result rather than as a failed shard.

    python deploy/shard.py --json DIR/shard-I.json [--run-dir DIR --job-uid UID] -- \
        pytest benchmarks/ --matrix smoke --splits N --group I

The command gets ``--benchmark-json JSON`` added, so the paths cannot disagree (its cells log
is ``JSON.cells.jsonl`` beside it, the default of ``pytest benchmarks/``). Exit codes:

- 0: the command ended (0 or 1) and wrote its JSON. pytest's 1 means some cell failed its
  checks; that cell is in the JSON (and its cells log) and ``coldstart check`` judges it after
  the merge. Rerunning the shard would measure the same failure again at the same cost.
- 2: refused before running (one line): the JSON or cells log is already there (a rerun or a
  retry would mix its files with an earlier one's), the run directory belongs to another Job
  (a reused run id), or the command stores pytest-split's durations (every shard would write
  the one file). Refusals and pytest's 2 to 5 (interrupted, internal error, usage error,
  no tests) recur on a retry: the Job's podFailurePolicy fails the index on them at once.
- 128 + N: stopped by signal N (a SIGTERM is passed on to pytest, which still writes its JSON).
- anything else: the command's own code; 1 when it ended 0 or 1 without writing the JSON.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

RECURRING = (2, 3, 4, 5)  # refused here, or pytest: interrupted, internal, usage, no tests
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def claim_run_dir(run_dir: Path, job_uid: str) -> str | None:
    """Mark ``run_dir`` as the results of the Job ``job_uid``; refuse one another Job marked.

    The first pod of a run creates ``run_dir/job-uid`` (exclusively, so two pods racing agree);
    every later pod of that Job finds its own uid there. A second Job with the same run id
    finds another uid and is refused: two runs never share a results path. Returns why it
    is refused, or None.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    marker = run_dir / "job-uid"
    try:
        with open(marker, "x") as fh:
            fh.write(job_uid + "\n")
        return None
    except FileExistsError:
        pass
    owner = marker.read_text().strip()
    if owner != job_uid:
        return (f"{run_dir} holds the results of another Job (uid {owner}); set a new RUN_ID "
                "for this run")
    return None


def refuse(message: str) -> int:
    print(f"shard: {message}", file=sys.stderr)
    return 2


def _json_written(path: Path, started: float) -> bool:
    """The command wrote ``path`` during this run, as a JSON object (pytest-benchmark's)."""
    try:
        if path.stat().st_mtime < started:
            return False
        return isinstance(json.loads(path.read_text()), dict)
    except (OSError, ValueError):
        return False


def run(command: list[str], json_path: Path) -> int:
    """Run ``command`` writing ``json_path``; the shard's exit code (module docstring)."""
    cells_log = json_path.with_name(json_path.name + ".cells.jsonl")
    for path in (json_path, cells_log):
        if path.exists():
            return refuse(f"{path} is already there (an earlier run or attempt): give each "
                           "run and attempt its own path")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    full = [*command, "--benchmark-json", str(json_path)]
    started = time.time() - 1  # coarse file-system timestamps
    stopped: list[int] = []
    child = subprocess.Popen(full)

    def forward(signum: int, _frame: object) -> None:
        stopped.append(signum)
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        rc = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if rc < 0:
        return 128 - rc
    if stopped:
        print(f"shard: stopped by signal {stopped[0]}; pytest ended {rc}", file=sys.stderr)
        return 128 + stopped[0]
    written = _json_written(json_path, started)
    if rc in (0, 1) and written:
        if rc == 1:
            print(f"shard: some cells failed their checks; they are in {json_path} "
                  "(coldstart check judges them after the merge): exit 0", file=sys.stderr)
        return 0
    if rc in (0, 1):
        print(f"shard: the command ended {rc} without writing {json_path}", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":  # the form the Job runs (deploy/kubernetes/base/job.yaml): coldstart cluster-shard
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from coldstart.cli import run_script

    sys.exit(run_script("deploy/shard.py", "cluster-shard"))
