"""One checkpoint chain per workspace (issue 50, item 7; docs/auditors.md, docs/decisions.md).

What a tenant receives (`audit.checkpoint`) and exports moves with its own
runs only; each workspace's chain verifies, online and offline; the
checkpoints written before (the legacy chain, workspace "", signed with the
first text) still verify beside them; tampering is still found.
"""

import base64
import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction

from suspensions import audit, selectors
from suspensions.models import AuditCheckpoint, AuditRunHead, Event, WebhookFormat, WebhookMessage
from suspensions.services import audit as sealing
from suspensions.services import outbox
from tests.audit.test_export import export, offline
from tests.helpers import client, pause, post
from tests.push.conftest import make_endpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_auditor(token):
    return client(token("acme", ["auditor"], "ann"))


@pytest.fixture
def globex(token):
    return client(token("globex", ["engine"], "globex-engine"))


@pytest.fixture
def no_worker(monkeypatch):
    """The fan-out is run by the test (outbox.fan_out), not woken in a worker."""
    monkeypatch.setattr(outbox.current_app, "send_task", lambda *args, **kwargs: None)


def received(endpoint):
    """The `audit.checkpoint` bodies the fan-out addressed to the endpoint, oldest first."""
    sent = WebhookMessage.objects.filter(endpoint=endpoint, type="audit.checkpoint").order_by("id")
    return [json.loads(m.body)["data"] for m in sent]


def tick():
    """A beat tick of the checkpoint task, then the fan-out of what it announced."""
    written = sealing.write_checkpoint()
    outbox.fan_out()
    return written


def legacy(seq, previous, runs, at):
    """A checkpoint as written before the chains per workspace: workspace "", the first signed text, by hand."""
    root = audit.checkpoint_root(previous, runs)
    text = f"suspensions-audit-checkpoint\n{seq}\n{audit.rfc3339(at)}\n{previous}\n{root}".encode()
    signature = base64.b64encode(sealing.signing_key().sign(text)).decode()
    return AuditCheckpoint.objects.create(seq=seq, at=at, previous=previous, root=root, runs=runs, signature=signature)


def head(run_id):
    events = list(Event.objects.filter(run_id=run_id).order_by("id").values_list("hash", flat=True))
    return [run_id, events[-1], len(events)]


def test_activity_in_globex_alone_changes_nothing_an_acme_endpoint_or_auditor_receives(
    engine, globex, acme_auditor, no_worker
):
    acme_hook = make_endpoint("acme", event_types=["audit.checkpoint"])
    globex_hook = make_endpoint("globex", event_types=["audit.checkpoint"])
    mine = pause(engine)
    tick()
    before = export(acme_auditor)
    assert [d["seq"] for d in received(acme_hook)] == [1]

    theirs = pause(globex, scope="globex")
    tick()
    assert post(globex, f"/api/v1/runs/{theirs['run_id']}/cancel", {"revision": 2}).status_code == 200
    tick()

    assert [d["seq"] for d in received(acme_hook)] == [1]
    assert [(d["workspace"], d["seq"]) for d in received(globex_hook)] == [("globex", 1), ("globex", 2)]
    assert export(acme_auditor) == before
    assert export(acme_auditor, "?scope=acme") == before

    assert post(engine, f"/api/v1/runs/{mine['run_id']}/cancel", {"revision": 2}).status_code == 200
    tick()
    acme_seqs = [(d["seq"], d["previous"]) for d in received(acme_hook)]
    assert acme_seqs == [(1, "0" * 64), (2, received(acme_hook)[0]["root"])]  # 2, not 3: globex's ticks count not


def test_a_tick_writes_one_checkpoint_per_changed_workspace_each_in_its_own_chain(engine, globex):
    a, g = pause(engine), pause(globex, scope="globex")
    first = sealing.write_checkpoint()
    assert [(c.workspace, c.seq, c.previous) for c in first] == [("acme", 1, "0" * 64), ("globex", 1, "0" * 64)]
    assert [c.runs for c in first] == [[head(a["run_id"])], [head(g["run_id"])]]
    assert sealing.write_checkpoint() == []  # nothing changed
    assert post(engine, f"/api/v1/runs/{a['run_id']}/cancel", {"revision": 2}).status_code == 200
    (second,) = sealing.write_checkpoint()
    assert (second.workspace, second.seq, second.previous, second.runs) == (
        "acme",
        2,
        first[0].root,
        [head(a["run_id"])],
    )
    text = f"suspensions-audit-checkpoint/2\nacme\n2\n{audit.rfc3339(second.at)}\n{first[0].root}\n{second.root}"
    sealing.signing_key().public_key().verify(base64.b64decode(second.signature), text.encode())
    report = sealing.verify_all()
    assert (report.checkpoints, report.problems) == (3, [])


def test_each_checkpoint_is_announced_to_its_own_workspace_only(engine, globex, no_worker):
    acme_hook, globex_hook = make_endpoint("acme"), make_endpoint("globex")
    team_hook = make_endpoint("acme/support")
    pause(globex, scope="globex")
    outbox.fan_out()
    (checkpoint,) = tick()
    assert received(acme_hook) == received(team_hook) == []
    assert received(globex_hook) == [sealing.checkpoint_data(checkpoint)]
    assert received(globex_hook)[0]["workspace"] == "globex"


