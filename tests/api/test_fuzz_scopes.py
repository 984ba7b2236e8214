"""Cross-scope sweep over every API operation in the OpenAPI schema and every console URL with an id.

Driven by the schema and the URLconf, so a new endpoint is covered without
editing this file. A principal of another scope (a sibling, a name that
shares a prefix, a child of the owner's scope) gets exactly what it gets for
an id that does not exist, and writes nothing; lists never show a foreign row.
"""

import json
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from suspensions.models import Membership
from tests.helpers import call, client, continuation, member, pause, post, snapshot, version

ROLES = ("engine", "bus", "approver", "auditor", "operator")
FOREIGN_SCOPES = ("other", "acmex", "acme/sub")
LONG_LIVED = ("wait_run", "stream_events")


def bodies(ids: dict[str, str]) -> dict[tuple[str, str], object]:
    """Well-formed bodies for the id-addressed writes, so the request reaches the scope check."""
    v = {"run_id": ids["run"], "suspension_id": ids["suspension"], "run_revision": 2}
    return {
        ("post", "/api/v1/runs/{id}/suspend"): {
            "revision": 2,
            "reason": "external_tool",
            "pending": [call()],
            "continuation": continuation(),
        },
        ("post", "/api/v1/runs/{id}/resume"): {"version": v, "results": [{"call_id": "c1", "content": "x"}]},
        ("post", "/api/v1/runs/{id}/complete"): {"revision": 2},
        ("post", "/api/v1/runs/{id}/cancel"): {"revision": 2},
        ("post", "/api/v1/runs/{id}/fail"): {"revision": 2, "error": "x"},
        ("post", "/api/v1/runs/{id}/admissions"): {"version": v, "input": '"hi"', "reply_with": "q-1"},
        ("post", "/api/v1/approvals/{id}/decide"): {"version": v, "decision": "approve"},
    }


def kind(path: str, name: str) -> str:
    if name == "suspension_id" or path.startswith(("/api/v1/suspensions/", "/api/v1/approvals/")):
        return "suspension"
    if path.startswith("/api/v1/admissions/"):
        return "admission"
    if name == "message_id":
        return "message"
    if path.startswith("/api/v1/webhooks/"):
        return "webhook"
    if path.startswith("/api/v1/approval-floors/"):
        return "floor"
    if path.startswith("/api/v1/notification-routes/"):
        return "route"
    if path.startswith("/api/v1/delegations/"):
        return "delegation"
    if path.startswith("/api/v1/role-mappings/"):
        return "mapping"
    if path.startswith("/api/v1/legal-holds/"):
        return "hold"
    assert path.startswith("/api/v1/runs/"), f"no object kind known for {path}: add it to kind()"
    return "run"


def fill(path: str, ids: dict[str, str]) -> str:
    out = path
    for name in ("id", "suspension_id", "message_id"):
        out = out.replace("{" + name + "}", ids[kind(path, name)])
    assert "{" not in out, f"unknown path parameter in {path}"
    return out


def send(c, method: str, url: str, body: object) -> object:
    if method == "get":
        return c.get(url)
    return getattr(c, method)(url, data=json.dumps(body or {}), content_type="application/json")


def shape(response) -> tuple:
    body = response.json() if response["Content-Type"].startswith(("application/json", "application/problem")) else {}
    return response.status_code, body.get("code"), body.get("title")


@pytest.fixture
def acme(db, token):
    """Rows of every kind in scope acme: a run paused for approval, a resumed one with an admission and a start."""
    owner = client(token("acme", ROLES, "acme-owner"))
    approval = pause(owner, reason="approval")
    tool = pause(owner)
    resumed = post(
        owner,
        f"/api/v1/runs/{tool['run_id']}/resume",
        {"version": version(tool), "results": [{"call_id": "c1", "content": "ok"}]},
    ).json()
    reply = pause(owner, reason="agent_reply")
    hook = post(owner, "/api/v1/webhooks", {"scope": "acme", "url": "https://hooks.example.com/acme"}).json()
    sent = post(owner, f"/api/v1/webhooks/{hook['id']}/test", {}).json()
    floor = post(owner, "/api/v1/approval-floors", {"scope": "acme", "quorum": 2}).json()
    route = post(owner, "/api/v1/notification-routes", {"scope": "acme", "kind": "email", "target": "a@example.com"})
    route = route.json()
    for name in ("alice", "bob"):
        member(name, {"acme": ["approver"]}, is_staff=True)
    ends = (timezone.now() + timedelta(days=1)).isoformat()
    delegation = post(owner, "/api/v1/delegations", {"from": "alice", "to": "bob", "scope": "acme", "ends_at": ends})
    mapping = post(owner, "/api/v1/role-mappings", {"group": "acme-approvers", "scope": "acme", "role": "approver"})
    hold = post(owner, "/api/v1/legal-holds", {"scope": "acme", "reason": "a case"})
    made = {"delegation": delegation.json()["id"], "mapping": mapping.json()["id"], "hold": hold.json()["id"]}
    ids = {
        "run": approval["run_id"],
        "suspension": approval["id"],
        "admission": resumed["admission"]["id"],
        "webhook": hook["id"],
        "message": sent["id"],
        "floor": floor["id"],
        "route": route["id"],
        **made,
    }
    every = {
        *made.values(),
        approval["run_id"],
        approval["id"],
        tool["run_id"],
        tool["id"],
        resumed["admission"]["id"],
        reply["run_id"],
        reply["id"],
        hook["id"],
        sent["id"],
        floor["id"],
        route["id"],
    }
    return ids, every


