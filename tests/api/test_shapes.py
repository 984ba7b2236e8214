"""Each wire shape is rendered once (suspensions/presenters.py) and documented once (api/shapes.py).

The two must name the same fields: every key the presenter writes is
documented, and every field the schema calls required is written.
"""

from typing import Any

import pytest

from suspensions import presenters
from suspensions.api import shapes
from suspensions.models import Admission, Approval, ClosureReceipt, ExpiryReceipt, Start, Suspension
from tests.helpers import pause, post, register, resume, version


def keys_match(body: dict[str, Any], serializer: Any) -> None:
    fields = serializer().fields
    required = {name for name, field in fields.items() if field.required}
    assert set(body) <= set(fields), set(body) - set(fields)
    assert required <= set(body), required - set(body)


def test_a_one_shot_resume_answers_the_documented_claim_shape(engine):
    body = resume(engine, pause(engine)).json()
    keys_match(body, shapes.ClaimedOut)
    keys_match(body["admission"], shapes.AdmissionReceiptOut)
    keys_match(body["start"], shapes.StartReceiptOut)
    keys_match(body["suspension"], shapes.SuspensionOut)
    keys_match(presenters.admission_row(Admission.objects.get()), shapes.AdmissionReceiptOut)
    keys_match(presenters.start_receipt(Start.objects.get()), shapes.StartReceiptOut)


def test_a_pause_and_its_list_row_answer_the_documented_shapes(engine):
    pause(engine)
    susp = Suspension.objects.select_related("run").get()
    keys_match(presenters.suspension_detail(susp), shapes.SuspensionOut)
    keys_match(presenters.suspension_summary(susp), shapes.SuspensionSummaryOut)


def test_an_approval_and_a_denial_answer_the_documented_shapes(engine, token):
    from tests.helpers import client

    approver = client(token("acme", ["approver"], "approver"))
    susp = pause(engine, reason="approval")
    keys_match(approver.get(f"/api/v1/approvals/{susp['id']}").json(), shapes.ApprovalOut)
    denied = post(
        approver,
        f"/api/v1/approvals/{susp['id']}/decide",
        {"version": version(susp), "decision": "deny", "reason": "no"},
    )
    keys_match(denied.json(), shapes.DeniedOut)
    assert Approval.objects.get().status == "denied"


@pytest.mark.parametrize(
    "presenter, serializer",
    [("expiry_receipt", shapes.ExpiryReceiptOut), ("closure_receipt", shapes.ClosureReceiptOut)],
)
def test_the_receipts_answer_the_documented_shapes(presenter, serializer):
    import json
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    common = {"run_id": "00000000-0000-7000-8000-000000000001", "suspension_id": "00000000-0000-7000-8000-000000000002"}
    if presenter == "expiry_receipt":
        row: Any = ExpiryReceipt(**common, scope="acme", request_digest="", run_revision=3, expired_at=now, digest="d")
        body = presenters.expiry_receipt(row)
    else:
        row = ClosureReceipt(
            **common,
            scope="acme",
            request=json.dumps({"a": 1}),
            request_digest="r",
            run_revision=4,
            actor="token:op",
            digest="d",
            closed_at=now,
        )
        body = presenters.closure_receipt(row, fresh=True)
    keys_match(body, serializer)


def fields_of(run: Any) -> dict[str, Any]:
    """RunOut's fields, each rendered by DRF as it rendered runs before presenters.run_body, as JSON reads them."""
    import json

    from rest_framework import serializers
    from rest_framework.renderers import JSONRenderer

    return json.loads(JSONRenderer().render(serializers.Serializer.to_representation(shapes.RunOut(), run)))


def test_a_run_renders_as_its_documented_fields_did_in_every_state(engine):
    from datetime import UTC, datetime

    from django.db.models import F

    from suspensions.models import Run

    registered = register(engine)
    assert registered == fields_of(Run.objects.get(pk=registered["id"]))
    paused = pause(engine)
    failed = register(engine, agent_id="agent-2")
    answer = post(engine, f"/api/v1/runs/{failed['id']}/fail", {"revision": 1, "error": "the tool timed out"})
    assert answer.status_code == 200
    assert answer.json()["error"] == "the tool timed out"
    # A time with no microseconds is written without them, as DRF's DateTimeField writes it.
    Run.objects.filter(pk=failed["id"]).update(created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    rows = Run.objects.annotate(live_suspension_id=F("suspension__id"))
    assert rows.count() == 3
    for run in rows:
        assert presenters.run_body(run) == fields_of(run)
        assert engine.get(f"/api/v1/runs/{run.id}").json() == fields_of(run)
    by_id = {str(run.id): run for run in rows}
    assert presenters.run_body(by_id[failed["id"]])["created_at"] == "2026-01-02T03:04:05Z"
    assert presenters.run_body(by_id[paused["run_id"]])["suspension_id"] == paused["id"]
    keys_match(registered, shapes.RunOut)
