"""`AsyncClient`: the same methods as `Client` (listed once, in `Endpoints`, _endpoints.py), each returning a
coroutine.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import httpx

from ._endpoints import AsyncEndpoints, http_options
from ._transport import AsyncDriver, Retry


class AsyncClient(AsyncEndpoints):
    """`async with AsyncClient("http://127.0.0.1:8000", token) as client: run = await client.register("agent")`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: Retry | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(transport=transport, **http_options(base_url, token, headers, timeout))
        self.driver = AsyncDriver(self.http, retry or Retry())

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()
