"""``kubeplane store ls | get | watch``: look inside the API server's store, as seed 001 does with an etcd helper.

The commands open ``DATA_DIR/store.db`` (the file ``kubeplane apiserver --data-dir DATA_DIR`` writes) read-only
through :class:`~kubeplane.store.sqlite_reader.SqliteReader`, so they work while the server runs and never write:
the server stays the one writer. Keys are kube-apiserver's (``/registry/pods/<ns>/<name>``,
``/registry/minions/<name>``, ...) and values are the objects' JSON, stored without ``metadata.resourceVersion``
(the revision is the store's own, printed in each header line instead).

Output is plain text meant for people and for ``grep``/tests alike:

* ``ls [PREFIX]``: the live keys starting with PREFIX (etcd's plain string prefix, default ``/registry/``), one a
  line, in key order.
* ``get KEY``: a header ``KEY create_revision=C mod_revision=M version=V``, then the value as indented JSON.
* ``watch KEY-OR-PREFIX``: one header per event, ``PUT KEY revision=R version=V`` or ``DELETE KEY revision=R``.
  The first PUT seen for a key (and a re-create after a delete) is followed by the whole value as indented JSON,
  every later PUT by the differences to the key's previous version, one path a line (:func:`json_diff`).

Every error a user can cause (missing store, missing key, compacted or future revision) is one line on stderr,
``error: ...``, with exit code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from kubeplane.store.interface import Compacted, Event, EventType, KeyValue, RangeResult, StoreError
from kubeplane.store.sqlite_reader import SqliteReader

__all__ = ["EtcdReader", "json_diff", "store_app"]

T = TypeVar("T")

store_app = typer.Typer(
    name="store",
    help="Inspect the API server's store (read-only, also while the server runs): ls, get, watch.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

STORE_FILE = "store.db"  # the apiserver's layout: DATA_DIR/store.db (kubeplane.apiserver.server.make_store)
DEFAULT_PREFIX = "/registry/"
POLL_INTERVAL = 0.1  # seconds between polls of the log while watching

DataDirOpt = Annotated[
    Path,
    typer.Option("--data-dir", help="The apiserver's state directory; the store is DATA_DIR/store.db."),
]
EtcdServersOpt = Annotated[
    str | None,
    typer.Option("--etcd-servers", help="Read etcd instead (comma-separated URLs; raw etcd keys)."),
]
RevisionOpt = Annotated[
    int | None,
    typer.Option("--revision", help="Read as of this revision (default, or 0: the current one, as etcd)."),
]


class _UserError(Exception):
    """One line for the user."""


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@contextlib.contextmanager
def _open(data_dir: Path, etcd_servers: str | None) -> Iterator[SqliteReader | EtcdReader]:
    """The reader on DATA_DIR/store.db; every failure a user can cause ends the command with one line.

    SQLite reports a file that is not a database, or not kubeplane's, only at the first query, so query errors
    inside the ``with`` block are turned into one-line errors as well.
    """
    if etcd_servers is not None:
        with _open_etcd(etcd_servers) as etcd:
            yield etcd
        return
    path = data_dir / STORE_FILE
    if not data_dir.is_dir():
        _fail(f"no data directory {data_dir} (start `kubeplane apiserver --data-dir {data_dir}` first)")
    if not path.is_file():
        _fail(f"no store at {path} (start `kubeplane apiserver --data-dir {data_dir}` first)")
    try:
        reader = SqliteReader(path)
    except (StoreError, sqlite3.Error) as exc:
        _fail(f"cannot open {path}: {exc}")
    try:
        yield reader
    except StoreError as exc:
        _fail(str(exc))
    except sqlite3.Error as exc:
        _fail(f"cannot read {path}: {exc} (is it a kubeplane store?)")
    except _UserError as exc:
        _fail(str(exc))
    finally:
        reader.close()


class EtcdReader:
    """The reader interface of :class:`SqliteReader` over an etcd cluster (raw etcd keys: any prefix works),
    on an event loop of its own so the synchronous commands can use it; :meth:`run` runs a coroutine there."""

    def __init__(self, endpoints: list[str]) -> None:
        from kubeplane.store.etcd import EtcdOptions, EtcdStore

        self._loop = asyncio.new_event_loop()
        self._store = EtcdStore(EtcdOptions(endpoints=endpoints, key_prefix="", store_root="", dial_timeout=3.0))
        self.run(self._store.start())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    @property
    def revision(self) -> int:
        return self._store.revision

    @property
    def compacted_revision(self) -> int:
        return self._store.compacted_revision

    def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        return self.run(self._store.get(key, revision=revision))

    def range(self, prefix: str, *, revision: int | None = None) -> RangeResult:
        return self.run(self._store.range(prefix, revision=revision))

    def events(self, prefix: str, *, first: int, last: int | None = None) -> list[Event]:
        """Only the compaction check of ``watch`` uses it: history is read through :meth:`follow`."""
        if first <= self.compacted_revision:
            raise Compacted(first, self.compacted_revision)
        return []

    async def follow(self, prefix: str, *, start_revision: int, poll_interval: float = 0.0) -> AsyncIterator[Event]:
        watch = self._store.watch(prefix, start_revision=start_revision)
        try:
            async for event in watch:
                yield event
        finally:
            watch.close()

    def close(self) -> None:
        try:
            self.run(self._store.close())
        finally:
            self._loop.close()


@contextlib.contextmanager
def _open_etcd(etcd_servers: str) -> Iterator[EtcdReader]:
    endpoints = [u.strip() for u in etcd_servers.split(",") if u.strip()]
    if not endpoints:
        _fail("--etcd-servers needs at least one URL")
    try:
        reader = EtcdReader(endpoints)
    except StoreError as exc:
        _fail(f"cannot reach etcd at {', '.join(endpoints)}: {str(exc).rstrip(': ')}")
    try:
        yield reader
    except (StoreError, _UserError) as exc:
        _fail(str(exc))
    finally:
        reader.close()


def _run(reader: SqliteReader | EtcdReader, coro: Coroutine[Any, Any, None]) -> None:
    """Run on the reader's own loop (etcd's client belongs to one), or a fresh one."""
    if isinstance(reader, EtcdReader):
        reader.run(coro)
    else:
        asyncio.run(coro)


def _revision(revision: int | None) -> int | None:
    """etcd's convention: revision 0 (or none) reads at the current revision; negative ones are refused."""
    if revision is None or revision == 0:
        return None
    if revision < 0:
        raise _UserError(f"--revision must not be negative, not {revision}")
    return revision


