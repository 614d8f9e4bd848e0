"""``python -m coldstart.readme``: write the verbs' table (``coldstart.verbs_markdown``)
between the README's ``<!-- verbs -->`` and ``<!-- /verbs -->`` markers; ``--check`` exits 1
where the README's table is not the current one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coldstart import verbs_markdown

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- verbs -->\n", "<!-- /verbs -->\n"


def with_current_table(text: str) -> str:
    """``text`` with its verbs' table made anew (ValueError: a marker is missing)."""
    if START not in text or END not in text:
        raise ValueError(f"the README has no {START.strip()} ... {END.strip()} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}{verbs_markdown()}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coldstart.readme", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = parser.parse_args(argv)
    text = README.read_text()
    current = with_current_table(text)
    if args.check:
        if current != text:
            print("README.md: the verbs' table is stale: python -m coldstart.readme",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(current)
    return 0


if __name__ == "__main__":
    sys.exit(main())
