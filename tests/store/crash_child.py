"""Child process of the crash test: writes forever and reports each acknowledged write on stdout.

Usage: ``python crash_child.py DB DURABILITY SEED``. Prints ``ready <revision>`` once open, then one line
``<op> <revision> <key> <value-hex>`` after each write returns (i.e. is acknowledged). The parent kills it
with SIGKILL at a random moment; only complete lines count as acknowledged.
"""

from __future__ import annotations

import asyncio
import random
import sys

from kubeplane.store.interface import KeyExists, NotFound
from kubeplane.store.sqlite import Durability, SqliteStore


async def main(path: str, durability: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SqliteStore(path, durability=Durability(durability))
    out = sys.stdout
    out.write(f"ready {store.revision}\n")
    out.flush()
    counter = 0

    async def writer(n: int) -> None:
        nonlocal counter
        while True:
            key = f"/crash/{n}/{rng.randrange(50)}"
            counter += 1
            value = f"{seed}-{counter}".encode()
            op = rng.random()
            try:
                if op < 0.15:
                    deleted = await store.delete(key)
                    line = f"delete {deleted.revision} {key} -\n"
                elif op < 0.5:
                    kv = await store.create(key, value)
                    line = f"create {kv.mod_revision} {key} {value.hex()}\n"
                else:
                    kv = await store.update(key, value)
                    line = f"update {kv.mod_revision} {key} {value.hex()}\n"
            except (KeyExists, NotFound):
                continue
            out.write(line)
            out.flush()

    await asyncio.gather(*(writer(n) for n in range(4)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
