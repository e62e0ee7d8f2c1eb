"""``kubeplane store ls | get | watch`` (issue 11): seed 001's etcd helper on kubeplane's SQLite store.

Stores are written directly through :class:`SqliteStore` in a temporary data directory (the layout
``kubeplane apiserver --data-dir`` uses: DATA_DIR/store.db); one test reads what a real apiserver wrote, and one
watches while a separate writer process is writing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.cli.store import json_diff
from kubeplane.client.http import HTTPClient
from kubeplane.store.sqlite import SqliteStore

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
POD_KEY = "/registry/pods/default/myapp"
SIBLING_KEY = "/registry/pods/default/myapp-2"  # shares POD_KEY as a string prefix: a watch on POD_KEY skips it
NODE_KEY = "/registry/minions/node01"

runner = CliRunner()


def created_pod() -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "myapp", "namespace": "default", "uid": "u-1", "labels": {"app": "myapp"}},
        "spec": {"containers": [{"name": "myapp", "image": "nginx"}], "schedulerName": "default-scheduler"},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def bound_pod() -> dict[str, Any]:
    pod = created_pod()
    pod["spec"]["nodeName"] = "node01"
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    return pod


def running_pod() -> dict[str, Any]:
    pod = bound_pod()
    pod["status"].update(
        phase="Running",
        hostIP="192.168.1.11",
        podIP="10.244.1.5",
        conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        containerStatuses=[
            {"name": "myapp", "ready": True, "state": {"running": {"startedAt": "2025-01-01T00:00:05Z"}}}
        ],
    )
    return pod


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()


async def write_seed_001(path: Path) -> dict[str, int]:
    """Seed 001's flow: node, pod created → bound (nodeName) → Running (container state, IP), a sibling pod,
    then the pod deleted. Returns the revision of each step."""
    store = SqliteStore(path)
    try:
        node = await store.create(NODE_KEY, encode({"kind": "Node", "metadata": {"name": "node01"}}))
        created = await store.create(POD_KEY, encode(created_pod()))
        sibling = await store.create(SIBLING_KEY, encode({"kind": "Pod", "metadata": {"name": "myapp-2"}}))
        bound = await store.update(POD_KEY, encode(bound_pod()))
        running = await store.update(POD_KEY, encode(running_pod()))
        deleted = await store.delete(POD_KEY)
    finally:
        await store.close()
    return {
        "node": node.mod_revision,
        "created": created.mod_revision,
        "sibling": sibling.mod_revision,
        "bound": bound.mod_revision,
        "running": running.mod_revision,
        "deleted": deleted.revision,
    }


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    data_dir = tmp_path / "data"
    revisions = asyncio.run(write_seed_001(data_dir / "store.db"))
    return data_dir, revisions


def store(data_dir: Path, *args: str) -> Any:
    return runner.invoke(app, ["store", *args, "--data-dir", str(data_dir)])


def parse_watch(output: str) -> list[tuple[str, list[str]]]:
    """The watch output as (header, body lines without the two-space indent) per event."""
    events: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        if line.startswith(("PUT ", "DELETE ")):
            events.append((line, []))
        else:
            assert line.startswith("  "), line
            events[-1][1].append(line[2:])
    return events


# -- ls ------------------------------------------------------------------------------------------------------


def test_ls_lists_live_keys_in_key_order(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, _ = seeded
    result = store(data_dir, "ls")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [NODE_KEY, SIBLING_KEY]  # POD_KEY was deleted


def test_ls_with_a_prefix_and_at_a_past_revision(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    assert store(data_dir, "ls", "/registry/pods/").stdout.splitlines() == [SIBLING_KEY]
    at_running = store(data_dir, "ls", "/registry/pods/", "--revision", str(revisions["running"]))
    assert at_running.stdout.splitlines() == [POD_KEY, SIBLING_KEY]
    at_created = store(data_dir, "ls", "--revision", str(revisions["created"]))
    assert at_created.stdout.splitlines() == [NODE_KEY, POD_KEY]
    assert store(data_dir, "ls", "/registry/services/").stdout == ""


# -- get -----------------------------------------------------------------------------------------------------


def test_get_prints_a_header_and_the_value_as_json(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    result = store(data_dir, "get", SIBLING_KEY)
    assert result.exit_code == 0, result.output
    header, *body = result.stdout.splitlines()
    sibling = revisions["sibling"]
    assert header == f"{SIBLING_KEY} create_revision={sibling} mod_revision={sibling} version=1"
    assert json.loads("\n".join(body)) == {"kind": "Pod", "metadata": {"name": "myapp-2"}}
    assert len(body) > 1  # indented, not one line


def test_get_at_past_revisions_shows_each_version(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    for step, version, expected in (
        ("created", 1, created_pod()),
        ("sibling", 1, created_pod()),  # unchanged between writes to other keys
        ("bound", 2, bound_pod()),
        ("running", 3, running_pod()),
    ):
        result = store(data_dir, "get", POD_KEY, "--revision", str(revisions[step]))
        assert result.exit_code == 0, result.output
        header, *body = result.stdout.splitlines()
        mod = revisions["created"] if version == 1 else revisions["bound" if version == 2 else "running"]
        assert header == f"{POD_KEY} create_revision={revisions['created']} mod_revision={mod} version={version}"
        assert json.loads("\n".join(body)) == expected


def test_get_of_a_missing_key_is_a_one_line_error(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    deleted = store(data_dir, "get", POD_KEY)
    assert deleted.exit_code == 1
    assert deleted.stdout == ""
    assert deleted.stderr == f"error: key not found: {POD_KEY}\n"
    before = store(data_dir, "get", POD_KEY, "--revision", str(revisions["node"]))
    assert before.exit_code == 1
    assert before.stderr == f"error: key not found at revision {revisions['node']}: {POD_KEY}\n"


def test_revision_zero_is_the_current_one_and_future_or_negative_ones_are_errors(
    seeded: tuple[Path, dict[str, int]],
) -> None:
    data_dir, revisions = seeded
    assert store(data_dir, "ls", "--revision", "0").stdout.splitlines() == [NODE_KEY, SIBLING_KEY]
    current = revisions["deleted"]
    future = store(data_dir, "get", SIBLING_KEY, "--revision", str(current + 1))
    assert future.exit_code == 1
    assert future.stderr == (
        f"error: required revision {current + 1} is a future revision (current revision {current})\n"
    )
    negative = store(data_dir, "ls", "--revision", "-1")
    assert negative.exit_code == 1
    assert negative.stderr == "error: --revision must not be negative, not -1\n"


# -- watch ---------------------------------------------------------------------------------------------------


def test_watch_replays_seed_001_create_bind_run_as_diffs(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    result = store(data_dir, "watch", POD_KEY, "--from-revision", "1", "--timeout", "0.3")
    assert result.exit_code == 0, result.output
    events = parse_watch(result.stdout)
    assert [header for header, _ in events] == [
        f"PUT {POD_KEY} revision={revisions['created']} version=1",
        f"PUT {POD_KEY} revision={revisions['bound']} version=2",
        f"PUT {POD_KEY} revision={revisions['running']} version=3",
        f"DELETE {POD_KEY} revision={revisions['deleted']}",
    ]  # neither the node nor the sibling pod myapp-2
    assert json.loads("\n".join(events[0][1])) == created_pod()
    assert events[1][1] == ['+ spec.nodeName: "node01"', '+ status.conditions[type=PodScheduled].status: "True"']
    assert events[2][1] == [
        '~ status.phase: "Pending" -> "Running"',
        '+ status.conditions[type=Ready].status: "True"',
        '+ status.hostIP: "192.168.1.11"',
        '+ status.podIP: "10.244.1.5"',
        "+ status.containerStatuses[name=myapp].ready: true",
        '+ status.containerStatuses[name=myapp].state.running.startedAt: "2025-01-01T00:00:05Z"',
    ]
    assert events[3][1] == []


def test_watch_from_a_later_revision_shows_the_first_version_whole(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, revisions = seeded
    result = store(
        data_dir, "watch", "/registry/pods/", "--from-revision", str(revisions["sibling"]), "--timeout", "0.3"
    )
    assert result.exit_code == 0, result.output
    events = parse_watch(result.stdout)
    assert [header.split(" revision=")[0] for header, _ in events] == [
        f"PUT {SIBLING_KEY}",
        f"PUT {POD_KEY}",
        f"PUT {POD_KEY}",
        f"DELETE {POD_KEY}",
    ]
    assert json.loads("\n".join(events[1][1])) == bound_pod()  # first seen: whole, though an update
    assert events[2][1][0] == '~ status.phase: "Pending" -> "Running"'


def test_watch_without_from_revision_starts_at_the_next_write(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, _ = seeded
    result = store(data_dir, "watch", "/registry/", "--timeout", "0.3")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_watch_follows_a_writer_process_and_waits_for_a_key_not_yet_there(tmp_path: Path) -> None:
    """The server's situation: another process holds the store open and writes; the watcher polls the file.
    The watched key does not exist when the watch starts; Ctrl-C (SIGINT) ends the watch cleanly."""
    data_dir = tmp_path / "data"
    path = data_dir / "store.db"

    async def init() -> int:
        s = SqliteStore(path)
        kv = await s.create(NODE_KEY, encode({"kind": "Node"}))
        await s.close()
        return kv.mod_revision

    start = asyncio.run(init()) + 1
    writer_script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from kubeplane.store.sqlite import SqliteStore

        async def main() -> None:
            store = SqliteStore({str(path)!r})
            for i, doc in enumerate(json.loads(sys.argv[1])):
                await asyncio.sleep(0.3)
                if i == 0:
                    await store.create({POD_KEY!r}, json.dumps(doc).encode())
                else:
                    await store.update({POD_KEY!r}, json.dumps(doc).encode())
            print("written", flush=True)
            sys.stdin.read()  # keep the store open, as a running server does, until the test closes stdin
            await store.close()

        asyncio.run(main())
        """
    )
    watch_args = [*KUBEPLANE, "store", "watch", POD_KEY, "--from-revision", str(start), "--timeout", "60"]
    watcher = subprocess.Popen(
        [*watch_args, "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", writer_script, json.dumps([created_pod(), bound_pod(), running_pod()])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "written\n"
        # while the writer still holds the store open: get and ls read it too
        got = store(data_dir, "get", POD_KEY)
        assert got.exit_code == 0, got.output
        assert json.loads("\n".join(got.stdout.splitlines()[1:])) == running_pod()
        assert store(data_dir, "ls").stdout.splitlines() == [NODE_KEY, POD_KEY]
        assert watcher.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 30
        while not any("state.running.startedAt" in line for line in lines):
            assert time.monotonic() < deadline, lines
            line = watcher.stdout.readline()
            assert line, f"watch ended early: {lines}"
            lines.append(line.rstrip("\n"))
        os.kill(watcher.pid, signal.SIGINT)
        _, stderr = watcher.communicate(timeout=90)  # a loaded CI machine: the exit after SIGINT can take long
    finally:
        if watcher.poll() is None:  # only when the test failed before its SIGINT
            watcher.kill()
            watcher.communicate(timeout=20)
        try:
            writer.communicate(timeout=20)  # closes its stdin: the writer closes the store and exits
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    assert writer.returncode == 0
    assert watcher.returncode == 0, stderr
    assert "Traceback" not in stderr
    events = parse_watch("\n".join(lines))
    assert [header for header, _ in events] == [
        f"PUT {POD_KEY} revision={start} version=1",
        f"PUT {POD_KEY} revision={start + 1} version=2",
        f"PUT {POD_KEY} revision={start + 2} version=3",
    ]
    assert json.loads("\n".join(events[0][1])) == created_pod()
    assert events[1][1][0] == '+ spec.nodeName: "node01"'
    assert '+ status.podIP: "10.244.1.5"' in events[2][1]


# -- compaction and other errors -----------------------------------------------------------------------------


def test_compacted_revisions_are_one_line_errors(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"

    async def write() -> None:
        s = SqliteStore(data_dir / "store.db")
        await s.create(POD_KEY, encode(created_pod()))  # 1
        await s.update(POD_KEY, encode(bound_pod()))  # 2
        await s.update(POD_KEY, encode(running_pod()))  # 3
        await s.compact(3)
        await s.close()

    asyncio.run(write())
    message = "error: required revision {} has been compacted (compacted revision 3)\n"
    for args, requested in (
        (["get", POD_KEY, "--revision", "2"], 2),
        (["ls", "--revision", "1"], 1),
        (["watch", POD_KEY, "--from-revision", "1", "--timeout", "5"], 1),
        (["watch", POD_KEY, "--from-revision", "3", "--timeout", "5"], 3),  # the contract: watching from it is refused
    ):
        result = store(data_dir, *args)
        assert result.exit_code == 1, args
        assert result.stdout == ""
        assert result.stderr == message.format(requested), args
    # the compacted revision itself still reads
    kept = store(data_dir, "get", POD_KEY, "--revision", "3")
    assert kept.exit_code == 0, kept.output
    assert json.loads("\n".join(kept.stdout.splitlines()[1:])) == running_pod()


def test_a_bad_data_dir_is_a_one_line_error(tmp_path: Path) -> None:
    missing = store(tmp_path / "nowhere", "ls")
    assert missing.exit_code == 1
    assert missing.stderr == (
        f"error: no data directory {tmp_path / 'nowhere'} "
        f"(start `kubeplane apiserver --data-dir {tmp_path / 'nowhere'}` first)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    no_store = store(empty, "get", POD_KEY)
    assert no_store.exit_code == 1
    assert no_store.stderr.startswith(f"error: no store at {empty / 'store.db'} ")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "store.db").write_bytes(b"this is not a database, just some text" * 100)
    for args in (["ls"], ["get", POD_KEY], ["watch", POD_KEY, "--timeout", "1"]):
        result = store(garbage, *args)
        assert result.exit_code == 1, args
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith("error: "), result.stderr
        assert "Traceback" not in result.output


def test_an_unreachable_etcd_is_one_line(seeded: tuple[Path, dict[str, int]]) -> None:
    data_dir, _ = seeded
    result = store(data_dir, "ls", "--etcd-servers", "http://127.0.0.1:1")
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: cannot reach etcd at http://127.0.0.1:1: ")


def test_the_commands_read_etcd_behind_an_api_server(tmp_path: Path) -> None:
    """``--etcd-servers``: the same commands on the keys kube-apiserver's layout puts in etcd."""
    from tests.apiserver.conftest import start_server
    from tests.store.etcd_cluster import EtcdCluster

    cluster = EtcdCluster(tmp_path / "etcd").start()
    servers = ",".join(cluster.endpoints)
    try:
        server = start_server(tmp_path / "data", "--store", "etcd", "--etcd-servers", servers)
        try:
            client_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myapp"},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
            created = asyncio.run(_create_pod(server.kubeconfig, client_pod))
        finally:
            server.stop()
        keys = subprocess.run([*KUBEPLANE, "store", "ls", "/registry/pods/", "--etcd-servers", servers],
                              capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
        assert keys.splitlines() == [POD_KEY]
        got = subprocess.run([*KUBEPLANE, "store", "get", POD_KEY, "--etcd-servers", servers],
                             capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
        header, body = got.split("\n", 1)
        assert header.startswith(f"{POD_KEY} create_revision={created} mod_revision={created} version=1")
        assert json.loads(body)["metadata"]["name"] == "myapp"
        command = [*KUBEPLANE, "store", "watch", POD_KEY, "--from-revision", "1", "--timeout", "2"]
        watched = subprocess.run(
            [*command, "--etcd-servers", servers], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        assert watched.splitlines()[0] == f"PUT {POD_KEY} revision={created} version=1"
    finally:
        cluster.stop()


async def _create_pod(kubeconfig: Path, pod: dict[str, Any]) -> int:
    client = HTTPClient.from_kubeconfig(kubeconfig)
    try:
        created = await client.create(client.resource("pods"), pod, namespace="default")
        return int(created["metadata"]["resourceVersion"])
    finally:
        await client.close()


def test_store_commands_are_listed_in_help() -> None:
    result = runner.invoke(app, ["store", "--help"])
    assert result.exit_code == 0
    for command in ("ls", "get", "watch"):
        assert command in result.stdout
    watch_help = runner.invoke(app, ["store", "watch", "--help"])
    for flag in ("--from-revision", "--timeout", "--data-dir", "--etcd-servers"):
        assert flag in watch_help.stdout


def test_reads_what_a_real_apiserver_wrote(tmp_path: Path) -> None:
    """The layout assumption (DATA_DIR/store.db, kube-apiserver's keys, JSON values) against the real server,
    read while it runs."""
    from kubeplane.client.http import HTTPClient
    from tests.apiserver.conftest import start_server

    server = start_server(tmp_path / "data")
    try:

        async def create() -> None:
            client = HTTPClient.from_kubeconfig(server.kubeconfig)
            try:
                await client.create(client.resource("nodes"), {"metadata": {"name": "node01"}})
                pod = {"metadata": {"name": "myapp"}, "spec": {"containers": [{"name": "myapp", "image": "nginx"}]}}
                await client.create(client.resource("pods"), pod, namespace="default")
            finally:
                await client.close()

        asyncio.run(create())
        listed = store(server.data_dir, "ls").stdout.splitlines()
        assert NODE_KEY in listed
        assert POD_KEY in listed
        got = store(server.data_dir, "get", POD_KEY)
        assert got.exit_code == 0, got.output
        pod = json.loads("\n".join(got.stdout.splitlines()[1:]))
        assert pod["metadata"]["name"] == "myapp"
        assert "resourceVersion" not in pod["metadata"]  # the store's revision is the header's
        assert pod["spec"]["containers"][0]["image"] == "nginx"
    finally:
        server.stop()


# -- the diff ------------------------------------------------------------------------------------------------


def test_json_diff_paths_for_added_changed_and_removed_fields() -> None:
    old = {"metadata": {"annotations": {"x": "1", "keep": "k"}, "labels": {"app.kubernetes.io/name": "a"}}, "n": 1}
    new = {"metadata": {"annotations": {"keep": "k"}, "labels": {"app.kubernetes.io/name": "b"}}, "n": 1.5, "e": {}}
    assert json_diff(old, new) == [
        "- metadata.annotations.x",
        '~ metadata.labels["app.kubernetes.io/name"]: "a" -> "b"',
        "~ n: 1 -> 1.5",
        "+ e: {}",
    ]
    assert json_diff(old, old) == []


def test_json_diff_matches_list_elements_by_merge_key_or_index() -> None:
    old = {
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}],
        "args": ["a", "b", "c"],
        "tolerations": [{"key": "k", "effect": "NoSchedule"}],
    }
    new = {
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
        "args": ["a", "x"],
        "tolerations": [{"key": "k", "effect": "NoExecute"}, {"key": "j"}],
    }
    assert json_diff(old, new) == [
        '~ conditions[type=Ready].status: "False" -> "True"',
        '+ conditions[type=Initialized].status: "True"',
        "- conditions[type=PodScheduled]",
        '~ args[1]: "b" -> "x"',
        "- args[2]",
        '~ tolerations[0].effect: "NoSchedule" -> "NoExecute"',
        '+ tolerations[1].key: "j"',
    ]


def test_json_diff_type_changes_and_bool_versus_number() -> None:
    assert json_diff({"a": 1}, {"a": True}) == ["~ a: 1 -> true"]
    assert json_diff({"a": {"b": 1}}, {"a": [1]}) == ['~ a: {"b": 1} -> [1]']
    assert json_diff({"a": None}, {"a": "x"}) == ['~ a: null -> "x"']
    # duplicate names: no merge key, so element by element
    assert json_diff([{"name": "a"}, {"name": "a"}], [{"name": "a"}]) == ["- [1]"]
