"""Volcano's admission webhooks over HTTPS, for a real kube-apiserver (``pyvolcano admission``).

The decisions are :mod:`pyvolcano.admission`'s, the same code the in-memory store runs on every
write; this package only puts them on the wire, as upstream's ``vc-webhook-manager`` does:

* :mod:`~pyvolcano.webhooks.router`: upstream's paths (``/jobs/mutate``, ``/queues/validate``,
  …), the operations each admits and upstream's wording of a rejection;
* :mod:`~pyvolcano.webhooks.review`: ``admission.k8s.io/v1`` AdmissionReview in and out;
* :mod:`~pyvolcano.webhooks.jsonpatch`: the JSON Patch a mutating webhook answers, computed by
  diffing the request's object against the defaulted one;
* :mod:`~pyvolcano.webhooks.server`: the threaded HTTPS server and ``/healthz``;
* :mod:`~pyvolcano.webhooks.registration`: the Mutating/ValidatingWebhookConfigurations written
  at start, scoped so that an outage blocks only Volcano's own objects and pods.

Lookups (queues, namespaces, podgroups) go through the :class:`~pyvolcano.store.base.Store` the
router is given: the cluster's in live mode, an in-memory store in tests. Nothing here reads a
clock or keeps state between requests.
"""

from pyvolcano.webhooks.registration import ClientTarget, Registration, register, webhook_configuration
from pyvolcano.webhooks.review import AdmissionRequest, AdmissionResponse, ReviewError
from pyvolcano.webhooks.router import SERVICES, AdmissionService, Router, enabled_services
from pyvolcano.webhooks.server import HealthzServer, TLSConfigError, WebhookServer, tls_context

__all__ = [
    "SERVICES",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionService",
    "ClientTarget",
    "HealthzServer",
    "Registration",
    "ReviewError",
    "Router",
    "TLSConfigError",
    "WebhookServer",
    "enabled_services",
    "register",
    "tls_context",
    "webhook_configuration",
]
