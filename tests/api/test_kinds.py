import pytest

from pyvolcano.api.fields import field_tree
from pyvolcano.api.kinds import CHECKED_KINDS, KindStatus, resolve, split_api_version


@pytest.mark.parametrize(("api", "kind"), sorted(CHECKED_KINDS))
def test_checked_kinds_resolve_and_have_a_field_tree(api: str, kind: str) -> None:
    assert resolve(api, kind).status is KindStatus.CHECKED
    assert field_tree().root(api, kind) is not None


def test_the_field_tree_describes_exactly_the_checked_kinds() -> None:
    assert {tuple(k.split(" ")) for k in field_tree().kinds} == set(CHECKED_KINDS)


@pytest.mark.parametrize(("api", "kind", "status", "fragment"), [
    ("batch.volcano.sh/v1alpha1", "Jobb", KindStatus.UNKNOWN, 'did you mean "Job"?'),
    ("batch.volcano.sh/v1alpha1", "job", KindStatus.UNKNOWN, "case-sensitive"),
    ("batch.volcano.sh/v1alpha1", "CronJob", KindStatus.CHECKED, ""),
    ("flow.volcano.sh/v1alpha1", "JobFlow", KindStatus.CHECKED, ""),
    ("flow.volcano.sh/v1alpha1", "Jobflow", KindStatus.UNKNOWN, "case-sensitive"),
    ("batch/v1", "CronJob", KindStatus.NOT_CHECKED, "'batch'"),
    ("batch/v1", "Job", KindStatus.NOT_CHECKED, "'batch'"),
    ("v2", "Node", KindStatus.UNKNOWN, 'did you mean "v1"?'),
    ("v1", "Nod", KindStatus.UNKNOWN, 'did you mean "Node"?'),
    ("v1", "ConfigMap", KindStatus.NOT_CHECKED, "does not model v1 ConfigMap"),
    ("bogus.io/v1", "Job", KindStatus.NOT_CHECKED, "'bogus.io'"),
    ("a/b/c", "Job", KindStatus.UNKNOWN, "not of the form"),
    ("scheduling.k8s.io/v1beta1", "PriorityClass", KindStatus.NOT_CHECKED, "removed in Kubernetes 1.22"),
])
def test_resolve_decides_by_api_version_and_kind(api: str, kind: str, status: KindStatus, fragment: str) -> None:
    res = resolve(api, kind)
    assert res.status is status and fragment in res.message


def test_split_api_version() -> None:
    assert split_api_version("v1") == ("", "v1")
    assert split_api_version("batch.volcano.sh/v1alpha1") == ("batch.volcano.sh", "v1alpha1")
    assert split_api_version("/v1") is None and split_api_version("") is None
