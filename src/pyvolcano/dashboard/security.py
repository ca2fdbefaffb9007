"""The dashboard's request checks: which Host names it answers, and who may act.

The dashboard has no login; what bounds it is who can reach it. Two attacks get around that
bound from a browser on the same machine, and both are closed here:

* **DNS rebinding.** A web page the user visits points its own host name at 127.0.0.1 and then
  reads the dashboard as a same-origin page. The browser sends that foreign name as ``Host``,
  so :class:`HostCheck` answers only the names the dashboard is served as: the listen address,
  ``localhost``, ``127.0.0.1``, ``[::1]`` and the names of ``--accept-hosts`` (kubectl proxy's
  option of the same name). The decision is Starlette's ``TrustedHostMiddleware`` (its Host
  parsing, IPv6 literals and ``*.example.com`` wildcards); every other request, on every route,
  gets 403 with one line naming the host.
* **Cross-site requests.** A page of another origin can still *send* a POST to
  ``127.0.0.1:8080`` (it cannot read the answer). :func:`refuse_action` refuses it unless its
  ``Origin`` (or, without one, its ``Referer``) is the dashboard's own origin and it carries
  :data:`TOKEN_HEADER` with the per-process token that only the dashboard's own page receives
  (in a ``<meta>`` of its HTML, which no other origin can read). The token comes from the
  operating system's CSPRNG; it is compared in constant time.

Both checks run before anything reaches the cluster.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable, Sequence
from typing import Final
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOOPBACK_HOSTS", "TOKEN_HEADER", "TOKEN_META", "HostCheck", "exposure_warning", "is_loopback",
           "new_token", "parse_accept_hosts", "refuse_action", "served_hosts"]

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")
TOKEN_HEADER: Final = "X-PyVolcano-Token"
TOKEN_META: Final = "pyvolcano-action-token"
_ACCEPTED: Final = "pyvolcano.host_accepted"
_NAME_RE: Final = re.compile(r"(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*"
                             r"[A-Za-z0-9])?)*\.?", re.ASCII)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def new_token() -> str:
    """A fresh action token: 32 bytes of the operating system's CSPRNG, URL-safe base64."""
    return secrets.token_urlsafe(32)


def is_loopback(address: str) -> bool:
    """Whether ``address`` (a listen address) reaches this machine only."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_form(address: str) -> str:
    """``address`` as it appears in a Host header (IPv6 literals in brackets)."""
    bare = address.strip("[]")
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return address.lower()
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def _from_kubectl(entry: str) -> str:
    """kubectl proxy's anchored literal patterns (``^localhost$``, ``^127\\.0\\.0\\.1$``,
    ``^\\[::1\\]$``, ``^.*\\.example\\.com$``) as the names they match."""
    body = entry[1:-1]
    if body.startswith(".*\\."):
        body = "*." + body[4:]
    return re.sub(r"\\([.\[\]\-])", r"\1", body)


def parse_accept_hosts(values: Iterable[str]) -> list[str]:
    """The host names of ``--accept-hosts`` values (each comma-separated, as kubectl proxy's).

    A name is a host name, an IP address (IPv6 in brackets or bare) or a ``*.example.com``
    wildcard; kubectl proxy's anchored literal patterns are read as the names they match.
    Anything else raises :class:`ValueError` with the offending entry.
    """
    names: list[str] = []
    for value in values:
        for raw in value.split(","):
            entry = raw.strip()
            if not entry:
                continue
            name = _from_kubectl(entry) if entry.startswith("^") and entry.endswith("$") else entry
            try:
                ipaddress.ip_address(name.strip("[]"))
            except ValueError:
                pass
            else:
                names.append(_host_form(name))
                continue
            if not _NAME_RE.fullmatch(name):
                raise ValueError(f"--accept-hosts: got {entry!r}; expected host names (dash.example.com), IP "
                                 "addresses, *.example.com wildcards, or kubectl proxy's anchored forms such as "
                                 "'^localhost$'")
            names.append(name.lower().rstrip("."))
    return names


def served_hosts(listen_address: str, accept_hosts: Sequence[str] = ()) -> tuple[str, ...]:
    """The Host names the dashboard answers: the listen address, the loopback names, then
    ``accept_hosts`` (already parsed), without repeats."""
    return tuple(dict.fromkeys((_host_form(listen_address), *LOOPBACK_HOSTS, *accept_hosts)))


def exposure_warning(listen_address: str, *, accept_hosts: Sequence[str], allow_actions: bool) -> str | None:
    """The warning for listening beyond this machine without ``--accept-hosts``, or ``None``."""
    if is_loopback(listen_address) or accept_hosts:
        return None
    hosts = served_hosts(listen_address)
    return (f"--listen-address {listen_address} is reachable from other machines and the dashboard has no login: "
            "anyone who can reach the port reads every job, queue and node"
            f"{' and acts with this kubeconfig' if allow_actions else ''}; only the Host names "
            f"{', '.join(hosts)} are answered. Give the names it is reached by with --accept-hosts and put an "
            "authenticating proxy in front (docs/dashboard.md, Security)")


async def _accept(scope: Scope, receive: Receive, send: Send) -> None:
    scope[_ACCEPTED] = True


async def _discard(message: Message) -> None:
    return None


class HostCheck:
    """ASGI middleware answering only requests whose ``Host`` is one of ``hosts``.

    Starlette's ``TrustedHostMiddleware`` decides; a refusal is a 403 whose one line names the
    host and the option that would admit it.
    """

    def __init__(self, app: ASGIApp, hosts: Sequence[str]):
        self.app = app
        self.hosts = tuple(hosts)
        self._decide = TrustedHostMiddleware(_accept, allowed_hosts=list(self.hosts), www_redirect=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        await self._decide(scope, receive, _discard)
        if scope.pop(_ACCEPTED, False):
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")
        reason = (f"refused: Host {host!r} is not a name this dashboard is served as "
                  f"({', '.join(self.hosts)}); add it with --accept-hosts\n")
        await PlainTextResponse(reason, status_code=403)(scope, receive, send)


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port or _DEFAULT_PORTS.get(parts.scheme.lower())


def refuse_action(request: Request, token: str) -> str | None:
    """Why the action ``request`` must be refused (403), or ``None`` when it came from the
    dashboard's own page: same origin, and the page's token in :data:`TOKEN_HEADER`."""
    own = _origin(f"{request.url.scheme}://{request.headers.get('host', '')}")
    sent = request.headers.get("origin")
    which = "Origin"
    if sent is None:
        sent, which = request.headers.get("referer"), "Referer"
    if sent is None:
        return "refused: an action needs an Origin (or Referer) header naming the dashboard's own page"
    if own is None or _origin(sent) != own:
        return f"refused: {which} {sent!r} is not the dashboard's own origin"
    given = request.headers.get(TOKEN_HEADER, "")
    if not given or not hmac.compare_digest(given.encode(), token.encode()):
        return f"refused: the action token ({TOKEN_HEADER}) is missing or wrong; act from the dashboard's page"
    return None
