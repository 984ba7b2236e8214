"""Webhook endpoints over the API (docs/api.md, "7.8 Webhooks"): the operator's routes, their refusals and their scopes.

Delivery itself (signing, retries, the receiver) is tested with the delivery
task; here a message is written and left pending: with the plain `db` fixture
the transaction never commits, so the on-commit enqueue never fires.
"""

import base64
import uuid
from unittest import mock

import pytest
from django.utils import timezone

from suspensions.exceptions import InvalidRequest
from suspensions.models import DeliveryAttempt, OutboxEvent, WebhookEndpoint, WebhookMessage
from suspensions.principals import Principal
from suspensions.services import webhooks
from suspensions.wire.answers_operators import (
    DeliveryAttemptOut,
    WebhookEndpointOut,
    WebhookEndpointSecretOut,
    WebhookMessageOut,
)
from tests.api.test_shapes import written
from tests.helpers import client, post, problem, refused, snapshot

URL = "https://hooks.example.com/in?team=7"


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


@pytest.fixture
def globex_operator(db, token):
    return client(token("globex", ["operator"], "globex-ops"))


def create(c, **overrides):
    """POST a new endpoint; an override of None leaves the field out."""
    body = {"scope": "acme", "url": URL, "event_types": ["approval.requested"], **overrides}
    return post(c, "/api/v1/webhooks", {k: v for k, v in body.items() if v is not None})


def created(c, **overrides):
    response = create(c, **overrides)
    assert response.status_code == 201, response.content
    return response.json()


def message_of(endpoint_id, status="failed", attempts=2):
    """A message as the delivery task leaves it, with its attempt rows."""
    endpoint = WebhookEndpoint.objects.get(pk=endpoint_id)
    now = timezone.now()
    event = OutboxEvent(type="approval.requested", data={}, created_at=now, dispatched_at=now)
    event.stamp_scope(endpoint.scope)
    event.save()
    message = WebhookMessage(
        endpoint=endpoint,
        event_id=event.id,
        type=event.type,
        body='{"type":"approval.requested"}',
        status=status,
        attempts=attempts,
        next_attempt_at=now,
        created_at=now,
    )
    message.stamp_scope(endpoint.scope)
    message.save()
    for number in range(1, attempts + 1):
        DeliveryAttempt.objects.create(message=message, number=number, at=now, status_code=500, duration_ms=12)
    return message


# -- create, list, show ----------------------------------------------------------------------


def test_an_operator_creates_an_endpoint_and_sees_its_secret_once(operator):
    body = created(operator, description="pager", format="slack")
    assert body["secret"].startswith("whsec_")
    assert 24 <= len(base64.b64decode(body["secret"].removeprefix("whsec_"))) <= 32
    assert (body["scope"], body["url"], body["event_types"]) == ("acme", URL, ["approval.requested"])
    assert (body["format"], body["active"], body["created_by"]) == ("slack", True, "token:ops")
    shown = operator.get(f"/api/v1/webhooks/{body['id']}").json()
    assert "secret" not in shown and body["secret"] not in str(operator.get("/api/v1/webhooks").json())
    assert WebhookEndpoint.objects.get().secret == body["secret"]


def test_an_endpoint_created_without_scope_or_types_takes_the_operators_one_scope_and_every_type(operator):
    body = created(operator, scope=None, event_types=None)
    assert (body["scope"], body["event_types"], body["format"]) == ("acme", [], "standard")


def test_the_list_holds_the_operators_scopes_only_newest_first(operator, globex_operator, token):
    first, second = created(operator), created(operator, url="http://127.0.0.1:9000/hook")
    created(globex_operator, scope="globex")
    listed = operator.get("/api/v1/webhooks").json()
    assert [e["id"] for e in listed["results"]] == [second["id"], first["id"]]
    team = client(token("acme/support", ["operator"], "team-ops"))
    assert team.get("/api/v1/webhooks").json()["results"] == []


