"""The ServiceAccount admission plugin in-process (``Registry(service_account_admission=True)``).

Pins upstream v1.37 ``plugin/pkg/admission/serviceaccount/admission.go``: ``Admit`` (default account, the
deprecated alias, ``shouldAutomount``, ``mountServiceAccountToken`` skipping containers that already mount the path
and reusing a ``kube-api-access-*`` volume, image pull secrets copied) and ``Validate`` (mirror pods,
``enforceMountableSecrets`` / ``limitSecretReferences`` messages). A refused pod is not stored.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.errors import ForbiddenError, NotFoundError
from kubeplane.client.local import LocalClient

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory(service_account_admission=True, rng=random.Random(3))
    await c.create(c.resource("serviceaccounts"), {"metadata": {"name": "default"}}, namespace="default")
    yield c
    await c.close()


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


async def create(client: LocalClient, obj: dict[str, Any]) -> dict[str, Any]:
    return await client.create(client.resource("pods"), obj, namespace="default")


async def test_an_existing_mount_at_the_path_and_an_existing_volume_are_kept(client: LocalClient) -> None:
    own = {"name": "mine", "mountPath": MOUNT}
    spec = {
        "containers": [
            {"name": "a", "image": "nginx", "volumeMounts": [own]},
            {"name": "b", "image": "nginx"},
        ],
        "volumes": [{"name": "mine", "emptyDir": {}}, {"name": "kube-api-access-own", "emptyDir": {}}],
    }
    created = await create(client, {"metadata": {"name": "p"}, "spec": spec})
    containers = created["spec"]["containers"]
    assert containers[0]["volumeMounts"] == [own]  # already mounted there: left alone
    assert containers[1]["volumeMounts"] == [{"name": "kube-api-access-own", "readOnly": True, "mountPath": MOUNT}]
    assert [v["name"] for v in created["spec"]["volumes"]] == ["mine", "kube-api-access-own"]  # reused, none added


async def test_account_automount_false_and_pod_preference_wins(client: LocalClient) -> None:
    sas = client.resource("serviceaccounts")
    await client.create(
        sas, {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}, namespace="default"
    )
    quiet = await create(client, pod("q", serviceAccountName="quiet"))
    assert "volumes" not in quiet["spec"]
    loud = await create(client, pod("l", serviceAccountName="quiet", automountServiceAccountToken=True))
    assert loud["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


async def test_deprecated_alias_and_pull_secrets_come_from_the_account(client: LocalClient) -> None:
    sas = client.resource("serviceaccounts")
    account = {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "reg"}]}
    await client.create(sas, account, namespace="default")
    created = await create(client, pod("a", serviceAccount="puller"))
    assert created["spec"]["serviceAccountName"] == created["spec"]["serviceAccount"] == "puller"
    assert created["spec"]["imagePullSecrets"] == [{"name": "reg"}]


async def test_mountable_secrets_are_enforced_when_the_account_asks(client: LocalClient) -> None:
    sas = client.resource("serviceaccounts")
    account = {
        "metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
        "secrets": [{"name": "ok"}],
    }
    await client.create(sas, account, namespace="default")
    volume = {"name": "s", "secret": {"secretName": "other"}}
    with pytest.raises(ForbiddenError) as refused:
        await create(client, pod("v", serviceAccountName="strict", volumes=[volume]))
    assert refused.value.status["message"] == (
        'pods "v" is forbidden: volume with secret.secretName="other" is not allowed because service account '
        "strict does not reference that secret"
    )
    env = [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]
    spec = {"serviceAccountName": "strict", "containers": [{"name": "c", "image": "nginx", "env": env}]}
    with pytest.raises(ForbiddenError) as refused:
        await create(client, {"metadata": {"generateName": "gen-"}, "spec": spec})
    assert refused.value.status["message"] == (
        'pods "gen-" is forbidden: container c with envVar E referencing secret.secretName="other" is not allowed '
        "because service account strict does not reference that secret"
    )
    fine = await create(
        client, pod("f", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "ok"}}])
    )
    assert fine["spec"]["serviceAccountName"] == "strict"


async def test_mirror_pods_are_not_changed_and_may_not_reference_accounts(client: LocalClient) -> None:
    mirror = {"kubernetes.io/config.mirror": "hash"}
    created = await create(client, {**pod("m"), "metadata": {"name": "m", "annotations": mirror}})
    assert "serviceAccountName" not in created["spec"]
    assert "volumes" not in created["spec"]
    with pytest.raises(ForbiddenError) as refused:
        await create(
            client, {**pod("n", serviceAccountName="default"), "metadata": {"name": "n", "annotations": mirror}}
        )
    assert refused.value.status["message"] == 'pods "n" is forbidden: a mirror pod may not reference service accounts'
    with pytest.raises(NotFoundError):
        await client.get(client.resource("pods"), "n", namespace="default")


async def test_without_the_plugin_pods_are_untouched() -> None:
    """Registries built in-process run without it unless asked (as upstream's test servers)."""
    c = await LocalClient.in_memory()
    try:
        created = await c.create(c.resource("pods"), pod("x"), namespace="default")
        assert "serviceAccountName" not in created["spec"]
        assert "volumes" not in created["spec"]
    finally:
        await c.close()