def test_a_slack_endpoint_reads_which_workspaces_checkpoint_it_is(engine, no_worker):
    slack = make_endpoint("acme", format=WebhookFormat.SLACK, event_types=["audit.checkpoint"])
    pause(engine)
    (checkpoint,) = tick()
    (message,) = WebhookMessage.objects.filter(endpoint=slack)
    assert json.loads(message.body) == {"text": f"Audit checkpoint 1 of acme: root {checkpoint.root}, signed."}


def test_legacy_checkpoints_still_verify_beside_the_workspace_chains(engine, globex, acme_auditor, tmp_path):
    a, g = pause(engine), pause(globex, scope="globex")
    at = Event.objects.order_by("-at").values_list("at", flat=True)[0]
    one = legacy(1, audit.GENESIS, [head(a["run_id"]), head(g["run_id"])], at)
    assert post(engine, f"/api/v1/runs/{a['run_id']}/cancel", {"revision": 2}).status_code == 200
    two = legacy(2, one.root, [head(a["run_id"])], at)
    AuditRunHead.objects.bulk_create(
        [
            AuditRunHead(run_id=r, head=h, count=n, seq=s)
            for s, (r, h, n) in [(2, head(a["run_id"])), (1, head(g["run_id"]))]
        ]
    )
    newer = pause(engine)
    written = sealing.write_checkpoint()
    assert [(c.workspace, c.seq, c.runs) for c in written] == [("acme", 1, [head(newer["run_id"])])]

    report = sealing.verify_all()
    assert (report.checkpoints, report.problems) == (3, [])
    assert sealing.verify_run(a["run_id"]).ok
    lines = export(acme_auditor)
    checkpoints = [(c["workspace"], c["seq"], c["complete"]) for c in lines if c["type"] == "checkpoint"]
    assert checkpoints == [("", 1, False), ("", 2, True), ("acme", 1, True)]
    assert g["run_id"] not in json.dumps(lines)
    code, out = offline(tmp_path, lines)
    assert code == 0, out
    assert "3 checkpoints" in out

    with connection.cursor() as cursor:
        cursor.execute("UPDATE suspensions_auditcheckpoint SET runs = runs - 0 WHERE id = %s", [two.id])
    assert "checkpoint 2: its root does not match its lines (altered)" in sealing.verify_all().problems


def test_a_whole_workspace_export_is_complete_and_verifies_offline_and_tampering_is_found(
    engine, globex, acme_auditor, token, tmp_path
):
    pause(engine)
    support = pause(client(token("acme/support", ["engine"], "support-engine")), scope="acme/support")
    pause(globex, scope="globex")
    sealing.write_checkpoint()
    pause(engine)
    sealing.write_checkpoint()
    lines = export(acme_auditor, "?scope=acme")
    checkpoints = [line for line in lines if line["type"] == "checkpoint"]
    assert [(c["workspace"], c["seq"], c["complete"], len(c["runs"])) for c in checkpoints] == [
        ("acme", 1, True, 2),
        ("acme", 2, True, 1),
    ]
    code, out = offline(tmp_path, lines)
    assert code == 0, out
    assert "checked 6 events in 3 runs, 2 checkpoints and 3 checkpoint lines" in out

    team = [c for c in export(acme_auditor, "?scope=acme/support") if c["type"] == "checkpoint"]
    assert [(c["seq"], c["complete"], c["runs"]) for c in team] == [
        (1, False, [head(support["run_id"])]),
        (2, False, []),
    ]

    recounted = [dict(line) for line in lines]
    recounted[-2] = {**recounted[-2], "runs": [[r, h, n + 1] for r, h, n in recounted[-2]["runs"]]}
    code, out = offline(tmp_path, recounted)
    assert code == 1
    assert "checkpoint 1 of acme: its root does not match its lines" in out
    moved = [dict(line) for line in lines]
    moved[-1] = {**moved[-1], "workspace": "globex"}
    code, out = offline(tmp_path, moved)
    assert code == 1
    assert "checkpoint 2 of globex: its signature does not verify" in out


def test_a_workspaces_seq_is_unique_so_two_overlapping_ticks_cannot_both_write_one(engine):
    pause(engine)
    (checkpoint,) = sealing.write_checkpoint()
    twin = AuditCheckpoint(workspace="acme", seq=1, at=checkpoint.at, previous="0" * 64, root="", runs=[])
    with pytest.raises(IntegrityError), transaction.atomic():
        twin.save(force_insert=True)
    AuditCheckpoint.objects.create(workspace="globex", seq=1, at=checkpoint.at, previous="0" * 64, root="", runs=[])


def test_since_keeps_each_chains_last_checkpoint_before_it_then_the_later_ones(engine, globex):
    pause(engine)
    pause(globex, scope="globex")
    sealing.write_checkpoint()
    start = AuditCheckpoint.objects.get(workspace="acme", seq=1).at
    for seq in (2, 3):  # acme's later checkpoints, an hour apart (signatures are not what is read here)
        AuditCheckpoint.objects.create(workspace="acme", seq=seq, at=start + timedelta(hours=seq), previous="", root="")
    since = start + timedelta(hours=2, minutes=30)
    chosen = selectors.audit_checkpoints(["", "acme", "globex"], since)
    assert [(c.workspace, c.seq) for c in chosen] == [("acme", 2), ("acme", 3), ("globex", 1)]
    everything = selectors.audit_checkpoints(["acme"], None)
    assert [(c.workspace, c.seq) for c in everything] == [("acme", 1), ("acme", 2), ("acme", 3)]
