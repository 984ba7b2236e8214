"""The client's methods, listed once in `Endpoints`, which `Client` and `AsyncClient` share.

Each method is an `Op`: the endpoint's `Call` (or a helper's flow) from
_calls.py, _calls_more.py, _calls_admin.py or loop.py, bound at attribute access to the
client's driver. On a `Client` (a `SyncEndpoints`) it returns the result; on
an `AsyncClient` (an `AsyncEndpoints`) it returns a coroutine of the same
result. The signature and the docstring are the builder's. Only the driver,
the transport, differs between the two (see _transport.py); client.py and
aio.py add their constructors and closing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, overload

from . import _calls as calls
from . import _calls_admin as admin
from . import _calls_more as more
from . import loop
from ._transport import API_PREFIX, AsyncDriver, Call, Flow, SyncDriver

P = ParamSpec("P")
T = TypeVar("T")
VERSION = "0.1.0"


class Op(Generic[P, T]):
    """A client method made from a builder that returns a `Call[T]` or a `Flow[T]`."""

    def __init__(self, build: Callable[P, Call[T]] | Callable[P, Flow[T]]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type) -> Op[P, T]: ...
    @overload
    def __get__(self, client: SyncEndpoints, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: AsyncEndpoints, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: Any, owner: type) -> Any:
        if client is None:
            return self
        return functools.wraps(self.build)(client._bind(self.build))


class Endpoints:
    """One method per endpoint of docs/api.md, then the engine-loop helpers."""

    # runs
    register = Op(calls.register)
    list_runs = Op(calls.list_runs)
    get_run = Op(calls.get_run)
    wait_run = Op(calls.wait_run)
    list_events = Op(calls.list_events)
    suspend = Op(calls.suspend)
    resume = Op(calls.resume)
    early_result = Op(calls.early_result)
    resume_by_callback = Op(calls.resume_by_callback)
    complete = Op(calls.complete)
    fail = Op(calls.fail)
    cancel = Op(calls.cancel)
    # admissions and starts
    admit_reply = Op(calls.admit_reply)
    list_admissions = Op(calls.list_admissions)
    latest_admission = Op(calls.latest_admission)
    admitted_work = Op(calls.admitted_work)
    start = Op(calls.start)
    # suspensions and approvals
    list_suspensions = Op(calls.list_suspensions)
    get_suspension = Op(calls.get_suspension)
    extend_suspension = Op(more.extend_suspension)
    list_approvals = Op(calls.list_approvals)
    get_approval = Op(more.get_approval)
    link_approval = Op(more.link_approval)
    decide = Op(calls.decide)
    decide_many = Op(calls.decide_many)
    # receipts, closures, flow waits, discovery
    get_expiry = Op(more.get_expiry)
    # the audit trail
    audit_public_key = Op(more.audit_public_key)
    audit_export = Op(more.audit_export)
    close_run = Op(more.close_run)
    get_closure = Op(more.get_closure)
    park_flow_wait = Op(more.park_flow_wait)
    dispatch_resume = Op(more.dispatch_resume)
    agent_reply_runs = Op(more.agent_reply_runs)
    # delegations
    create_delegation = Op(more.create_delegation)
    list_delegations = Op(more.list_delegations)
    get_delegation = Op(more.get_delegation)
    end_delegation = Op(more.end_delegation)
    # approval floors
    create_approval_floor = Op(more.create_approval_floor)
    list_approval_floors = Op(more.list_approval_floors)
    get_approval_floor = Op(more.get_approval_floor)
    update_approval_floor = Op(more.update_approval_floor)
    delete_approval_floor = Op(more.delete_approval_floor)
    # notification routes
    create_notification_route = Op(more.create_notification_route)
    list_notification_routes = Op(more.list_notification_routes)
    get_notification_route = Op(more.get_notification_route)
    delete_notification_route = Op(more.delete_notification_route)
    disable_notification_route = Op(more.disable_notification_route)
    enable_notification_route = Op(more.enable_notification_route)
    # webhooks
    create_webhook = Op(more.create_webhook)
    list_webhooks = Op(more.list_webhooks)
    get_webhook = Op(more.get_webhook)
    disable_webhook = Op(more.disable_webhook)
    enable_webhook = Op(more.enable_webhook)
    rotate_webhook_secret = Op(more.rotate_webhook_secret)
    test_webhook = Op(more.test_webhook)
    webhook_messages = Op(more.webhook_messages)
    redeliver = Op(more.redeliver)
    # role mappings and role changes
    create_role_mapping = Op(admin.create_role_mapping)
    list_role_mappings = Op(admin.list_role_mappings)
    get_role_mapping = Op(admin.get_role_mapping)
    delete_role_mapping = Op(admin.delete_role_mapping)
    list_role_changes = Op(admin.list_role_changes)
    # legal holds
    create_legal_hold = Op(admin.create_legal_hold)
    list_legal_holds = Op(admin.list_legal_holds)
    release_legal_hold = Op(admin.release_legal_hold)
    # the engine loop
    pause_for_approval = Op(loop.pause_for_approval)
    pause_for_tools = Op(loop.pause_for_tools)
    wait_for_admission = Op(loop.wait_for_admission)

    def _bind(self, build: Callable[..., Any]) -> Callable[..., Any]:
        raise NotImplementedError


class SyncEndpoints(Endpoints):
    """The methods run by a `SyncDriver`: each returns its result (`Client`)."""

    driver: SyncDriver

    def _bind(self, build: Callable[..., Any]) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            return self.driver.run(build(*args, **kwargs))

        return method


class AsyncEndpoints(Endpoints):
    """The methods run by an `AsyncDriver`: each returns a coroutine of its result (`AsyncClient`)."""

    driver: AsyncDriver

    def _bind(self, build: Callable[..., Any]) -> Callable[..., Any]:
        async def method(*args: Any, **kwargs: Any) -> Any:
            return await self.driver.run(build(*args, **kwargs))

        return method


def http_options(base_url: str, token: str, headers: Mapping[str, str] | None, timeout: float) -> dict[str, Any]:
    """What httpx.Client and httpx.AsyncClient are both built with."""
    root = base_url.rstrip("/").removesuffix(API_PREFIX)
    return {
        "base_url": root,
        "headers": {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": f"suspensions-client/{VERSION}",
            **(headers or {}),
        },
        "timeout": timeout,
        "follow_redirects": False,
    }