def test_the_list_is_cursor_paginated(operator):
    ids = [created(operator)["id"] for _ in range(3)]
    page = operator.get("/api/v1/webhooks?page_size=2").json()
    assert [e["id"] for e in page["results"]] == ids[:0:-1]
    rest = operator.get(page["next"]).json()
    assert [e["id"] for e in rest["results"]] == ids[:1]


def test_an_operator_of_the_workspace_manages_a_teams_endpoint(operator, token):
    team = client(token("acme/support", ["operator"], "team-ops"))
    body = created(team, scope="acme/support")
    assert operator.get(f"/api/v1/webhooks/{body['id']}").status_code == 200
    assert post(operator, f"/api/v1/webhooks/{body['id']}/disable", {}).json()["active"] is False


# -- disable, enable, rotate -------------------------------------------------------------------


def test_disable_and_enable_flip_the_endpoint_and_are_idempotent(operator):
    body = created(operator)
    off = post(operator, f"/api/v1/webhooks/{body['id']}/disable", {})
    assert (off.status_code, off.json()["active"], off.json()["disabled_reason"]) == (
        200,
        False,
        "disabled by token:ops",
    )
    assert post(operator, f"/api/v1/webhooks/{body['id']}/disable", {}).json()["active"] is False
    on = post(operator, f"/api/v1/webhooks/{body['id']}/enable", {}).json()
    assert (on["active"], on["disabled_reason"]) == (True, "")


def test_a_rotation_answers_the_new_secret_once_and_keeps_the_old_one_signing_for_a_day(operator):
    body = created(operator)
    rotated = post(operator, f"/api/v1/webhooks/{body['id']}/rotate-secret", {})
    assert rotated.status_code == 200
    new = rotated.json()["secret"]
    assert new.startswith("whsec_") and new != body["secret"]
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.secret, endpoint.previous_secret) == (new, body["secret"])
    grace = endpoint.previous_secret_expires_at - timezone.now()
    assert 23 * 3600 < grace.total_seconds() <= 24 * 3600
    assert operator.get(f"/api/v1/webhooks/{body['id']}").json()["previous_secret_expires_at"] is not None


# -- test events, messages, redelivery --------------------------------------------------------


def test_a_test_event_is_a_pending_message_for_this_endpoint_only(operator):
    body, other = created(operator), created(operator)
    response = post(operator, f"/api/v1/webhooks/{body['id']}/test", {})
    assert response.status_code == 202
    message = WebhookMessage.objects.get()
    assert response.json()["id"] == str(message.id)
    assert (str(message.endpoint_id), message.type, message.status) == (body["id"], "webhook.test", "pending")
    assert '"type":"webhook.test"' in message.body and body["id"] in message.body
    event = OutboxEvent.objects.get()
    # Already dispatched: the fan-out must not hand it to the scope's other endpoints.
    assert (event.id, event.type, event.dispatched_at is not None) == (message.event_id, "webhook.test", True)
    assert not WebhookMessage.objects.filter(endpoint_id=other["id"]).exists()


def test_a_test_event_and_a_redelivery_enqueue_their_delivery_on_commit(operator, django_capture_on_commit_callbacks):
    body = created(operator)
    failed = message_of(body["id"], "failed")
    with mock.patch("suspensions.services.outbox.current_app.send_task") as send_task:
        with django_capture_on_commit_callbacks(execute=True):
            tested = post(operator, f"/api/v1/webhooks/{body['id']}/test", {}).json()
        assert WebhookMessage.objects.get(pk=tested["id"]).endpoint_id == uuid.UUID(body["id"])
        with django_capture_on_commit_callbacks(execute=True):
            post(operator, f"/api/v1/webhooks/{body['id']}/messages/{failed.id}/redeliver", {})
    sent = [(c.args[0], c.kwargs["args"]) for c in send_task.call_args_list]
    # The endpoint's task: the redelivery's is the same one, still queued (services.outbox.enqueue_delivery).
    assert sent == [("suspensions.tasks.deliver_endpoint", [body["id"]])]


