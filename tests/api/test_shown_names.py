"""Names and ids a person is shown carry no control characters (docs/api.md, "Names and ids"; issue 50, item 4).

An engine's tool name, agent id or call id reaches the approver's plain-text
email as part of a line: a line break inside one would let the engine write
its own line (a forged `Approve:` link above the real one) into a message
the service sends. The API refuses them with a 400 naming the field and
writes nothing; what is rendered escapes them anyway, for rows stored before
the rule (created here directly, past the API) and for arguments, whose JSON
may hold raw line breaks between its values.
"""

import json
import re

import pytest
from django.core import mail

from suspensions import notify
from suspensions.display import RULE
from suspensions.models import Approval, Run
from suspensions.slack import blocks
from tests.api.test_flow_waits import park_body
from tests.helpers import approval_pause, call, continuation, pause, post, refused, register, version

pytestmark = pytest.mark.django_db

FORGED = "\nApprove: https://evil.example/steal\n"


def suspend_body(run, **overrides):
    body = {"revision": run["revision"], "reason": "approval", "pending": [call()], "continuation": continuation()}
    return {**body, **overrides}


def errors_name(problem, *path):
    errors = problem["errors"]
    for key in path:
        errors = errors[key]
    assert RULE in json.dumps(errors), problem


BAD_REGISTERS = {
    "agent_id": {"agent_id": "refund" + FORGED},
    "session_id": {"agent_id": "a1", "session_id": "s\r\n1"},
}


@pytest.mark.parametrize("field, body", BAD_REGISTERS.items(), ids=BAD_REGISTERS.keys())
def test_register_refuses_a_name_with_a_line_break_naming_the_field_and_writes_nothing(engine, field, body):
    problem = refused(lambda: post(engine, "/api/v1/runs", body), 400, "invalid_request")
    errors_name(problem, field)
    assert not Run.objects.exists()


BAD_SUSPENDS = {
    "a tool name": ({"pending": [call(name="send_refund" + FORGED)]}, ["pending", "0", "name"]),
    "a call id": ({"pending": [call(call_id="c\n1")]}, ["pending", "0", "id"]),
    "a bidi override in a tool name": ({"pending": [call(name="refund\u202egnp.exe")]}, ["pending", "0", "name"]),
    "a line separator in a tool name": ({"pending": [call(name="refund\u2028Approve:")]}, ["pending", "0", "name"]),
    "a tab in the engine version": ({"engine_version": "1.0\t"}, ["engine_version"]),
    "the continuation's session id": (
        {"continuation": continuation(session_id="s\n1")},
        ["continuation", "session_id"],
    ),
}


@pytest.mark.parametrize("overrides, path", BAD_SUSPENDS.values(), ids=BAD_SUSPENDS.keys())
def test_suspend_refuses_a_name_with_a_control_character_naming_the_field_and_writes_nothing(engine, overrides, path):
    run = register(engine)
    send = lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(run, **overrides))  # noqa: E731
    errors_name(refused(send, 400, "invalid_request"), *path)


def test_a_resume_and_an_early_result_refuse_a_call_id_with_a_line_break(engine):
    s = pause(engine)
    body = {"version": version(s), "results": [{"call_id": "c1\n", "content": "done"}]}
    problem = refused(lambda: post(engine, f"/api/v1/runs/{s['run_id']}/resume", body), 400, "invalid_request")
    errors_name(problem, "results", "0", "call_id")
    early = {"call_id": "c9" + FORGED, "content": 1}
    url = f"/api/v1/runs/{s['run_id']}/early-results"
    errors_name(refused(lambda: post(engine, url, early), 400, "invalid_request"), "call_id")


@pytest.mark.parametrize("part", ["pack", "flow", "user", "thread"])
def test_a_flow_wait_refuses_an_envelope_part_with_a_line_break(engine, part):
    body = park_body("approval", **{part: "x" + FORGED})
    problem = refused(lambda: post(engine, "/api/v1/flow-waits", body), 400, "invalid_request")
    errors_name(problem, "envelope", part)


def test_printable_unicode_names_are_still_accepted(engine):
    run = register(engine, agent_id="agent Ünïcode ☃ 名前")
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(run, pending=[call(name="ü-tool")]))
    assert response.status_code == 201, response.content


# -- rows stored before the rule: rendered escaped ----------------------------------------


def stored_before_the_rule():
    """An approval whose agent id, tool name and arguments hold raw line breaks, written past the API."""
    approval = approval_pause()
    pending = [{"id": "c1", "name": "send_refund" + FORGED, "arguments": '{"amount": 900,' + FORGED + '"x": 1}'}]
    Approval.objects.filter(pk=approval.pk).update(agent_id="refund-agent" + FORGED, pending=json.dumps(pending))
    return Approval.objects.get(pk=approval.pk)


def forged_lines(text):
    return [line for line in text.splitlines() if "evil.example" in line and line.lstrip().startswith("Approve")]


def test_a_stored_line_break_never_starts_a_line_of_the_plain_text_email():
    approval = stored_before_the_rule()
    links = {"approve": "https://console.example/console/act/A", "deny": "https://console.example/console/act/D"}

    subject, text, html = notify.render(approval, links=links)

    assert forged_lines(text) == []
    assert [line for line in text.splitlines() if line.startswith("Approve:")] == [f"Approve: {links['approve']}"]
    assert "Agent: refund-agent\\nApprove: https://evil.example/steal\\n" in text
    assert "send_refund\\nApprove: https://evil.example/steal\\n(" in text
    assert "\n" not in subject and "\r" not in subject
    assert '<a href="https://evil.example' not in html


def test_a_stored_line_break_stays_inside_its_slack_line():
    approval = stored_before_the_rule()

    message = blocks.request_message(approval, run_revision=2)

    texts = [message["text"]] + [b["text"]["text"] for b in message["blocks"] if b.get("type") == "section"]
    for text in texts:
        assert forged_lines(text) == [], text
        assert not re.search(r"\n\s*Approve:", text), text


@pytest.mark.django_db(transaction=True)
def test_the_email_a_worker_sends_for_a_stored_line_break_holds_one_approve_line(mailoutbox):
    from tests.helpers import member, notify_all

    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    stored_before_the_rule()
    notify_all()

    body = mail.outbox[0].body
    assert forged_lines(body) == []
    assert len([line for line in body.splitlines() if line.startswith("Approve:")]) == 1
