"""KubeClient's failures: which statuses mean "try again later" (Unavailable) and which do not."""

from __future__ import annotations

import httpx2
import pytest

from pyvolcano.kube.client import ApiError, Expired, KubeClient, ServerUnavailable, status_error
from pyvolcano.store.base import Conflict, NotFound, Unavailable


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_429_and_5xx_are_unavailable(code: int) -> None:
    err = status_error(code, {"message": "etcdserver: leader changed"}, ("Pod", "ns/p"))
    assert isinstance(err, ServerUnavailable) and isinstance(err, Unavailable) and isinstance(err, ApiError)
    assert err.code == code and "etcdserver: leader changed" in str(err)


@pytest.mark.parametrize(("code", "kind"), [(404, NotFound), (409, Conflict), (410, Expired), (400, ApiError)])
def test_refusals_of_the_request_itself_are_not_unavailable(code: int, kind: type) -> None:
    err = status_error(code, {"message": "no"}, ("Pod", "ns/p"))
    assert isinstance(err, kind) and not isinstance(err, Unavailable)


def test_a_connection_that_fails_is_unavailable_with_code_0() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    client = KubeClient(http=httpx2.Client(transport=httpx2.MockTransport(refuse), base_url="https://api"))
    with pytest.raises(ServerUnavailable) as info:
        client.request("GET", "/api/v1/pods", what=("Pod", ""))
    assert info.value.code == 0