def test_messages_are_listed_newest_first_with_their_attempts(operator):
    body = created(operator)
    older = message_of(body["id"], "failed", attempts=2)
    newer = message_of(body["id"], "delivered", attempts=1)
    listed = operator.get(f"/api/v1/webhooks/{body['id']}/messages").json()["results"]
    assert [m["id"] for m in listed] == [str(newer.id), str(older.id)]
    assert [a["number"] for a in listed[1]["attempts"]] == [1, 2]
    assert listed[1]["attempts"][0] == {
        "number": 1,
        "at": listed[1]["attempts"][0]["at"],
        "status_code": 500,
        "error": "",
        "duration_ms": 12,
    }
    assert (listed[1]["status"], listed[1]["attempt_count"]) == ("failed", 2)


def test_a_failed_message_is_redelivered_pending_and_due_now_with_its_attempts_kept(operator):
    body = created(operator)
    message = message_of(body["id"], "failed", attempts=8)
    message.next_attempt_at = timezone.now() - timezone.timedelta(days=2)
    message.save()
    response = post(operator, f"/api/v1/webhooks/{body['id']}/messages/{message.id}/redeliver", {})
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["attempt_count"]) == ("pending", 8)
    message.refresh_from_db()
    assert (message.status, message.attempts, DeliveryAttempt.objects.count()) == ("pending", 8, 8)
    assert (timezone.now() - message.next_attempt_at).total_seconds() < 3600


def test_a_delivered_message_can_be_delivered_again(operator):
    body = created(operator)
    message = message_of(body["id"], "delivered", attempts=1)
    response = post(operator, f"/api/v1/webhooks/{body['id']}/messages/{message.id}/redeliver", {})
    assert (response.status_code, response.json()["status"], response.json()["delivered_at"]) == (202, "pending", None)


def test_the_answers_write_their_declared_keys_in_order(operator):
    body = created(operator)
    assert list(body) == [k for k in written(WebhookEndpointSecretOut) if k != "secret_withheld"]
    assert list(operator.get(f"/api/v1/webhooks/{body['id']}").json()) == written(WebhookEndpointOut)
    message = message_of(body["id"])
    listed = operator.get(f"/api/v1/webhooks/{body['id']}/messages").json()["results"]
    assert [m["id"] for m in listed] == [str(message.id)]
    assert list(listed[0]) == written(WebhookMessageOut)
    assert list(listed[0]["attempts"][0]) == written(DeliveryAttemptOut)
    assert WebhookMessageOut.of(message).wire() == listed[0]


# -- refusals: problem+json, nothing written --------------------------------------------------


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"url": "ftp://hooks.example.com/in"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https://user:pw@hooks.example.com/in"}, "url"),
        ({"url": "https://hooks.example.com/" + "a" * 2000}, "url"),
        ({"url": 7}, "url"),
        ({"event_types": ["approval.requested", "run.exploded"]}, "event_types"),
        ({"event_types": ["run.closed", "run.closed"]}, "event_types"),
        ({"event_types": "run.closed"}, "event_types"),
        ({"format": "teams"}, "format"),
        ({"scope": "Acme!"}, "scope"),
        ({"description": "d" * 501}, "description"),
        ({"secret": "whsec_mine"}, "secret"),
        ({"active": False}, "active"),
    ],
)
def test_a_bad_endpoint_is_refused_with_its_field_and_nothing_is_written(operator, overrides, field):
    body = refused(lambda: create(operator, **overrides), 400, "invalid_request")
    assert field in body["errors"]


def test_an_operator_of_several_scopes_must_name_the_scope(db):
    principal = Principal(
        name="user:olga", grants=(("acme", frozenset({"operator"})), ("globex", frozenset({"operator"})))
    )
    before = snapshot()
    with pytest.raises(InvalidRequest) as refusal:
        webhooks.create_endpoint(principal=principal, scope=None, url=URL, event_types=[])
    assert "scope" in refusal.value.extra["errors"] and snapshot() == before


