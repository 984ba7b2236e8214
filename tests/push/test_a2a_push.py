"""A2A push notifications end to end (docs/api.md, "A2A"): the `a2a-sdk`'s client sets a push config on a
pause's task through the real server, the pause is answered and the run completes, and a real receiver gets
each state change once, from the one signed webhook sender (a real Celery worker): Standard Webhooks signature,
the client's token as X-A2A-Notification-Token, its authentication as Authorization, the body the SDK's own
StreamResponse."""

import asyncio
from typing import Any

import pytest
from a2a.types import (
    AuthenticationInfo,
    ListTaskPushNotificationConfigsRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from google.protobuf import json_format

from suspensions import services
from suspensions.models import DeliveryAttempt, Run, WebhookEndpoint, WebhookMessage
from suspensions.principals import Principal
from suspensions.tokens import create_token
from tests.api.test_a2a_client import answer, sent, server, session  # noqa: F401 - `server` is a fixture
from tests.api.test_waits import asgi  # noqa: F401 - `server` needs this fixture
from tests.helpers import approval_pause
from tests.processes import wait_for


@pytest.mark.django_db(transaction=True)
def test_the_sdks_client_subscribes_and_the_receiver_gets_each_state_once_signed(server, worker, receiver):  # noqa: F811
    record = approval_pause(scope="acme/support")
    task_id = str(record.suspension_id)
    secret = create_token(scope="acme", roles=("approver",), name="alice")[1]
    hooks = receiver()
    worker()
    auth = AuthenticationInfo(scheme="Bearer", credentials="receiver-secret")
    wanted = TaskPushNotificationConfig(task_id=task_id, id="hook-1", url=hooks.url, token="tok-1", authentication=auth)

    async def work(client: Any, card: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"push": card.capabilities.push_notifications}
        seen["set"] = await client.create_task_push_notification_config(wanted)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        seen["listed"] = [c.id for c in listed.configs]
        seen["answered"] = await sent(client, answer(task_id, "m-1", decision="approve", note="Looks right."))
        return seen

    seen = asyncio.run(session(server, secret, work))
    assert seen["push"] is True
    assert (seen["set"].id, seen["set"].url, seen["set"].token) == ("hook-1", hooks.url, "")  # the token is not shown
    assert seen["listed"] == ["hook-1"]
    assert seen["answered"].status.state == TaskState.TASK_STATE_WORKING
    wait_for(lambda: len(hooks.requests) >= 1, "the decision's notification")
    engine = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
    run = Run.objects.get(pk=record.run_id)
    services.complete_run(principal=engine, run_id=run.id, revision=run.revision)
    endpoint = WebhookEndpoint.objects.get(task_id=record.suspension_id, config_id="hook-1")
    messages = WebhookMessage.objects.filter(endpoint=endpoint)
    wait_for(lambda: messages.filter(status="delivered").count() == 2, "both notifications delivered")

    assert len(hooks.requests) == 2  # once each: two messages, two requests
    hooks.verified(endpoint.secret)  # signed by the webhook sender (raises on a bad signature)
    assert sorted(hooks.ids()) == sorted(str(m.id) for m in messages)
    for request in hooks.requests:
        assert request.headers["x-a2a-notification-token"] == "tok-1"
        assert request.headers["authorization"] == "Bearer receiver-secret"
    updates = [json_format.Parse(r.body, StreamResponse()).status_update for r in hooks.requests]
    assert [u.status.state for u in updates] == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert {(u.task_id, u.context_id) for u in updates} == {(task_id, str(record.run_id))}
    assert DeliveryAttempt.objects.filter(message__endpoint=endpoint).count() == 2
