"""``coldstart VERB [ARGS]``: see :data:`coldstart.VERBS`."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

from coldstart import VERBS, running


def _usage() -> str:
    width = max(map(len, VERBS))
    lines = [f"  {verb:<{width}}  {what}" for verb, (_, what) in VERBS.items()]
    return ("usage: coldstart VERB [ARGS]   (coldstart VERB --help for a verb's options)\n\n"
            "verbs:\n" + "\n".join(lines))


def _bench(args: list[str]) -> int:
    import pytest

    # The matrix lives in the benchmarks package; pytest finds the project's rootdir and
    # conftest files from that path wherever the command is run.
    spec = importlib.util.find_spec("benchmarks")
    assert spec is not None and spec.origin is not None
    return int(pytest.main([str(Path(spec.origin).parent), *args]))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    if verb not in VERBS:
        print(f"coldstart: error: unknown verb {verb!r}; one of {', '.join(VERBS)}",
              file=sys.stderr)
        return 2
    if verb == "bench":
        return _bench(rest)
    module = VERBS[verb][0]
    sys.argv = [f"coldstart {verb}", *rest]
    try:
        with running(module, verb):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