def operations():
    """Every operation but the waits: they read on a thread of their own, which sees no uncommitted row, and the
    stream never ends (tests/api/test_waits.py holds their 404 for another scope's run, through uvicorn)."""
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"} and operation["operationId"] not in LONG_LIVED:
                yield method, path


@pytest.mark.parametrize("scope", FOREIGN_SCOPES)
def test_a_foreign_scope_gets_the_answer_of_a_missing_id_on_every_operation(acme, token, scope):
    ids, _ = acme
    missing = {k: str(uuid.uuid4()) for k in ids}
    foreign = client(token(scope, ROLES, f"foreign-{scope}"))
    table = bodies(ids)
    checked = 0
    for method, path in operations():
        if "{" not in path or "{token}" in path:
            continue  # a callback URL's token is a capability, not an id of a scope (tests/api/test_callbacks.py)
        before = snapshot()
        real = send(foreign, method, fill(path, ids), table.get((method, path)))
        absent = send(foreign, method, fill(path, missing), bodies(missing).get((method, path)))
        assert shape(real) == shape(absent), (method, path, real.content[:300])
        if (method, path) in table or method == "get":
            assert shape(real)[:2] == (404, "not_found"), (method, path, real.content[:300])
        assert snapshot() == before, (method, path)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("scope", FOREIGN_SCOPES)
def test_no_list_shows_a_row_of_another_scope(acme, token, scope):
    _, every = acme
    foreign = client(token(scope, ROLES, f"foreign-{scope}"))
    lists = [path for method, path in operations() if method == "get" and "{" not in path]
    assert "/api/v1/runs" in lists
    for path in lists:
        for query in ("", "?scope=acme", "?state=paused", "?reason=approval"):
            response = foreign.get(path + query)
            body = b"".join(response.streaming_content) if response.streaming else response.content  # the export
            assert response.status_code in (200, 400, 403), (path, query, body[:300])
            leaked = [i for i in every if i in body.decode()]
            assert leaked == [], (path, query)


def console_patterns(resolver=None, prefix=""):
    """Every console URL pattern that takes an object id, with its route."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from console_patterns(entry, route)
        elif isinstance(entry, URLPattern) and route.startswith("console/") and "<uuid:" in route:
            yield route


def test_a_staff_member_of_another_scope_gets_404_on_every_console_page_with_an_id(acme):
    ids, _ = acme
    user = get_user_model().objects.create_user(username="stranger", password="x", is_staff=True)
    for role in ROLES:
        m = Membership(user=user, role=role)
        m.stamp_scope("other")
        m.save()
    browser = Client()
    browser.force_login(user)
    routes = list(console_patterns())
    for route in routes:
        url = "/" + route.replace("<uuid:suspension_id>", ids["suspension"])
        url = url.replace("<uuid:message_id>", ids["message"])
        owners = {"approvals": "suspension", "webhooks": "webhook", "approval-floors": "floor"}
        owner = next((o for part, o in owners.items() if f"console/{part}/" in route), "run")
        url = url.replace("<uuid:pk>", ids[owner])
        before = snapshot()
        answers = {method: getattr(browser, method)(url) for method in ("get", "post")}
        statuses = {method: answer.status_code for method, answer in answers.items()}
        # Each page answers 404 to the method it serves; 405 only to the one it does not; a GET of
        # the POST-only decide URL leads back to its approval page (itself a 404 here), nothing else.
        if url.endswith("/decide"):
            assert (statuses["get"], answers["get"]["Location"]) == (302, url.removesuffix("decide")), url
            assert browser.get(answers["get"]["Location"]).status_code == 404, url
            del statuses["get"]
        assert set(statuses.values()) <= {404, 405} and 404 in statuses.values(), (url, statuses)
        assert snapshot() == before, url
    assert len(routes) >= 5
