"""The one error convention every program shares, run as ``coldstart VERB`` or as
``python -m MODULE``: input a user can fix is one line ``PROG: error: MESSAGE`` on stderr and
exit code 2, no traceback; ``--help`` is argparse's.

Each program's module exposes ``add_arguments(parser)`` (its options) and ``run(args)`` (its
body, raising a :class:`UserError` for bad input); its ``main`` is :func:`run_program`, and
the front door (``coldstart.__main__``) calls the same two on its verb's subparser. Only the
standard library and ``coldstart`` are imported here, so every package may import it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from document.errors import USER_ERRORS, InputError, UsageError

__all__ = ["ArgumentParser", "error_line", "report_error", "run_cli", "closed_output",
           "CLOSED_OUTPUT_EXIT", "parser_for", "parse_and_run", "progress_name", "run_program",
           "run_script", "check_output",
           ]


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are an ``InputError``, said in the one line (argparse
    itself prints the usage too, two lines or more). ``--help`` is unchanged."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see {self.prog} --help)")


def check_output(path: str | Path | None, option: str) -> Path | None:
    """``path`` where a program will write its result, checked before the work that makes it
    (a boot, a fit, a calibration): an output that cannot be written is said now, in one
    line, not after the minutes it took. None stays None (the option was not given)."""
    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{option} {path}: is a folder, not a file")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise InputError(f"{option} {path}: not writable")
    return path


def error_line(prog: str, exc: BaseException) -> str:
    """``PROG: error: MESSAGE``, the message's whitespace folded to one line."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return f"{prog}: error: {message}"


def report_error(prog: str, exc: BaseException) -> int:
    """Print ``exc`` as its one line on stderr; exit code 2."""
    print(error_line(prog, exc), file=sys.stderr)
    return 2


def run_cli(prog: str, main: Callable[[list[str] | None], int],
            argv: list[str] | None = None) -> int:
    """Run ``main(argv)``; a user error becomes ``prog: error: <one line>`` and exit code 2.
    ``prog`` is the module (``analysis.fit``), or ``coldstart VERB`` from the front door."""
    try:
        code = main(argv)
        # With stdout buffered (a pipe, PYTHONUNBUFFERED unset) a reader that went away shows
        # only at this flush; left to the interpreter's exit it would print "Exception ignored"
        # and exit 120.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return closed_output()
    except USER_ERRORS as exc:
        return report_error(prog, exc)


# What a shell gives a program that SIGPIPE ended (128 + 13): the reader (``| head``) closed
# the output; no error line, and no exit code of the program's own verdict (a gate's 0 or 1),
# since it did not finish.
CLOSED_OUTPUT_EXIT = 141


def closed_output() -> int:
    """The output's reader went away: stop writing to it quietly (as Python's documentation
    on SIGPIPE advises, stdout becomes /dev/null so the interpreter's flush at exit does not
    fail again) and exit as SIGPIPE would have ended the program."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_OUTPUT_EXIT


def program_name(module: str) -> str:
    """What the program of ``module`` calls itself in its usage run as ``python -m MODULE``
    (the front door names its verb's parser ``coldstart VERB``)."""
    return f"python -m {module}"


def parser_for(module: str, add_arguments: Callable[[argparse.ArgumentParser], None]
               ) -> ArgumentParser:
    """The parser of ``python -m MODULE``: its usage names that form."""
    parser = ArgumentParser(prog=program_name(module))
    add_arguments(parser)
    return parser


def progress_name(args: argparse.Namespace, module: str) -> str:
    """The name a program's progress and warning lines start with: the one its error lines
    use (``coldstart VERB`` from the front door, the module from ``python -m``)."""
    return getattr(args, "program", None) or module


def parse_and_run(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
                  argv: list[str] | None) -> int:
    """``run`` the options ``parser`` reads from ``argv``; a ``UsageError`` of ``run`` is
    the parser's usage error."""
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UsageError as exc:
        parser.error(str(exc))


def run_program(module: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                run: Callable[[argparse.Namespace], int], argv: list[str] | None = None) -> int:
    """The ``main`` of ``python -m MODULE``: parse ``argv`` (default ``sys.argv[1:]``) and
    ``run`` under the one error convention, the line named by the module."""
    parser = parser_for(module, add_arguments)
    parser.set_defaults(program=module)
    return run_cli(module, lambda a: parse_and_run(parser, run, a), argv)


# The program forms earlier docs and CI scripts used, ``python -m MODULE``, and the verb each
# runs now (as ``python -m analysis.fit`` runs ``coldstart fit``): a module whose program
# moved into the front door runs that verb with the same arguments, never exits 0 with
# nothing done (a CI step written against it would pass every release). ``analysis`` alone
# was never one program: it names the front door and exits 2.
MOVED_PROGRAMS = {
    "analysis": None, "harness": "boot", "harness.trace": "trace",
    "analysis.features": "features", "analysis.report": "report", "analysis.predict": "predict",
    "analysis.compare": "compare", "analysis.merge": "merge", "analysis.predictors": "predictors",
    "analysis.ingest": "ingest", "analysis.study": "study", "analysis.table": "table",
    "benchmarks.check": "check", "benchmarks.history": "history", "benchmarks.gate": "gate",
    "benchmarks.overhead": "overhead", "benchmarks.release_pick": "release-pick",
    "benchmarks.gate_summary": "gate-summary", "benchmarks.calibrate": "calibrate",
    "benchmarks._envs": "envs",
}


def _verb_command(verb: str):
    """The module of ``verb``'s ``add_arguments`` and ``run``, imported."""
    from importlib import import_module

    from coldstart import verb_module

    return import_module(verb_module(verb))


def run_script(prog: str, verb: str, argv: list[str] | None = None) -> int:
    """A script run by its path (``python deploy/shard.py``, the form a Kubernetes manifest
    names): ``verb``'s program, its usage and error lines named ``prog``."""
    command = _verb_command(verb)
    parser = ArgumentParser(prog=prog)
    command.add_arguments(parser)
    parser.set_defaults(program=prog)
    return run_cli(prog, lambda a: parse_and_run(parser, command.run, a), argv)


def run_old_form(module: str) -> int:
    """``python -m module``: run the verb its program is now, under the form's own name, or
    (a module that was never one program) say in one line what to run: exit code 2."""
    import sys

    verb = MOVED_PROGRAMS.get(module)
    if verb is None:
        print(f"python -m {module}: error: no program of its own: run coldstart VERB "
              "(coldstart --help lists them)", file=sys.stderr)
        return 2
    command = _verb_command(verb)
    return run_program(module, command.add_arguments, command.run)
