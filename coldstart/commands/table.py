"""``coldstart table RUN.json ... [--markdown]``: one row per cell, the phases as columns.

What an operator reads first: where the seconds of each configuration went, what the caches
did, and how fast the weights came in against what the storage gives (the rows are
``analysis.table.rows``)."""

from __future__ import annotations

import argparse

from analysis.table import rows
from document import read_results
from document.boot_result import SchemaError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "one row per cell, the phases as columns"
    parser.add_argument("json", nargs="+")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")


def run(args: argparse.Namespace) -> int:
    results = [r for path in args.json for r in read_results(path)]
    if not results:  # a run that booted nothing is worth saying, not an empty table
        raise SchemaError(f"{', '.join(args.json)}: no boot in it (no benchmark, nothing "
                          "unrecorded)")
    headers, body = rows(results)
    if args.markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for row in body:
            print("| " + " | ".join(row) + " |")
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(*headers)
    for row in body:
        table.add_row(*row)
    Console(width=300).print(table)
    return 0
