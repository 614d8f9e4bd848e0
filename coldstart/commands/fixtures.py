"""``coldstart fixtures list | build [NAME ...|--all] | path NAME``: see and build the fixtures.

Names are model names (``CATALOG``) or tokenizer names (``TOKENIZERS``). Building prints one
progress line per step on stderr and a summary line per fixture on stdout; an unknown name is a
one-line error and exit status 2, a failed build exit status 1 after the others are built.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from document.errors import InputError, UsageError
from fixtures.build import ensure_model, ensure_tokenizer
from fixtures.catalog import (
    CATALOG,
    TOKENIZERS,
    UnknownFixtureError,
    fixture_root,
    model_dir,
    read_manifest,
    tokenizer_dir,
    tokenizer_fixture,
)


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _count(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def _list() -> int:
    print(f"fixture root: {fixture_root()}")
    print(f"\n{'model':44} {'kind':9} {'group':12} {'layers':>6} {'tokenizer':18} {'params':>8} {'disk':>9}")
    for spec in CATALOG.values():
        manifest = read_manifest(model_dir(spec.name)) or {}
        print(f"{spec.name:44} {spec.kind:9} {spec.group:12} {spec.layers:>6} {spec.tokenizer:18} "
              f"{_count(manifest.get('param_count')):>8} {_size(manifest.get('disk_bytes')):>9}")
    print(f"\n{'tokenizer':18} {'family':18} {'vocab':>7} {'tokenizer.json':>14}  source")
    for spec in TOKENIZERS.values():
        manifest = read_manifest(tokenizer_dir(spec.name)) or {}
        vocab = manifest.get("vocab_size")
        print(f"{spec.name:18} {spec.family:18} {vocab if vocab else '-':>7} "
              f"{_size(manifest.get('tokenizer_json_bytes')):>14}  {spec.source_package}: {spec.source_file}")
    print("\n(params, vocab and sizes appear once built: coldstart fixtures build --all)")
    return 0


def _build(names: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    started = time.monotonic()

    class _Elapsed(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.msg = f"[{time.monotonic() - started:7.1f}s] {record.msg}"
            return True

    logging.getLogger("fixtures").addFilter(_Elapsed())
    failed = 0
    for name in names:
        try:
            path = ensure_tokenizer(name) if name in TOKENIZERS else ensure_model(name)
        except Exception as exc:  # keep building the others; never drop a failure
            failed += 1
            print(f"FAILED {name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  flush=True)
            continue
        m = read_manifest(path) or {}
        what = (f"vocab {m.get('vocab_size')}" if m.get("kind") == "tokenizer"
                else f"{_count(m.get('param_count'))} params, {m.get('num_layers')} layers")
        print(f"ok     {name:44} {what:28} {_size(m.get('disk_bytes')):>9}  built in {m.get('build_s')} s"
              f"  {path}", flush=True)
    print(f"{len(names) - failed} of {len(names)} fixtures ready in {time.monotonic() - started:.1f} s "
          f"under {fixture_root()}", flush=True)
    return 1 if failed else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("See and build the model folders and tokenizers the benchmarks boot "
                          "(list, build NAME... | --all, path NAME).")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every fixture, with sizes of the built ones")
    build = commands.add_parser("build", help="build fixtures (tokenizers first); idempotent")
    build.add_argument("names", nargs="*", metavar="NAME")
    build.add_argument("--all", action="store_true", help="every tokenizer and model")
    path = commands.add_parser("path", help="print a fixture's folder, building it if needed")
    path.add_argument("name", metavar="NAME")


def run(args: argparse.Namespace) -> int:
    if args.command == "list":
        return _list()
    names = [args.name] if args.command == "path" else list(args.names)
    if args.command == "build":
        if args.all:
            names = list(TOKENIZERS) + list(CATALOG)
        elif not names:
            raise UsageError("build: name a fixture or pass --all")
    for name in names:  # all names are checked before anything is built
        try:
            tokenizer_fixture(name)  # knows model names too
        except UnknownFixtureError as exc:
            raise InputError(str(exc)) from None
    if args.command == "path":
        name = names[0]
        print(ensure_tokenizer(name) if name in TOKENIZERS else ensure_model(name))
        return 0
    return _build(names)
