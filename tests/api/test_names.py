"""Specification tests for ``pyvolcano.api.names``: the Kubernetes name grammars (apimachinery's
``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsQualifiedName``, ``IsValidLabelValue``)."""

from __future__ import annotations

import pytest

from pyvolcano.api.names import (
    SCHEDULER_KINDS,
    dns1035_label_matches,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)


@pytest.mark.parametrize(("text", "valid"), [
    ("a", True), ("my-name", True), ("123-abc", True), ("a" * 63, True), ("a" * 64, False), ("", False),
    ("-a", False), ("a-", False), ("A", False), ("a.b", False), ("a_b", False), ("abc\n", False),
])
def test_dns1123_label(text: str, valid: bool) -> None:
    assert is_dns1123_label(text) is valid


@pytest.mark.parametrize(("text", "valid"), [
    ("example.com", True), ("a", True), (".a", False), ("a..b", False), ("a." * 126 + "a", True),
    ("a." * 126 + "ab", False), ("Example.com", False),
])
def test_dns1123_subdomain(text: str, valid: bool) -> None:
    assert is_dns1123_subdomain(text) is valid


def test_dns1035_label_starts_with_a_letter() -> None:
    assert dns1035_label_matches("abc-123") and not dns1035_label_matches("1abc")


@pytest.mark.parametrize(("text", "valid"), [
    ("MyName", True), ("my.name", True), ("example.com/MyName", True), ("volcano.sh/job-name", True),
    ("/name", False), ("a/b/c", False), ("example.com/", False), ("Example.com/x", False), ("n" * 63, True),
    ("n" * 64, False), ("_x", False), ("", False),
])
def test_qualified_name(text: str, valid: bool) -> None:
    assert is_qualified_name(text) is valid


@pytest.mark.parametrize(("text", "valid"), [
    ("", True), ("my_value", True), ("12345", True), ("v" * 63, True), ("v" * 64, False), ("a/b", False),
    ("-a", False),
])
def test_label_value(text: str, valid: bool) -> None:
    assert is_label_value(text) is valid


def test_the_scheduler_watches_its_kinds_in_upstreams_informer_order_then_storage_then_dra() -> None:
    assert SCHEDULER_KINDS == ("PodDisruptionBudget", "Node", "Pod", "PriorityClass", "ResourceQuota", "PodGroup",
                               "Queue", "Numatopology", "HyperNode", "PersistentVolumeClaim", "PersistentVolume",
                               "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "DeviceClass",
                               "ResourceSlice", "ResourceClaim")


def test_a_snapshot_lists_every_kind_the_scheduler_watches_and_the_kinds_that_make_jobs() -> None:
    from pyvolcano.runtime.snapshot import SNAPSHOT_KINDS

    assert sorted(SNAPSHOT_KINDS) == sorted((*SCHEDULER_KINDS, "Job", "CronJob", "JobTemplate", "JobFlow"))
