"""Fixtures for the webhook tests: a throw-away CA and server certificate, a store with the
built-in queues, a running HTTPS webhook server and a client for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from webhook_client import Certs, Client, make_certs, queue_obj

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore
from pyvolcano.webhooks import SERVICES, Router, WebhookServer, tls_context


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def store() -> InMemoryStore:
    s = InMemoryStore(clock=lambda: 0.0, admission=VolcanoAdmission())
    s.create(queue_obj("root", reclaimable=False))
    s.create(queue_obj("default"))
    return s


@pytest.fixture
def server(store: InMemoryStore, certs: Certs) -> Iterator[WebhookServer]:
    router = Router(list(SERVICES.values()), VolcanoAdmission(), store)
    with WebhookServer(router, tls_context(str(certs.cert), str(certs.key)), "127.0.0.1", 0) as srv:
        yield srv


@pytest.fixture
def client(server: WebhookServer, certs: Certs) -> Client:
    return Client(server.port, certs.ca)
