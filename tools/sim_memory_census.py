"""Where a simulation's memory goes: a census of the heap at one simulated moment (docs/sim.md's Memory table).

Runs ``bench/sim_bench.py``'s scenario scaled to ``--nodes``/``--pods`` and, at the first sample at or after
``--at`` simulated seconds, counts (after a full ``gc.collect``):

* the decoded objects alive (the watch caches' :class:`~kubeplane.apiserver.watchevent.Decoded` dicts, whoever
  holds them) by kind: how many, for how many distinct objects (versions held), and their bytes with every
  shared part counted once (``sys.getsizeof`` over dicts, lists and their strings);
* the memory store's values: the current ones by resource, and those only the history holds.

Each is printed in MB and in bytes per pod created; the resident set is read before the census allocates.
Slow (a walk of every decoded object): use it on a 1,000-node run at most.

Run: ``PYTHONPATH=src .venv/bin/python tools/sim_memory_census.py --nodes 1000 --pods 10000 --until 1800
--at 1740`` (point ``PYTHONPATH`` at another checkout's ``src`` to census that version).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from kubeplane.apiserver.watchevent import Decoded
from kubeplane.sim.memory import rss_bytes
from kubeplane.sim.runner import Progress, run
from kubeplane.sim.scenario import Scenario
from kubeplane.store.memory import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from sim_bench import DEFAULT_SCENARIO, scaled

KINDS = ("Pod", "Node", "Event", "Lease")
MB = 2**20


def deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes of ``obj`` and everything under it not in ``seen`` (which it extends)."""
    total, stack = 0, [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def resource_of(key: str) -> str:
    parts = key.split("/")
    return parts[2] if len(parts) > 2 else key


def census(t: float, pods: int) -> None:
    rss = rss_bytes()
    gc.collect()
    objects = gc.get_objects()
    by_kind: dict[str, list[Decoded]] = defaultdict(list)
    for obj in objects:
        if type(obj) is Decoded:
            by_kind[str(obj.get("kind") or "?")].append(obj)
    rows: dict[str, int] = Counter()
    seen: set[int] = set()
    print(f"t={t:.0f} s, {pods} pods created, resident set {rss / MB:.0f} MB")
    for kind, objs in sorted(by_kind.items(), key=lambda item: -len(item[1])):
        distinct = len({(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs})
        size = sum(deep_size(o, seen) for o in objs)
        rows[f"decoded {kind if kind in KINDS else 'other'}"] += size
        print(f"  decoded {kind:<20} {len(objs):7d} held for {distinct:7d} objects {size / MB:8.1f} MB")
    for store in (o for o in objects if type(o) is MemoryStore):
        current, _, _ = store._index.range("", start_key=None, limit=0)
        current_bytes: Counter[str] = Counter()
        for kv in current:
            current_bytes[resource_of(kv.key)] += len(kv.value)
        held = {id(kv.value) for kv in current}
        history: Counter[str] = Counter()
        for event in store._log:
            for version in (event.kv, event.prev_kv):
                if version is not None and id(version.value) not in held:
                    held.add(id(version.value))
                    history[resource_of(version.key)] += len(version.value)
        for resource in ("events", "pods"):
            rows[f"stored {resource} (current)"] += current_bytes.pop(resource, 0)
        rows["stored other (current)"] += sum(current_bytes.values())
        rows["stored history only"] += sum(history.values())
        print("  history only: " + ", ".join(f"{r} {b / MB:.1f} MB" for r, b in history.most_common(4)))
    for name, size in rows.items():
        print(f"  {name:<28} {size / MB:8.1f} MB {size / max(pods, 1):8.0f} B/pod")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--until", type=float, default=1800.0)
    parser.add_argument("--at", type=float, default=1740.0, help="simulated seconds")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = scaled(Scenario.load(DEFAULT_SCENARIO), args.nodes, args.pods)
    done: list[bool] = []

    def progress(p: Progress) -> None:
        if not done and p.t >= args.at:
            done.append(True)
            census(p.t, p.pods_created)

    run(scenario, seed=args.seed, until=args.until, progress=progress)


if __name__ == "__main__":
    main()