def _decode(value: bytes) -> Any:
    """The value as JSON, or (for a value that is not JSON) its text, so that nothing is hidden."""
    try:
        return json.loads(value)
    except ValueError:
        return value.decode("utf-8", errors="replace")


def _pretty(value: bytes) -> str:
    decoded = _decode(value)
    if isinstance(decoded, str):
        return decoded
    return json.dumps(decoded, indent=2, ensure_ascii=False)


@store_app.command("ls")
def ls(
    prefix: Annotated[str, typer.Argument(help="Key prefix (etcd's: a plain string prefix).")] = DEFAULT_PREFIX,
    revision: RevisionOpt = None,
    data_dir: DataDirOpt = Path(".kubeplane"),
    etcd_servers: EtcdServersOpt = None,
) -> None:
    """List the keys starting with PREFIX (default /registry/), one a line."""
    with _open(data_dir, etcd_servers) as reader:
        result = reader.range(prefix, revision=_revision(revision))
        for kv in result.kvs:
            typer.echo(kv.key)


@store_app.command("get")
def get(
    key: Annotated[str, typer.Argument(help="The exact key, e.g. /registry/pods/default/myapp.")],
    revision: RevisionOpt = None,
    data_dir: DataDirOpt = Path(".kubeplane"),
    etcd_servers: EtcdServersOpt = None,
) -> None:
    """Print KEY's value as indented JSON after a header line with its revisions."""
    with _open(data_dir, etcd_servers) as reader:
        at = _revision(revision)
        kv = reader.get(key, revision=at)
        if kv is None:
            where = "" if at is None else f" at revision {at}"
            raise _UserError(f"key not found{where}: {key}")
        typer.echo(f"{kv.key} create_revision={kv.create_revision} mod_revision={kv.mod_revision} version={kv.version}")
        typer.echo(_pretty(kv.value))


