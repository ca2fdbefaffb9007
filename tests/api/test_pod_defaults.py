from typing import Any

from pyvolcano.api.defaults import default_pod, requests_with_limit_defaults


def test_a_resource_only_under_limits_is_requested_at_its_limit() -> None:
    assert requests_with_limit_defaults({"cpu": "1"}, {"cpu": "2", "nvidia.com/gpu": 8}) == {
        "cpu": "1", "nvidia.com/gpu": 8}
    assert requests_with_limit_defaults({}, {}) == {}


def test_default_pod_fills_containers_and_init_containers_in_place() -> None:
    pod: dict[str, Any] = {"spec": {
        "containers": [{"name": "a", "resources": {"limits": {"memory": "1Gi"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "1"}}},
                       {"name": "c"}],
        "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "500m"}, "requests": {}}}],
    }}
    default_pod(pod)
    spec = pod["spec"]
    assert spec["containers"][0]["resources"]["requests"] == {"memory": "1Gi"}
    assert spec["containers"][1]["resources"] == {"requests": {"cpu": "1"}}
    assert "resources" not in spec["containers"][2]
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "500m"}


def test_default_pod_ignores_malformed_parts() -> None:
    for pod in ({}, {"spec": []}, {"spec": {"containers": "x"}}, {"spec": {"containers": [1, {"resources": 2}]}},
                {"spec": {"containers": [{"resources": {"limits": {"cpu": 1}, "requests": [1]}}]}}):
        default_pod(pod)  # type: ignore[arg-type]
