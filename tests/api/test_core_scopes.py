"""Scope visibility (docs/api.md, "1. Words"): a holder of `a` sees `a/x`; `b` and `a/x` see nothing of `a`, not even
its ids."""

import pytest

from tests.helpers import call, client, continuation, pause, refused, register, version

SCOPES = ("a", "a/x", "b")


@pytest.fixture
def engines(db, token):
    return {scope: client(token(scope, ["engine"], f"engine-{scope}")) for scope in SCOPES}


def objects_of(c, scope):
    """A paused run and a running run of `scope`."""
    return {"paused": pause(c, scope=scope), "running": register(c, scope=scope)}


ENDPOINTS = {
    "run detail": lambda o: ("get", f"/api/v1/runs/{o['paused']['run_id']}", None),
    "run events": lambda o: ("get", f"/api/v1/runs/{o['paused']['run_id']}/events", None),
    "run admissions": lambda o: ("get", f"/api/v1/runs/{o['paused']['run_id']}/admissions", None),
    "suspension detail": lambda o: ("get", f"/api/v1/suspensions/{o['paused']['id']}", None),
    "suspend": lambda o: (
        "post",
        f"/api/v1/runs/{o['running']['id']}/suspend",
        {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()},
    ),
    "resume": lambda o: (
        "post",
        f"/api/v1/runs/{o['paused']['run_id']}/resume",
        {"version": version(o["paused"]), "results": [{"call_id": "c1", "content": "ok"}]},
    ),
    "complete": lambda o: ("post", f"/api/v1/runs/{o['running']['id']}/complete", {"revision": 1}),
    "fail": lambda o: ("post", f"/api/v1/runs/{o['running']['id']}/fail", {"revision": 1, "error": "boom"}),
    "cancel": lambda o: ("post", f"/api/v1/runs/{o['paused']['run_id']}/cancel", {"revision": 2}),
}


def send(c, method, url, body):
    return getattr(c, method)(url, data=body, format="json")


@pytest.mark.parametrize("owner, viewer", [("a", "b"), ("a", "a/x")], ids=["sibling", "child"])
@pytest.mark.parametrize("endpoint", ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_an_object_outside_the_callers_scope_is_not_found(engines, endpoint, owner, viewer):
    method, url, body = endpoint(objects_of(engines[owner], owner))
    refused(lambda: send(engines[viewer], method, url, body), 404, "not_found")


@pytest.mark.parametrize("endpoint", ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_an_object_below_the_callers_scope_is_visible_and_actionable(engines, endpoint):
    method, url, body = endpoint(objects_of(engines["a/x"], "a/x"))
    response = send(engines["a"], method, url, body)
    assert response.status_code in (200, 201), response.content


LISTS = {
    "runs": ("/api/v1/runs", lambda o: {o["paused"]["run_id"], o["running"]["id"]}),
    "suspensions": ("/api/v1/suspensions", lambda o: {o["paused"]["id"]}),
}


@pytest.mark.parametrize(
    "owner, viewer, visible",
    [("a", "b", False), ("a", "a/x", False), ("a/x", "a", True), ("a/x", "a/x", True), ("b", "a", False)],
)
@pytest.mark.parametrize("url, ids_of", LISTS.values(), ids=LISTS.keys())
def test_lists_hold_exactly_the_rows_in_the_callers_scope(engines, url, ids_of, owner, viewer, visible):
    ids = ids_of(objects_of(engines[owner], owner))
    listed = {row["id"] for row in engines[viewer].get(url).json()["results"]}
    assert ids.issubset(listed) is visible
    assert ids.isdisjoint(listed) is not visible


@pytest.mark.parametrize("url", ["/api/v1/runs?scope=a", "/api/v1/suspensions?scope=a"])
def test_a_scope_filter_never_widens_what_the_caller_sees(engines, url):
    objects_of(engines["a"], "a")
    assert engines["b"].get(url).json()["results"] == []
    assert engines["a/x"].get(url).json()["results"] == []


def test_a_child_scope_token_cannot_register_in_its_parent(engines):
    refused(lambda: send(engines["a/x"], "post", "/api/v1/runs", {"agent_id": "x", "scope": "a"}), 403, "forbidden")


def test_events_of_a_visible_run_carry_its_scope(engines):
    s = pause(engines["a/x"], scope="a/x")
    rows = engines["a"].get(f"/api/v1/runs/{s['run_id']}/events").json()["results"]
    assert {row["scope"] for row in rows} == {"a/x"}
