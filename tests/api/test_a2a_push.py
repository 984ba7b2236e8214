"""A2A push notification configs through the JSON-RPC endpoint (docs/api.md, "A2A"): stored on a task as a
webhook endpoint bound to its run, read, listed and deleted by whoever reads the task; bad input is the
protocol's error and writes nothing; the fan-out sends a subscription its own task's state changes only."""

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from a2a.types import StreamResponse, TaskState
from django.test import Client
from google.protobuf import json_format

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import WebhookEndpoint, WebhookFormat, WebhookMessage
from suspensions.services import outbox
from tests.api.test_a2a import INVALID_PARAMS, INVALID_REQUEST, NOT_FOUND, answer, call, error_code, secret
from tests.helpers import approval_pause, snapshot

HOOK = "https://hooks.example.com/a2a"


def config(task_id: str, **fields: Any) -> dict[str, Any]:
    return {"taskId": task_id, "url": HOOK, **fields}


def fanned_out() -> None:
    """What the fan-out worker does, here: every undispatched outbox row."""
    while outbox.fan_out().dispatched:
        pass


@pytest.mark.django_db
def test_a_config_is_stored_on_the_task_read_listed_and_deleted():
    record = approval_pause()
    task_id, token = str(record.suspension_id), secret()
    auth = {"scheme": "Bearer", "credentials": "receiver-secret"}
    made = call(
        token, "CreateTaskPushNotificationConfig", config(task_id, id="hook-1", token="t-1", authentication=auth)
    )
    assert made["result"] == {"id": "hook-1", "taskId": task_id, "url": HOOK, "authentication": {"scheme": "Bearer"}}
    unnamed = call(token, "CreateTaskPushNotificationConfig", config(task_id))["result"]
    assert uuid.UUID(unnamed["id"])
    row = WebhookEndpoint.objects.get(task_id=record.suspension_id, config_id="hook-1")
    assert (row.format, row.run_id, row.scope, row.active) == (WebhookFormat.A2A, record.run_id, record.scope, True)
    assert json.loads(row.notify_headers) == {
        "X-A2A-Notification-Token": "t-1",
        "Authorization": "Bearer receiver-secret",
    }
    got = call(token, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "hook-1"})
    assert got["result"] == made["result"]
    listed = call(token, "ListTaskPushNotificationConfigs", {"taskId": task_id})["result"]["configs"]
    assert [c["id"] for c in listed] == ["hook-1", unnamed["id"]]
    # The same id again replaces the config: one row, the new URL.
    again = call(token, "CreateTaskPushNotificationConfig", config(task_id, id="hook-1", url=HOOK + "/v2"))
    assert again["result"]["url"] == HOOK + "/v2"
    assert WebhookEndpoint.objects.filter(task_id=record.suspension_id).count() == 2
    assert call(token, "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "hook-1"})["result"] is None
    gone = call(token, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "hook-1"})
    assert error_code(gone) == NOT_FOUND
    # The operators' webhook API does not list a task's subscriptions: they are the task's.
    operator = secret("acme", "operator")
    listed_hooks = Client().get("/api/v1/webhooks", HTTP_AUTHORIZATION=f"Bearer {operator}").json()
    assert all(h["url"] != HOOK for h in listed_hooks["results"])


