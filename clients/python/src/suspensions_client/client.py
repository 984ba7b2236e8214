"""`Client`: the synchronous client. Its methods are listed once, in `Endpoints` (_endpoints.py), which
`AsyncClient` shares; each returns its result.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import httpx

from ._endpoints import SyncEndpoints, http_options
from ._transport import Retry, SyncDriver


class Client(SyncEndpoints):
    """The synchronous client: `Client("http://127.0.0.1:8000", token)`.

    `retry` bounds the resends of one request (connection loss, 503, 429);
    `headers` are added to every request. Use it as a context manager, or
    call `close()`.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: Retry | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.http = httpx.Client(transport=transport, **http_options(base_url, token, headers, timeout))
        self.driver = SyncDriver(self.http, retry or Retry())

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
