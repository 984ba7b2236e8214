"""What the sync and async clients share: calls described as data, the retry, and two small drivers.

An endpoint is a `Call` (method, path, body, how to parse the answer). The
retry and every multi-step helper are generators ("flows") that yield steps
(`Send` a request, `Sleep`, `Wait` for a webhook, run a nested `Call`) and get
the answers back. `SyncDriver` and `AsyncDriver` are the only code that does
I/O: each runs a flow, the one with httpx.Client and time.sleep, the other
with httpx.AsyncClient and asyncio.sleep. Nothing else is written twice.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

import httpx

from .errors import ClientError, ConnectionLost, SuspensionsError, error_from, retry_after_seconds
from .inbox import Inbox

T = TypeVar("T")

API_PREFIX = "/api/v1"


def segment(value: object) -> str:
    """`value` as one path segment that no id can break out of (docs/decisions.md, "Ids in URL paths").

    Every character but letters, digits, `-`, `_` and `~` is percent-encoded, dots too (so `..` is not a
    dot segment that httpx would resolve), and the result is encoded once more: WSGI servers, gunicorn
    among them, decode the path once before routing, `%2F` included, so a single encoding of
    `"<uuid>/decide"` would reach the decide endpoint. After that one decoding the server still sees
    one segment with no `/`, which matches no route: a 404. Ids are UUIDs, which neither encoding changes.
    """
    once = quote(str(value), safe="").replace(".", "%2E")
    return quote(once, safe="")


# The request never left this machine: sending it again cannot do anything twice.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    data: Any


@dataclass(frozen=True)
class Send:
    method: str
    path: str
    content: bytes | None
    params: Mapping[str, Any] | None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Wait:
    """Sleep up to `seconds`, waking early when `inbox` gets an event of `run_id` past count `after`."""

    inbox: Inbox | None
    run_id: str
    after: int
    seconds: float


@dataclass(frozen=True)
class Call(Generic[T]):
    """One endpoint call: `path` is under /api/v1; `body` is JSON-able (None: no body).

    `resend`: the identical bytes may be sent again after an answer was lost
    (every claim is a replay then). `recover`: for writes that are not replays
    (suspend, complete, fail, cancel, start), what the refusal of a resend
    means; it reads back what the first attempt did, or raises.
    `idempotency_key`: sent as `Idempotency-Key` on every attempt, so a create
    resent after a lost answer gets the first answer back (`keyed`).
    """

    method: str
    path: str
    parse: Callable[[Any, int], T]
    body: Any = None
    params: Mapping[str, Any] | None = None
    resend: bool = True
    recover: Callable[[SuspensionsError], Flow[T]] | None = None
    idempotency_key: str | None = None


def keyed(
    method: str, path: str, parse: Callable[[Any, int], T], body: Any = None, *, idempotency_key: str | None = None
) -> Call[T]:
    """A create, sent with an `Idempotency-Key` (the caller's, or a new UUID4) and so safely resent.

    The key is made once per call, here: every attempt of this call carries
    it, and the server answers a resend with the first answer (24 hours).
    """
    key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
    return Call(method, path, parse, body, idempotency_key=key)


# What a flow yields; the drivers dispatch on the type.
Step = Send | Sleep | Wait | Call[Any]
Flow = Generator[Step, Any, T]


def ask(call: Call[T]) -> Flow[T]:
    """Inside a flow: `value = yield from ask(call)` runs the call (with its retry) and returns its result."""
    result = yield call
    return cast(T, result)


@dataclass(frozen=True)
class RetryNotice:
    """Passed to `Retry.on_retry` before each wait: which attempt failed, why, and how long until the next."""

    method: str
    path: str
    attempt: int
    cause: str
    delay: float


@dataclass(frozen=True)
class Retry:
    """How often one request is sent, at most, and how long to wait between attempts.

    After a lost connection the wait is `backoff` doubled per attempt (with
    jitter, at most `max_backoff`); after a 503 or 429 it is the answer's
    `Retry-After`. A `Retry-After` above `max_retry_after` is not waited for:
    the error is raised at once.
    """

    attempts: int = 4
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    on_retry: Callable[[RetryNotice], None] | None = field(default=None, compare=False)

    def lost_connection_delay(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not a secret

    def refusal_delay(self, attempt: int, answer: Answer) -> float | None:
        header = next((v for k, v in answer.headers.items() if k.lower() == "retry-after"), None)
        seconds = retry_after_seconds(header)
        if seconds is None:
            return self.lost_connection_delay(attempt)
        return seconds if seconds <= self.max_retry_after else None


def encode(body: Any) -> bytes | None:
    """The request bytes, made once: every attempt sends exactly these (the digest binds them)."""
    if body is None:
        return None
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def exchange(call: Call[T], retry: Retry) -> Flow[T]:
    """Send `call` until it is answered, resending the identical bytes on connection loss, 503 and 429."""
    content = encode(call.body)
    lost_answer = False  # an earlier attempt reached the server and its answer never came
    for attempt in range(1, retry.attempts + 1):
        try:
            answer: Answer = yield Send(call.method, call.path, content, call.params, call.idempotency_key)
        except httpx.TransportError as exc:
            reached = not isinstance(exc, NOT_SENT)
            if attempt == retry.attempts or (reached and not call.resend):
                raise ConnectionLost(
                    f"{call.method} {call.path}: {exc!r}", maybe_applied=lost_answer or reached, attempts=attempt
                ) from exc
            lost_answer = lost_answer or reached
            yield Sleep(notify(retry, call, attempt, type(exc).__name__, retry.lost_connection_delay(attempt)))
            continue
        if answer.status in (429, 503) and attempt < retry.attempts:
            delay = retry.refusal_delay(attempt, answer)
            if delay is not None:
                yield Sleep(notify(retry, call, attempt, str(answer.status), delay))
                continue
        if 200 <= answer.status < 300:
            return call.parse(answer.data, answer.status)
        error = error_from(answer.status, answer.data, answer.headers)
        if lost_answer and call.recover is not None:
            return (yield from call.recover(error))
        raise error
    raise AssertionError("unreachable: the last attempt returns or raises")


def notify(retry: Retry, call: Call[Any], attempt: int, cause: str, delay: float) -> float:
    if retry.on_retry is not None:
        retry.on_retry(RetryNotice(method=call.method, path=call.path, attempt=attempt, cause=cause, delay=delay))
    return delay


def answer_of(response: httpx.Response) -> Answer:
    data: Any = None
    if response.content:
        try:
            data = response.json()
        except ValueError:
            data = response.text
    return Answer(response.status_code, response.headers, data)


def request_args(step: Send) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"} if step.content is not None else {}
    if step.idempotency_key is not None:
        headers["Idempotency-Key"] = step.idempotency_key
    return {
        "method": step.method,
        "url": API_PREFIX + step.path,
        "content": step.content,
        "params": step.params,
        "headers": headers,
    }


class SyncDriver:
    def __init__(self, http: httpx.Client, retry: Retry) -> None:
        self.http, self.retry = http, retry

    def run(self, op: Call[T] | Flow[T]) -> T:
        flow = exchange(op, self.retry) if isinstance(op, Call) else op
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = flow.send(reply) if error is None else flow.throw(error)
            except StopIteration as done:
                return cast(T, done.value)
            reply, error = None, None
            try:
                reply = self.do(step)
            except (httpx.TransportError, ClientError) as exc:
                error = exc  # thrown into the flow: it decides (resend, recover, or let it propagate)

    def do(self, step: Step) -> Any:
        if isinstance(step, Send):
            return answer_of(self.http.request(**request_args(step)))
        if isinstance(step, Call):
            return self.run(step)
        if isinstance(step, Wait) and step.inbox is not None:
            return step.inbox.wait(step.run_id, step.after, step.seconds)
        time.sleep(step.seconds)
        return None


class AsyncDriver:
    def __init__(self, http: httpx.AsyncClient, retry: Retry) -> None:
        self.http, self.retry = http, retry

    async def run(self, op: Call[T] | Flow[T]) -> T:
        flow = exchange(op, self.retry) if isinstance(op, Call) else op
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = flow.send(reply) if error is None else flow.throw(error)
            except StopIteration as done:
                return cast(T, done.value)
            reply, error = None, None
            try:
                reply = await self.do(step)
            except (httpx.TransportError, ClientError) as exc:
                error = exc

    async def do(self, step: Step) -> Any:
        if isinstance(step, Send):
            return answer_of(await self.http.request(**request_args(step)))
        if isinstance(step, Call):
            return await self.run(step)
        if isinstance(step, Wait) and step.inbox is not None:
            return await step.inbox.wait_async(step.run_id, step.after, step.seconds)
        await asyncio.sleep(step.seconds)
        return None