def _matches(watched: str, key: str) -> bool:
    """Whether a watch on ``watched`` shows ``key``: a trailing ``/`` makes it a directory prefix; otherwise it
    is the key itself or a directory of keys (``/registry/pods/default/web`` shows neither ``.../web-2`` nor
    ``.../webapp``, so one pod's history is never mixed with its siblings')."""
    if watched.endswith("/") or key == watched:
        return key.startswith(watched)
    return key.startswith(watched + "/")


@store_app.command("watch")
def watch(
    key: Annotated[
        str,
        typer.Argument(help="A key (that object, even if it does not exist yet) or a prefix ending in '/'."),
    ],
    from_revision: Annotated[
        int | None,
        typer.Option("--from-revision", help="Replay history from this revision on (default: the next write)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Stop after this many seconds (default: run until Ctrl-C).")
    ] = None,
    data_dir: DataDirOpt = Path(".kubeplane"),
    etcd_servers: EtcdServersOpt = None,
) -> None:
    """Print every change of KEY (or of the keys under it): the first version whole, later ones as a diff."""
    if from_revision is not None and from_revision < 1:
        _fail(f"--from-revision must be at least 1, not {from_revision}")
    if timeout is not None and timeout < 0:
        _fail(f"--timeout must not be negative, not {timeout}")
    with _open(data_dir, etcd_servers) as reader:
        start = reader.revision + 1 if from_revision is None else from_revision
        if start <= reader.compacted_revision:
            # checked here too, so a replay of compacted history fails at once rather than at the first poll
            reader.events(key, first=start, last=start)
        with contextlib.suppress(KeyboardInterrupt):
            _run(reader, _watch(reader, key, start, timeout))


async def _watch(reader: SqliteReader | EtcdReader, watched: str, start: int, timeout: float | None) -> None:
    printer = _EventPrinter()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            async for event in reader.follow(watched, start_revision=start, poll_interval=POLL_INTERVAL):
                if _matches(watched, event.key):
                    for line in printer.lines(event):
                        typer.echo(line)


class _EventPrinter:
    """Turns events into lines, remembering which keys have been shown whole since their last delete."""

    def __init__(self) -> None:
        self._shown: set[str] = set()

    def lines(self, event: Event) -> list[str]:
        kv = event.kv
        if event.type is EventType.DELETE:
            self._shown.discard(kv.key)
            return [f"DELETE {kv.key} revision={kv.mod_revision}"]
        header = f"PUT {kv.key} revision={kv.mod_revision} version={kv.version}"
        if kv.key not in self._shown or event.prev_kv is None:
            self._shown.add(kv.key)
            return [header, *_indent(_pretty(kv.value).splitlines())]
        return [header, *_indent(_diff_lines(event.prev_kv, kv))]


def _indent(lines: list[str]) -> list[str]:
    return ["  " + line for line in lines]


def _diff_lines(old: KeyValue, new: KeyValue) -> list[str]:
    return json_diff(_decode(old.value), _decode(new.value)) or ["(no change)"]


# -- the diff -------------------------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_/-]+")
_MERGE_KEYS = ("name", "type")  # containers/containerStatuses/volumes/env by name, conditions by type
_MISSING = object()