@pytest.mark.parametrize("roles", [["engine"], ["approver", "auditor", "bus"]])
def test_a_caller_without_the_operator_role_is_refused_on_every_route(db, token, operator, roles):
    endpoint = created(operator)
    message = message_of(endpoint["id"])
    c = client(token("acme", roles, "not-ops"))
    base = f"/api/v1/webhooks/{endpoint['id']}"
    for send in (
        lambda: create(c),
        lambda: c.get("/api/v1/webhooks"),
        lambda: c.get(base),
        lambda: post(c, f"{base}/disable", {}),
        lambda: post(c, f"{base}/enable", {}),
        lambda: post(c, f"{base}/rotate-secret", {}),
        lambda: post(c, f"{base}/test", {}),
        lambda: c.get(f"{base}/messages"),
        lambda: post(c, f"{base}/messages/{message.id}/redeliver", {}),
    ):
        refused(send, 403, "forbidden")


def test_an_operator_cannot_create_an_endpoint_in_a_scope_it_does_not_hold(operator, token):
    refused(lambda: create(operator, scope="globex"), 403, "forbidden")
    team = client(token("acme/support", ["operator"], "team-ops"))
    refused(lambda: create(team, scope="acme"), 403, "forbidden")


def test_another_scopes_endpoint_and_its_messages_are_not_found(operator, globex_operator):
    endpoint = created(operator)
    message = message_of(endpoint["id"])
    base = f"/api/v1/webhooks/{endpoint['id']}"
    for send in (
        lambda: globex_operator.get(base),
        lambda: post(globex_operator, f"{base}/disable", {}),
        lambda: post(globex_operator, f"{base}/enable", {}),
        lambda: post(globex_operator, f"{base}/rotate-secret", {}),
        lambda: post(globex_operator, f"{base}/test", {}),
        lambda: globex_operator.get(f"{base}/messages"),
        lambda: post(globex_operator, f"{base}/messages/{message.id}/redeliver", {}),
    ):
        refused(send, 404, "not_found")


def test_a_message_of_another_endpoint_is_not_redelivered_through_this_one(operator):
    mine, other = created(operator), created(operator)
    message = message_of(other["id"])
    url = f"/api/v1/webhooks/{mine['id']}/messages/{message.id}/redeliver"
    refused(lambda: post(operator, url, {}), 404, "not_found")
    refused(
        lambda: post(operator, f"/api/v1/webhooks/{mine['id']}/messages/{uuid.uuid4()}/redeliver", {}), 404, "not_found"
    )


def test_a_pending_message_is_not_redelivered(operator):
    endpoint = created(operator)
    message = message_of(endpoint["id"], "pending", attempts=1)
    url = f"/api/v1/webhooks/{endpoint['id']}/messages/{message.id}/redeliver"
    refused(lambda: post(operator, url, {}), 409, "invalid_state")


def test_a_disabled_endpoint_gets_no_test_and_no_redelivery(operator):
    endpoint = created(operator)
    message = message_of(endpoint["id"])
    assert post(operator, f"/api/v1/webhooks/{endpoint['id']}/disable", {}).status_code == 200
    base = f"/api/v1/webhooks/{endpoint['id']}"
    refused(lambda: post(operator, f"{base}/test", {}), 409, "invalid_state")
    refused(lambda: post(operator, f"{base}/messages/{message.id}/redeliver", {}), 409, "invalid_state")


def test_an_unknown_endpoint_is_not_found_and_an_anonymous_caller_is_unauthenticated(operator):
    problem(operator.get(f"/api/v1/webhooks/{uuid.uuid4()}"), 404, "not_found")
    from rest_framework.test import APIClient

    refused(lambda: APIClient().get("/api/v1/webhooks"), 401, "unauthenticated")
