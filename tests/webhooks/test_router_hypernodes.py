"""``/hypernodes/validate`` (``validatehypernode.volcano.sh``): upstream's rules and its
``field.ErrorList`` aggregate, through the HTTPS server as the API server calls it."""

from __future__ import annotations

from typing import Any

from webhook_client import Client, review

from pyvolcano.webhooks import SERVICES, ClientTarget, webhook_configuration


def hypernode(*members: dict[str, Any], name: str = "s0") -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": 1, "members": list(members)}}


def denied(response: dict[str, Any]) -> str:
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    message: str = response["status"]["message"]
    return message


def test_a_valid_hypernode_is_allowed_on_create_and_update(client: Client) -> None:
    hn = hypernode({"type": "Node", "selector": {"labelMatch": {"matchLabels": {"topology-rack": "rack1"}}}})
    assert client.post("/hypernodes/validate", review("HyperNode", "CREATE", hn))["allowed"] is True
    assert client.post("/hypernodes/validate", review("HyperNode", "UPDATE", hn, hn))["allowed"] is True


def test_one_problem_is_answered_alone(client: Client) -> None:
    hn = hypernode({"type": "Node", "selector": {"regexMatch": {"pattern": ""}}})
    r = client.post("/hypernodes/validate", review("HyperNode", "CREATE", hn))
    assert denied(r) == 'spec.members[0].selector.regexMatch.pattern: Invalid value: "": member regexMatch ' \
                        "pattern is required"


def test_several_problems_are_an_aggregate(client: Client) -> None:
    hn = hypernode({"type": "Rack", "selector": {"exactMatch": {"name": "n1"}}},
                   {"type": "Node", "selector": {"exactMatch": {"name": ""}}})
    r = client.post("/hypernodes/validate", review("HyperNode", "UPDATE", hn, hn))
    assert denied(r) == ('[spec.members[0].type: Invalid value: "Rack": unknown member type Rack, '
                         'spec.members[1].selector.exactMatch.name: Invalid value: "": member exactMatch name is '
                         "required]")


def test_other_operations_are_refused(client: Client) -> None:
    hn = hypernode({"type": "Node", "selector": {"exactMatch": {"name": "n1"}}})
    r = client.post("/hypernodes/validate", review("HyperNode", "DELETE", None, hn))
    assert denied(r) == "expect operation to be 'CREATE' or 'UPDATE'"


def test_registration_rule_is_upstreams() -> None:
    service = SERVICES["/hypernodes/validate"]
    config = webhook_configuration(service, ClientTarget(url="https://hook:8443"), b"", ["volcano"])
    assert config["kind"] == "ValidatingWebhookConfiguration"
    assert config["metadata"]["name"] == "volcano-admission-service-hypernodes-validate"
    [webhook] = config["webhooks"]
    assert webhook["name"] == "validatehypernode.volcano.sh"
    assert webhook["clientConfig"] == {"url": "https://hook:8443/hypernodes/validate"}
    assert webhook["rules"] == [{"apiGroups": ["topology.volcano.sh"], "apiVersions": ["v1alpha1"],
                                 "operations": ["CREATE", "UPDATE"], "resources": ["hypernodes"], "scope": "*"}]
    assert "matchConditions" not in webhook
