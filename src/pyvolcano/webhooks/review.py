"""``admission.k8s.io/v1`` AdmissionReview: decoding a request, encoding a response.

A request body that is not an AdmissionReview with a ``request.uid`` is a
:class:`ReviewError` (the server answers HTTP 400: there is no uid to answer to). Everything
else is answered inside an AdmissionReview whose ``response.uid`` is the request's.

A rejection carries ``status.message`` and ``status.code`` 400. Upstream's webhooks set the
message only and the API server turns a missing code into 400; no ``reason`` is set, so
``kubectl`` prints ``Error from server: admission webhook "<name>" denied the request: <message>``
exactly as for upstream. A mutation carries its JSON Patch base64-encoded with
``patchType: JSONPatch``; an empty patch is left out.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["API_VERSION", "AdmissionRequest", "AdmissionResponse", "ReviewError", "decode_review", "encode_review"]

API_VERSION: Final = "admission.k8s.io/v1"
_DENIED_CODE: Final = 400


class ReviewError(ValueError):
    """The body is not an AdmissionReview request."""


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the webhooks read."""

    uid: str
    operation: str
    kind: str  # request.kind.kind, e.g. "Job"
    resource: tuple[str, str, str]  # request.resource: (group, version, resource)
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool = False


@dataclass(frozen=True)
class AdmissionResponse:
    """``AdmissionReview.response``: allowed, or denied with a message; optionally a patch."""

    allowed: bool
    message: str = ""
    patch: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def deny(cls, message: str) -> AdmissionResponse:
        return cls(allowed=False, message=message)


def _mapping_or_none(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def decode_review(body: bytes) -> AdmissionRequest:
    try:
        review = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReviewError(f"request body is not JSON: {e}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise ReviewError("request body is not an AdmissionReview")
    if review.get("apiVersion") != API_VERSION:
        raise ReviewError(f"AdmissionReview apiVersion {review.get('apiVersion')!r} is not supported; "
                          f"expected {API_VERSION}")
    req = review.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req["uid"]:
        raise ReviewError("AdmissionReview has no request.uid")
    kind = req.get("kind")
    kind_name = kind.get("kind") if isinstance(kind, dict) else None
    operation = req.get("operation")
    if not isinstance(operation, str):
        raise ReviewError("AdmissionReview request.operation: expected a string")
    res = req.get("resource")
    res = res if isinstance(res, dict) else {}
    resource = tuple(str(res.get(k) or "") for k in ("group", "version", "resource"))
    return AdmissionRequest(
        uid=req["uid"],
        resource=(resource[0], resource[1], resource[2]),
        operation=operation,
        kind=kind_name if isinstance(kind_name, str) else "",
        namespace=_string(req.get("namespace")),
        name=_string(req.get("name")),
        object=_mapping_or_none(req.get("object"), "request.object"),
        old_object=_mapping_or_none(req.get("oldObject"), "request.oldObject"),
        dry_run=req.get("dryRun") is True,
    )


def encode_review(uid: str, response: AdmissionResponse) -> bytes:
    out: dict[str, Any] = {"uid": uid, "allowed": response.allowed}
    if not response.allowed:
        out["status"] = {"metadata": {}, "status": "Failure", "message": response.message, "code": _DENIED_CODE}
    if response.patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(json.dumps(response.patch, separators=(",", ":")).encode()).decode()
    return json.dumps({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": out}).encode()
