"""The extender's HTTP client (upstream ``extenderPlugin.send``).

``POST <urlPrefix>/<verb>`` with a JSON body and ``Content-Type: application/json``; a
response other than ``200`` is an error (``failed <verb> with extender at URL <url>, code
<n>``), and so is a body over 10 MiB (``http: request body too large``) or one that does not
decode. Every call has the configured timeout (``extender.httpTimeout``, default 1s).

So that an extender that stops answering cannot hold a session for the timeout once per
node and pod, the first call of a session that fails to get any answer (a timeout, a refused
connection) opens a breaker: the session's later calls fail at once with the same error, and
are treated as that call was (``ignorable`` or not). The next session tries again. An HTTP
error status or a bad body does not open it (the extender is there and answering).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any, Final

__all__ = ["MAX_BODY", "ExtenderClient", "ExtenderError"]

logger = logging.getLogger(__name__)

MAX_BODY: Final = 10 << 20


class ExtenderError(Exception):
    """A call that got no usable answer."""


class ExtenderClient:
    def __init__(self, url_prefix: str, timeout: float):
        self.url_prefix = url_prefix.rstrip("/")
        self.timeout = timeout
        self.unreachable: ExtenderError | None = None

    def reset(self) -> None:
        """A new session: try the extender again."""
        self.unreachable = None

    def send(self, verb: str, body: Any, *, want_result: bool = True) -> Any:
        """The decoded answer of ``verb`` (None when ``want_result`` is False); raises ExtenderError."""
        if self.unreachable is not None:
            raise self.unreachable
        url = f"{self.url_prefix}/{verb}"
        data = json.dumps(body, separators=(",", ":")).encode()
        request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                status = resp.status
                raw = resp.read(MAX_BODY + 1) if want_result else b""
        except urllib.error.HTTPError as e:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {e.code}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            self.unreachable = ExtenderError(f"Post \"{url}\": {reason}")
            raise self.unreachable from None
        if status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {status}")
        if not want_result:
            return None
        if len(raw) > MAX_BODY:
            raise ExtenderError("http: request body too large")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ExtenderError(f"{verb}: the extender's answer is not JSON: {e}") from None
