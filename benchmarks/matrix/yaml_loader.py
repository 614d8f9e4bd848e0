"""Reading a matrix file's YAML: one key given twice is an error, booleans as YAML 1.2 reads
them, and pydantic's error locations mapped back to the file's line numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["UniqueKeyLoader", "locate"]


def locate(node: yaml.Node | None, loc: Iterable[Any]) -> tuple[int | None, list[Any]]:
    """The 1-based line of the YAML node at pydantic's error location ``loc``, and the part
    of ``loc`` that is in the file (pydantic adds names of types: ``list[...]``, ``str``)."""
    line = node.start_mark.line + 1 if node is not None else None
    keys: list[Any] = []
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value
                          if isinstance(k, yaml.ScalarNode) and k.value == str(key)), None)
            if found is None:
                continue
            node = found
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) \
                and 0 <= key < len(node.value):
            node = node.value[key]
        else:
            continue
        keys.append(key)
        line = node.start_mark.line + 1
    return line, keys


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping (PyYAML keeps the last silently),
    and reads booleans as YAML 1.2 does (true/false only): in PyYAML's YAML 1.1 ``off``,
    ``on``, ``yes`` and ``no`` are booleans, and ``compile_cache: [cold, warm, off]`` would
    name False."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice (first on line {seen[key]})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))

