"""The audit trail: one event per transition, none for refusals or replays, and no way to change one through the app."""

import json

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory

from suspensions.models import Admission, ClosureReceipt, Event, ExpiryReceipt, Start
from tests.helpers import client, pause, post, register, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

EVIDENCE = (Event, Admission, Start, ExpiryReceipt, ClosureReceipt)


def kinds(run_id: str) -> list[tuple[str, int]]:
    return list(Event.objects.filter(run_id=run_id).order_by("id").values_list("kind", "revision"))


def test_a_scenario_writes_one_event_per_transition_and_none_for_refusals_or_replays(engine, token):
    approver, other = client(token("acme", ["approver"], "ann")), client(token("acme", ["approver"], "bob"))
    bus = client(token("acme", ["bus"], "bus"))

    tool = pause(engine)  # T1, T2
    body = {"version": version(tool), "results": [{"call_id": "c1", "content": "ok"}]}
    assert post(engine, f"/api/v1/runs/{tool['run_id']}/resume", body).status_code == 201  # T3 = T4 + T5
    assert post(engine, f"/api/v1/runs/{tool['run_id']}/resume", body).status_code == 200  # replay
    changed = {**body, "results": [{"call_id": "c1", "content": "other"}]}
    assert post(engine, f"/api/v1/runs/{tool['run_id']}/resume", changed).status_code == 409  # conflict
    assert post(engine, f"/api/v1/runs/{tool['run_id']}/complete", {"revision": 3}).status_code == 200  # T8

    gate = pause(engine, reason="approval")  # T1, T2
    decide = {"version": version(gate), "decision": "approve"}
    first = post(approver, f"/api/v1/approvals/{gate['id']}/decide", decide)
    assert first.status_code == 201  # T4
    assert post(approver, f"/api/v1/approvals/{gate['id']}/decide", decide).status_code == 200  # replay
    assert post(other, f"/api/v1/approvals/{gate['id']}/decide", decide).status_code == 409  # another approver
    start = f"/api/v1/admissions/{first.json()['admission']['id']}/start"
    assert post(engine, start, None).status_code == 201  # T5
    assert post(engine, start, None).status_code == 409  # resume_already_started
    assert post(engine, f"/api/v1/runs/{gate['run_id']}/cancel", {"revision": 3}).status_code == 200  # T7

    denied = pause(engine, reason="approval")  # T1, T2
    deny = {"version": version(denied), "decision": "deny", "reason": "too much"}
    assert post(approver, f"/api/v1/approvals/{denied['id']}/decide", deny).status_code == 201  # T6
    assert post(approver, f"/api/v1/approvals/{denied['id']}/decide", deny).status_code == 200  # replay

    reply = pause(engine, reason="agent_reply")  # T1, T2
    admit = {"version": version(reply), "input": '"yes"', "reply_with": "q-1"}
    admitted = post(bus, f"/api/v1/runs/{reply['run_id']}/admissions", admit)
    assert admitted.status_code == 201  # T4
    assert post(engine, f"/api/v1/admissions/{admitted.json()['admission']['id']}/start", None).status_code == 201
    assert post(engine, f"/api/v1/runs/{reply['run_id']}/fail", {"revision": 3, "error": "x"}).status_code == 200

    lone = register(engine)  # T1
    assert post(engine, f"/api/v1/runs/{lone['id']}/complete", {"revision": 7}).status_code == 409

    assert kinds(tool["run_id"]) == [
        ("registered", 1),
        ("suspended", 2),
        ("admitted", 3),
        ("started", 3),
        ("completed", 4),
    ]
    assert kinds(gate["run_id"]) == [
        ("registered", 1),
        ("suspended", 2),
        ("admitted", 3),
        ("started", 3),
        ("cancelled", 4),
    ]
    assert kinds(denied["run_id"]) == [("registered", 1), ("suspended", 2), ("denied", 3)]
    assert kinds(reply["run_id"]) == [
        ("registered", 1),
        ("suspended", 2),
        ("admitted", 3),
        ("started", 3),
        ("failed", 4),
    ]
    assert kinds(lone["id"]) == [("registered", 1)]
    assert Event.objects.count() == 5 + 5 + 3 + 5 + 1


def test_every_event_names_the_authenticated_actor_and_never_one_from_the_body(engine, token):
    approver = client(token("acme", ["approver"], "ann"))
    gate = pause(engine, reason="approval")
    body = {"version": version(gate), "decision": "approve", "reason": "actor: token:mallory"}
    assert post(approver, f"/api/v1/approvals/{gate['id']}/decide", body).status_code == 201
    actors = list(Event.objects.filter(run_id=gate["run_id"]).order_by("id").values_list("actor", flat=True))
    assert actors == ["token:engine", "token:engine", "token:ann"]


def test_no_api_operation_updates_or_deletes_a_record_only_configuration_changes(db):
    """Runs, pauses, admissions, receipts and events are never updated or deleted through the API; an operator's
    approval floors, notification routes and role mappings (configuration, like webhook endpoints) are the resources
    edited or removed in place."""
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    edited = {p for p, item in schema["paths"].items() for m in item if m in {"put", "patch", "delete"}}
    assert edited == {"/api/v1/approval-floors/{id}", "/api/v1/notification-routes/{id}", "/api/v1/role-mappings/{id}"}


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_event_timeline_refuses_every_write(engine, method):
    s = pause(engine)
    before = list(Event.objects.order_by("id").values())
    response = getattr(engine, method)(f"/api/v1/runs/{s['run_id']}/events", data="{}", content_type="application/json")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert list(Event.objects.order_by("id").values()) == before


@pytest.mark.parametrize("model", EVIDENCE, ids=lambda m: m.__name__)
def test_the_admin_grants_nobody_add_change_or_delete_on_evidence(db, model):
    superuser = get_user_model().objects.create_superuser(username="root", password="x")
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]
    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_an_event_survives_a_delete_posted_to_the_admin(engine):
    s = pause(engine)
    event = Event.objects.filter(run_id=s["run_id"]).first()
    superuser = get_user_model().objects.create_superuser(username="root", password="x")
    browser = Client()
    browser.force_login(superuser)
    before = list(Event.objects.order_by("id").values())
    response = browser.post(f"/admin/suspensions/event/{event.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    response = browser.post(f"/admin/suspensions/event/{event.pk}/change/", {"kind": "forged"})
    assert response.status_code == 403
    assert list(Event.objects.order_by("id").values()) == before