def json_diff(old: Any, new: Any) -> list[str]:
    """The differences from ``old`` to ``new`` (decoded JSON), one line per changed path, in document order.

    ``+ path: value`` for an added leaf (an added object is expanded into its leaves, so every new field gets a
    line of its own), ``~ path: old -> new`` for a changed one, ``- path`` for a removed one (a removed object is
    one line). Paths are dotted (``status.podIP``); keys that are not plain words are quoted
    (``metadata.labels["app.kubernetes.io/name"]``). Lists whose elements all carry a distinct ``name`` (or, failing
    that, ``type``) are matched by it, as strategic merge patch merges containers and conditions
    (``status.conditions[type=Ready].status``); other lists element by element (``spec.tolerations[0]``).
    Values are compact JSON. Equal documents give no lines.
    """
    lines: list[str] = []
    _diff(old, new, "", lines)
    return lines


def _join(path: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _diff(old: Any, new: Any, path: str, lines: list[str]) -> None:
    if old is _MISSING:
        _added(new, path, lines)
    elif new is _MISSING:
        lines.append(f"- {path or '.'}")
    elif isinstance(old, dict) and isinstance(new, dict):
        for key, value in new.items():
            _diff(old.get(key, _MISSING), value, _join(path, key), lines)
        for key in old:
            if key not in new:
                lines.append(f"- {_join(path, key)}")
    elif isinstance(old, list) and isinstance(new, list):
        _diff_list(old, new, path, lines)
    elif old != new or type(old) is not type(new):  # 1 == 1.0 == True in Python, not in JSON
        lines.append(f"~ {path or '.'}: {_show(old)} -> {_show(new)}")


def _added(value: Any, path: str, lines: list[str], identity: str | None = None) -> None:
    """Lines for a new ``value``; ``identity`` is the merge key already named in ``path`` (not repeated)."""
    fields = value
    if isinstance(value, dict) and identity is not None:
        fields = {key: item for key, item in value.items() if key != identity}
    if isinstance(fields, dict) and fields:
        for key, item in fields.items():
            _added(item, _join(path, key), lines)
    elif isinstance(value, list) and value:
        merge_key = _merge_key(value, [])
        for element_path, item in _list_paths(value, path, merge_key):
            _added(item, element_path, lines, merge_key)
    else:
        lines.append(f"+ {path or '.'}: {_show(value)}")


def _merge_key(old: list[Any], new: list[Any]) -> str | None:
    """The key both lists' elements are identified by: every element an object with a distinct string value."""
    elements = old + new
    if not elements or not all(isinstance(e, dict) for e in elements):
        return None
    for key in _MERGE_KEYS:
        for items in (old, new):
            values = [e.get(key) for e in items]
            if not all(isinstance(v, str) for v in values) or len(set(values)) != len(values):
                break
        else:
            return key
    return None


def _list_paths(items: list[Any], path: str, merge_key: str | None) -> list[tuple[str, Any]]:
    if merge_key is None:
        return [(f"{path}[{i}]", item) for i, item in enumerate(items)]
    return [(f"{path}[{merge_key}={item[merge_key]}]", item) for item in items]


def _diff_list(old: list[Any], new: list[Any], path: str, lines: list[str]) -> None:
    merge_key = _merge_key(old, new)
    if merge_key is None:
        for i in range(max(len(old), len(new))):
            _diff(old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING, f"{path}[{i}]", lines)
        return
    previous = {item[merge_key]: item for item in old}
    current = {item[merge_key] for item in new}
    for element_path, item in _list_paths(new, path, merge_key):
        if item[merge_key] in previous:
            _diff(previous[item[merge_key]], item, element_path, lines)
        else:
            _added(item, element_path, lines, merge_key)
    for element_path, item in _list_paths(old, path, merge_key):
        if item[merge_key] not in current:
            lines.append(f"- {element_path}")
