"""``kubeplane up``: every component its own identity, as kubeadm's control plane.

Pins upstream's ``--token-auth-file`` CSV (``pkg/authentication/token/tokenfile``: ``token,user,uid[,"groups"]``),
the components' users (``system:kube-scheduler``, ``system:kube-controller-manager``; kubeplane's fleet
``system:kubeplane:kubelet-fleet``) as ``kubectl auth whoami`` (SelfSubjectReview) reports them through each
component's own kubeconfig, and kube-controller-manager's ``--use-service-account-credentials`` accounts created in
``kube-system`` (``SAControllerClientBuilder``) by the manager in both modes.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

from kubeplane.apiserver.auth.authentication import load_token_file
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.cli.identities import COMPONENT_USERS, TOKEN_FILE, write_component_kubeconfig, write_token_file
from tests.cli.test_up_seeds import KUBECTL, Cluster, _children, _start, _stop, _wait_for_kubeconfig, eventually

CONTROLLER_ACCOUNTS = {"deployment-controller", "replicaset-controller", "node-controller", "job-controller"}


def test_token_file_is_private_upstream_csv_and_stable(tmp_path: Path) -> None:
    tokens = write_token_file(tmp_path)
    path = tmp_path / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    rows = [line.split(",") for line in path.read_text().splitlines()]
    assert sorted(r[1] for r in rows) == sorted(COMPONENT_USERS.values())
    assert all(len(r) == 3 and r[1] == r[2] for r in rows)  # token,user,uid: no groups column
    assert write_token_file(tmp_path) == tokens  # a restart keeps the components' kubeconfigs valid
    users = load_token_file(path)  # system:authenticated is added per request (AuthenticatedGroupAdder)
    assert users[tokens["scheduler"]] == UserInfo("system:kube-scheduler", uid="system:kube-scheduler")
    (tmp_path / "groups.csv").write_text('t1,alice,42,"dev,ops"\n,skipped,1\n')
    assert load_token_file(tmp_path / "groups.csv") == {"t1": UserInfo("alice", uid="42", groups=("dev", "ops"))}


def test_component_kubeconfig_carries_the_components_token(tmp_path: Path) -> None:
    admin = tmp_path / "admin.kubeconfig"
    admin.write_text("users:\n- name: admin\n  user:\n    token: ADMIN\n")
    write_component_kubeconfig(admin, "ADMIN", "SCHED", tmp_path / "s.kubeconfig")
    assert (tmp_path / "s.kubeconfig").read_text() == "users:\n- name: admin\n  user:\n    token: SCHED\n"
    assert stat.S_IMODE((tmp_path / "s.kubeconfig").stat().st_mode) == 0o600


def _whoami(data_dir: Path, kubeconfig: Path) -> str:
    done = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(data_dir / "cache"),
         "auth", "whoami", "-o", "json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["status"]["userInfo"]["username"])


def test_up_processes_components_use_their_own_kubeconfigs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, log = _start(data_dir, "--processes")
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        cluster = Cluster(data_dir, process, log)
        assert _whoami(data_dir, cluster.kubeconfig) == "admin"
        for component, user in COMPONENT_USERS.items():
            kubeconfig = data_dir / f".{component}.kubeconfig"
            assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
            assert _whoami(data_dir, kubeconfig) == user
        commands = {}
        for pid in _children(process.pid):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            commands[args[3]] = args
        for child in ("controller-manager", "scheduler", "kubelet"):  # each runs on its own kubeconfig
            args = commands[child]
            assert args[args.index("--kubeconfig") + 1] == str(data_dir / f".{child}.kubeconfig"), args
        assert "--token-auth-file" in commands["apiserver"]

        def created() -> bool:
            accounts = json.loads(cluster.kubectl("get", "serviceaccounts", "-n", "kube-system", "-o", "json"))
            return {a["metadata"]["name"] for a in accounts["items"]} >= CONTROLLER_ACCOUNTS

        eventually(created, timeout=60)  # got or created on each controller's first call, by the manager
    finally:
        _stop(process, log)


def test_up_one_process_controllers_run_as_their_accounts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, log = _start(data_dir)
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        cluster = Cluster(data_dir, process, log)
        accounts = json.loads(cluster.kubectl("get", "serviceaccounts", "-n", "kube-system", "-o", "json"))
        assert {a["metadata"]["name"] for a in accounts["items"]} >= CONTROLLER_ACCOUNTS  # created before start
    finally:
        _stop(process, log)
