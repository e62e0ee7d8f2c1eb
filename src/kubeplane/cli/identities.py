"""Who each component of ``kubeplane up`` is, as in a kubeadm cluster.

=========================  =======================================  ==============================================
component                  user (groups; ``system:authenticated``    where its permissions come from
                           is added by authentication)
=========================  =======================================  ==============================================
scheduler                  ``system:kube-scheduler``                 bootstrap ClusterRoles ``system:kube-scheduler``,
                                                                     ``system:volume-scheduler``
controller manager         ``system:kube-controller-manager``        ``system:kube-controller-manager``; each
                                                                     controller as ``kube-system/<its account>``
                                                                     (``system:controller:*``)
kubelet fleet              ``system:kubeplane:kubelet-fleet``        kubeplane's ``system:kubeplane:kubelet-fleet``
                                                                     (its informers' reads, impersonating nodes)
each node's kubelet        ``system:node:<name>`` (``system:nodes``) the Node authorizer and NodeRestriction
=========================  =======================================  ==============================================

One process: each component gets ``LocalClient.as_user`` of its user (:func:`component_user`). ``--processes``:
the API server reads :func:`write_token_file`'s CSV (upstream's ``--token-auth-file`` format,
``token,user,uid,"group1,group2"``, 0600 in the data directory, tokens kept across restarts) and each component
gets a kubeconfig of its own (:func:`write_component_kubeconfig`); the fleet impersonates each node
(``Impersonate-User``/``Impersonate-Group``) on its own token.
"""

from __future__ import annotations

import csv
import io
import secrets
from pathlib import Path

from kubeplane.apiserver.private_files import write_private
from kubeplane.apiserver.tokens import AUTHENTICATED_GROUP, UserInfo
from kubeplane.kubelet.fleet import FLEET_USER, node_groups, node_user_name

__all__ = [
    "COMPONENT_USERS",
    "TOKEN_FILE",
    "component_user",
    "node_user",
    "write_component_kubeconfig",
    "write_token_file",
]

COMPONENT_USERS: dict[str, str] = {
    "scheduler": "system:kube-scheduler",
    "controller-manager": "system:kube-controller-manager",
    "kubelet": FLEET_USER,
}
"""Component (its ``kubeplane`` command) -> the user it runs as."""
TOKEN_FILE = "tokens.csv"


def component_user(component: str) -> UserInfo:
    """The component's user as authentication would give it (``system:authenticated`` added)."""
    return UserInfo(COMPONENT_USERS[component], groups=(AUTHENTICATED_GROUP,))


def node_user(node: str) -> UserInfo:
    """A node's kubelet: ``system:node:<name>`` in ``system:nodes`` and ``system:authenticated``."""
    return UserInfo(node_user_name(node), groups=node_groups())


def write_token_file(data_dir: Path) -> dict[str, str]:
    """Write ``DATA_DIR/tokens.csv`` (0600) with one token per component, keeping the tokens a previous run wrote
    (so kubeconfigs stay valid across restarts); component -> token."""
    path = data_dir / TOKEN_FILE
    known: dict[str, str] = {}
    if path.exists():
        for record in csv.reader(io.StringIO(path.read_text())):
            if len(record) >= 3:
                known[record[1]] = record[0]
    tokens = {c: known.get(user) or secrets.token_urlsafe(32) for c, user in COMPONENT_USERS.items()}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for component, user in COMPONENT_USERS.items():
        writer.writerow([tokens[component], user, user])  # no groups: authentication adds system:authenticated
    write_private(path, out.getvalue().encode())
    return tokens


def write_component_kubeconfig(admin_kubeconfig: Path, admin_token: str, token: str, path: Path) -> None:
    """``path`` (0600): the admin kubeconfig with the component's token instead of the admin's."""
    text = admin_kubeconfig.read_text()
    if f"token: {admin_token}" not in text:
        raise ValueError(f"{admin_kubeconfig} does not hold the admin token")
    write_private(path, text.replace(f"token: {admin_token}", f"token: {token}").encode())
