"""``coldstart VERB [ARGS]``: one argparse command line, a subcommand per verb of
:data:`coldstart.VERBS`; only the chosen verb's module is imported."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

from coldstart import VERB_GROUPS, VERBS, verb_module
from coldstart.cli import ArgumentParser, parse_and_run, report_error, run_cli
from document.errors import InputError

PROG = "coldstart"


def grouped_verbs() -> str:
    """The verbs by task, in the order of a user's work (``VERB_GROUPS``), one line each."""
    width = max(map(len, VERBS))
    out = []
    for group, verbs in VERB_GROUPS:
        out.append(f"{group}:")
        out += [f"  {verb:<{width}}  {VERBS[verb][1]}" for verb in verbs]
    return "\n".join(out) + "\n"


def build_parser() -> tuple[ArgumentParser, dict[str, ArgumentParser]]:
    """The front door's parser and one empty subparser per verb (its options are added once
    the verb is chosen: reading them imports the verb's module)."""
    parser = ArgumentParser(
        prog=PROG, usage=f"{PROG} [-h] VERB [ARGS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Why a vLLM instance takes the seconds it takes to become ready, phase "
                    "by phase.",
        epilog=f"{grouped_verbs()}\n{PROG} VERB --help for a verb's options")
    # The verbs are listed by task in the epilog, not in argparse's one flat list.
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", help=argparse.SUPPRESS)
    subparsers = {}
    for verb, (_, what) in VERBS.items():
        # bench's options are pytest's own, --help included: nothing of them is parsed here
        subparsers[verb] = verbs.add_parser(
            verb, help=what, prog=f"{PROG} {verb}", add_help=verb != "bench",
            **({"usage": f"{PROG} bench [pytest options]"} if verb == "bench" else {}))
    return parser, subparsers


def _bench(args: list[str]) -> int:
    import pytest

    # The matrix lives in the benchmarks package; pytest finds the project's rootdir and
    # conftest files from that path wherever the command is run.
    spec = importlib.util.find_spec("benchmarks")
    assert spec is not None and spec.origin is not None
    if {"-h", "--help"} & set(args):
        print(f"{PROG} bench [pytest options]: pytest over the benchmark matrix "
              "(benchmarks/); pytest's own help, with the suite's options, follows.\n",
              flush=True)
    return int(pytest.main([str(Path(spec.origin).parent), *args]))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, subparsers = build_parser()
    if not argv:
        parser.print_help()
        return 2
    verb, rest = argv[0], argv[1:]
    if verb in ("-h", "--help", "help"):
        parser.print_help()
        return 0
    if verb.startswith("-"):  # the front door has no option but --help
        return report_error(PROG, InputError(f"unrecognized option {verb!r}: the verb comes "
                                             f"first ({PROG} --help)"))
    if verb not in VERBS:
        return report_error(PROG, InputError(f"unknown verb {verb!r}; one of "
                                             f"{', '.join(VERBS)} ({PROG} --help)"))
    if verb == "bench":
        # argparse's REMAINDER would take a leading pytest option (-k) for one of its own
        return _bench(rest)
    module = importlib.import_module(verb_module(verb))
    subparser = subparsers[verb]
    module.add_arguments(subparser)
    subparser.set_defaults(program=f"{PROG} {verb}")
    return run_cli(f"{PROG} {verb}", lambda a: parse_and_run(subparser, module.run, a), rest)


if __name__ == "__main__":
    sys.exit(main())