BAD_CONFIGS = [
    ({"url": "ftp://hooks.example.com/a2a"}, "url"),
    ({"url": "https://user:pw@hooks.example.com/a2a"}, "url"),
    ({"url": ""}, "url"),
    ({"url": "https://" + "h" * 2000 + ".example.com/"}, "url"),
    ({"token": "line\r\nX-Injected: 1"}, "token"),
    ({"token": "t" * 1001}, "token"),
    ({"id": "i" * 201}, "id"),
    ({"authentication": {"credentials": "no-scheme"}}, "authentication.scheme"),
    ({"authentication": {"scheme": "Bearer", "credentials": "a\nb"}}, "authentication.credentials"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("fields", "named"), BAD_CONFIGS)
def test_a_bad_config_is_invalid_params_naming_the_field_and_writes_nothing(fields, named):
    record = approval_pause()
    token = secret()
    before = snapshot()
    refused = call(token, "CreateTaskPushNotificationConfig", config(str(record.suspension_id), **fields))
    assert error_code(refused) == INVALID_PARAMS
    assert named in json.dumps(refused["error"])
    assert snapshot() == before


@pytest.mark.django_db
def test_an_unknown_or_unseen_task_is_not_found_for_every_push_method_and_writes_nothing():
    record = approval_pause(scope="acme/support")
    insider, outsider = secret(), secret("globex")
    task_id = str(record.suspension_id)
    call(insider, "CreateTaskPushNotificationConfig", config(task_id, id="hook-1"))
    before = snapshot()
    for token, task in ((outsider, task_id), (insider, str(uuid.uuid4())), (insider, "../runs")):
        assert error_code(call(token, "CreateTaskPushNotificationConfig", config(task))) == NOT_FOUND
        assert error_code(call(token, "GetTaskPushNotificationConfig", {"taskId": task, "id": "hook-1"})) == NOT_FOUND
        assert error_code(call(token, "ListTaskPushNotificationConfigs", {"taskId": task})) == NOT_FOUND
        deleted = call(token, "DeleteTaskPushNotificationConfig", {"taskId": task, "id": "hook-1"})
        assert error_code(deleted) == NOT_FOUND
    unknown_id = call(insider, "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "hook-2"})
    assert error_code(unknown_id) == NOT_FOUND
    assert snapshot() == before


@pytest.mark.django_db
def test_an_auditor_reads_the_configs_but_cannot_set_or_delete_one():
    record = approval_pause()
    task_id = str(record.suspension_id)
    call(secret(), "CreateTaskPushNotificationConfig", config(task_id, id="hook-1"))
    auditor = secret("acme", "auditor")
    before = snapshot()
    assert len(call(auditor, "ListTaskPushNotificationConfigs", {"taskId": task_id})["result"]["configs"]) == 1
    refused = call(auditor, "CreateTaskPushNotificationConfig", config(task_id, id="hook-2"))
    assert error_code(refused) == INVALID_REQUEST
    assert refused["error"]["data"][0]["metadata"] == {"code": "forbidden", "status": "403"}
    denied_delete = call(auditor, "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "hook-1"})
    assert error_code(denied_delete) == INVALID_REQUEST
    assert snapshot() == before


def bodies(endpoint: WebhookEndpoint) -> list[Any]:
    """The endpoint's messages, oldest first, each body read back as the SDK's StreamResponse."""
    rows = WebhookMessage.objects.filter(endpoint=endpoint).order_by("event_id")
    return [json_format.Parse(m.body, StreamResponse()) for m in rows]


@pytest.mark.django_db
def test_the_fan_out_sends_a_subscription_its_own_tasks_changes_only():
    mine, other = approval_pause(), approval_pause()
    token = secret()
    call(token, "CreateTaskPushNotificationConfig", config(str(mine.suspension_id), id="hook-1"))
    call(token, "CreateTaskPushNotificationConfig", config(str(mine.suspension_id), id="hook-2"))
    call(token, "DeleteTaskPushNotificationConfig", {"taskId": str(mine.suspension_id), "id": "hook-2"})
    endpoint = WebhookEndpoint.objects.get(config_id="hook-1")
    fanned_out()
    assert bodies(endpoint) == []  # the pause was requested before: no change since the config
    call(token, "SendMessage", answer(str(other.suspension_id), {"decision": "approve"}))
    fanned_out()
    assert bodies(endpoint) == []  # another run's decision
    call(token, "SendMessage", answer(str(mine.suspension_id), {"decision": "deny", "reason": "No."}))
    fanned_out()
    sent = bodies(endpoint)
    # Denied: rejected, once; the run's failure that follows is not a second state of the task.
    assert [b.status_update.status.state for b in sent] == [TaskState.TASK_STATE_REJECTED]
    update = sent[0].status_update
    assert (update.task_id, update.context_id) == (str(mine.suspension_id), str(mine.run_id))
    assert update.metadata["type"] == "approval.decided"
    # The deleted config got nothing: every A2A message is hook-1's.
    assert WebhookMessage.objects.filter(endpoint__format=WebhookFormat.A2A).count() == 1


@pytest.mark.django_db
def test_a_run_cancelled_while_its_task_waits_sends_canceled_once():
    record = approval_pause()
    task_id = str(record.suspension_id)
    call(secret(), "CreateTaskPushNotificationConfig", config(task_id, id="hook-1"))
    engine = secret("acme", "engine", "approver")
    assert call(engine, "CancelTask", {"id": task_id})["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    fanned_out()
    sent = bodies(WebhookEndpoint.objects.get(config_id="hook-1"))
    assert [b.status_update.status.state for b in sent] == [TaskState.TASK_STATE_CANCELED]


@pytest.mark.django_db
def test_a_pause_nobody_answered_in_time_sends_canceled_once():
    record = approval_pause(ttl=60)
    call(secret(), "CreateTaskPushNotificationConfig", config(str(record.suspension_id), id="hook-1"))
    services.expire_batch(limit=10, now=db_now() + timedelta(hours=2))
    fanned_out()
    sent = bodies(WebhookEndpoint.objects.get(config_id="hook-1"))
    assert [b.status_update.status.state for b in sent] == [TaskState.TASK_STATE_CANCELED]
    assert sent[0].status_update.metadata["type"] == "suspension.expired"
