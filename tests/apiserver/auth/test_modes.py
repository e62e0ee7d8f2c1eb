"""``--authorization-mode`` (auth/modes.py): upstream ``pkg/kubeapiserver/authorizer/config.go`` (system:masters
first, then the modes in order; the union's first ALLOW or DENY wins), ``modes.go``'s mode names, and the
SelfSubjectRulesReview's union of rule resolvers (``union.NewRuleResolvers``: AlwaysAllow's everything, the
Node authorizer's "incomplete" for nodes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.apiserver.auth.authorizer import Attributes, Decision, Union
from kubeplane.apiserver.auth.modes import AlwaysDeny, build_authorizer, parse_modes, rule_resolvers
from kubeplane.apiserver.auth.node import NodeAuthorizer
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.local import LocalClient
from kubeplane.store.memory import MemoryStore

NODE = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    reg = Registry(store=MemoryStore())
    await reg.start()
    yield reg
    await reg.stop()


def test_parse_modes() -> None:
    assert parse_modes("Node,RBAC") == ("Node", "RBAC")
    with pytest.raises(ValueError, match="'ABAC' is not a valid mode"):
        parse_modes("Node,ABAC")
    with pytest.raises(ValueError, match="more than once"):
        parse_modes("RBAC,RBAC")


async def test_masters_first_then_node(registry: Registry) -> None:
    authorizer = build_authorizer(registry, ("Node", "AlwaysDeny"))
    assert isinstance(authorizer, Union)
    assert isinstance(authorizer.authorizers[1], NodeAuthorizer)
    admin = UserInfo("admin", groups=("system:masters",))
    assert authorizer.authorize(Attributes(admin, "delete", resource="nodes", name="n1"))[0] is Decision.ALLOW
    own = Attributes(NODE, "get", api_version="v1", resource="nodes", name="n1")
    assert authorizer.authorize(own)[0] is Decision.ALLOW
    secret = Attributes(NODE, "get", namespace="default", api_version="v1", resource="secrets", name="s")
    decision, reason = authorizer.authorize(secret)
    assert decision is Decision.NO_OPINION  # the graph has no path n1 -> that secret; AlwaysDeny's reason joins
    assert reason.endswith("Everything is forbidden.")
    assert AlwaysDeny().authorize(own) == (Decision.NO_OPINION, "Everything is forbidden.")


async def test_rule_resolvers(registry: Registry) -> None:
    resolvers = rule_resolvers(build_authorizer(registry, ("Node", "AlwaysAllow")))
    found = [r.rules_for(NODE, "default") for r in resolvers]
    assert found[0] == ([], [], True, "node authorizer does not support user rule resolution")
    assert found[1][0] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]


async def test_local_client_as_a_node(registry: Registry) -> None:
    """A kubelet's in-process client is held to the Node authorizer: its own Node yes, a secret no."""
    registry.authorizer = build_authorizer(registry, ("Node",))
    admin = LocalClient(registry)
    await admin.create(admin.resource("nodes"), {"metadata": {"name": "n1"}})
    kubelet = admin.as_user(NODE)
    assert (await kubelet.get(kubelet.resource("nodes"), "n1"))["metadata"]["name"] == "n1"
    from kubeplane.client.errors import APIStatusError

    with pytest.raises(APIStatusError) as err:
        await kubelet.get(kubelet.resource("secrets"), "s", namespace="default")
    assert err.value.status["message"].startswith(
        'secrets "s" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the '
        'namespace "default"'
    )
