"""Files only the API server's user may read (the admin token, the ServiceAccount signing key).

Invariant: the file is created 0600 whatever the umask and appears whole or not at all (written to a temporary
name in the same directory, fsynced, then renamed over the target), so a crash never leaves a half key behind.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
