"""``coldstart cluster-shard``: one shard of a matrix, as a pod or a CI job runs it: the pytest
command, with a failed cell counted as a result rather than as a failed shard.

    coldstart cluster-shard --json DIR/shard-I.json [--run-dir DIR --job-uid UID] -- \
        pytest benchmarks/ --matrix smoke --splits N --group I

Also run as ``python deploy/shard.py``, the form the Kubernetes Job and the matrix workflow
run; its exit codes: ``deploy.shard``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from deploy.shard import claim_run_dir, refuse
from deploy.shard import run as run_shard


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--json", required=True, type=Path, help="the shard's benchmark JSON")
    parser.add_argument("--run-dir", type=Path, help="the run's results folder (Kubernetes)")
    parser.add_argument("--job-uid", help="the uid of the Job this pod belongs to")
    # everything after "--", kept whole (argparse keeps the "--" itself in a REMAINDER)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- COMMAND...: the pytest command the shard runs")


def run(args: argparse.Namespace) -> int:
    if not args.command or args.command[0] != "--":
        return refuse(f"usage: {getattr(args, 'program', None) or 'deploy/shard.py'} --json "
                      "PATH [--run-dir DIR --job-uid UID] -- COMMAND...")
    command = args.command[1:]
    if not command:
        return refuse("no command after --")
    if any(a == "--store-durations" or a.startswith("--store-durations=") for a in command):
        # Every shard of a run would write the one durations file at once, each with its own
        # cells only: store them from one whole, unsplit run instead.
        return refuse("--store-durations: a shard does not write the durations file; store "
                      "it from one complete run (docs/cluster.md)")
    if (args.run_dir is None) != (args.job_uid is None) or args.job_uid == "":
        return refuse("--run-dir and --job-uid go together (the Job's uid may not be empty)")
    if args.run_dir is not None:
        refused = claim_run_dir(args.run_dir, args.job_uid)
        if refused:
            return refuse(refused)
    return run_shard(command, args.json)
