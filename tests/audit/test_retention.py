"""Retention and legal holds (docs/auditors.md, "Retention and legal holds"; "Verifying a pruned trail"): pruning whole
months after a signed checkpoint seals what goes; what is held is never pruned; the kept trail verifies online and
offline."""

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from suspensions.models import AuditCheckpoint, AuditPrune, Event, LegalHold, PrunedRun
from suspensions.services import audit as sealing
from suspensions.services import retention
from suspensions.services.sql.rows import Writes
from tests.audit.test_export import export, offline
from tests.factories import RunFactory
from tests.helpers import client, problem

pytestmark = pytest.mark.django_db
OLD = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)
MONTH = "suspensions_event_y2025m01"


def chained(run, at, n=2):
    """`n` events of `run` at `at`, through the one chain writer."""
    rows = [Event(run_id=run.id, kind="note", actor="t", revision=i, data={"i": i}, at=at) for i in range(n)]
    for row in rows:
        row.stamp_scope(run.scope)
    writes = Writes()
    writes.insert_events(rows)
    writes.send()
    return rows


def old_month():
    with connection.cursor() as cursor:
        cursor.execute("SELECT suspensions_event_partition('2025-01-01')")


def rows_of(run):
    return list(Event.objects.filter(run_id=run.id).order_by("id").values_list("id", "hash"))


def partition_names():
    return [name for name, _ in retention.partitions()]


@pytest.fixture
def trail():
    """Four runs with two events in January 2025 (in its own partition): `held` under a hold on the run, `scoped`
    in a held scope, `both` with events now too, `gone` with none since; then a checkpoint over all of them."""
    runs = {
        "held": RunFactory(scope="acme"),
        "scoped": RunFactory(scope="acme/legal"),
        "both": RunFactory(scope="acme"),
        "gone": RunFactory(scope="acme"),
    }
    for run in runs.values():
        chained(run, OLD)
    old_month()
    chained(runs["both"], datetime.now(UTC), n=1)
    sealing.write_checkpoint()
    return runs


def hold(principal_client, **body):
    return principal_client.post("/api/v1/legal-holds", body, format="json")


@pytest.fixture
def auditor(token):
    return client(token("acme", ["auditor"], "ann"))


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_pruning_a_month_keeps_the_held_runs_and_the_kept_trail_verifies_online_and_offline(trail, auditor, tmp_path):
    assert hold(auditor, run=str(trail["held"].id), reason="case 12").status_code == 201
    assert hold(auditor, scope="acme/legal", reason="case 13").status_code == 201
    held_before = rows_of(trail["held"]) + rows_of(trail["scoped"])

    record = retention.prune()

    assert MONTH not in partition_names()
    assert rows_of(trail["held"]) + rows_of(trail["scoped"]) == held_before
    assert len(rows_of(trail["both"])) == 1 and rows_of(trail["gone"]) == []
    assert (record.events, record.runs, record.held_runs, record.partitions) == (4, 2, 2, [MONTH])
    assert AuditPrune.objects.count() == 1
    seal = AuditCheckpoint.objects.get(workspace="acme", seq=record.checkpoints[0][1])
    pruned = PrunedRun.objects.get(run_id=trail["both"].id)
    assert [str(trail["both"].id), pruned.head, 2] in seal.runs and pruned.count == 2
    report = sealing.verify_all()
    assert report.problems == [] and report.pruned == 1
    assert (
        sealing.verify_run(trail["both"].id).pruned == f"pruned before event 3, sealed by checkpoint {seal.seq} of acme"
    )
    chained(trail["both"], datetime.now(UTC), n=1)  # the chain goes on after the prune, and is sealed at 4 events
    sealing.write_checkpoint()
    assert [str(trail["both"].id), rows_of(trail["both"])[-1][1], 4] in AuditCheckpoint.objects.last().runs
    assert sealing.verify_all().problems == []
    code, out = offline(tmp_path, export(auditor))
    assert code == 0, out
    assert "1 runs verified from a sealed pruned prefix" in out


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_a_pruned_prefix_without_its_seal_is_named_online_and_offline(trail, auditor, tmp_path):
    retention.prune()
    lines = export(auditor)
    PrunedRun.objects.all().delete()
    report = sealing.verify_all()
    assert report.problems and "an event before it was deleted" in report.problems[0]
    forged = [dict(line, head="f" * 64) if line["type"] == "pruned" else line for line in lines]
    code, out = offline(tmp_path, forged)
    assert code == 1
    assert "does not seal that" in out


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_nothing_under_hold_is_pruned_until_the_hold_is_released(trail, auditor):
    everything = Event.objects.count()
    made = [hold(auditor, scope="acme", reason="all of acme").json()]
    retention.prune()
    assert Event.objects.count() == everything
    assert MONTH not in partition_names()  # the month went; its held rows wait in the DEFAULT partition
    assert auditor.post(f"/api/v1/legal-holds/{made[0]['id']}/release").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM suspensions_event_default")
        assert cursor.fetchone()[0] == 8
    assert retention.prunable(datetime.now(UTC)) == []  # no month left to drop: the DEFAULT rows go with the next
    chained(RunFactory(scope="acme"), datetime(2025, 2, 3, tzinfo=UTC), n=1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT suspensions_event_partition('2025-02-01')")
    retention.prune()
    assert Event.objects.count() == 1  # only `both`'s event of now is left
    assert sealing.verify_all().problems == []


def test_pruning_is_off_by_default(trail):
    assert retention.prune() is None
    assert MONTH in partition_names()


def test_the_beat_creates_the_months_ahead():
    made = retention.ensure_partitions(ahead=3)
    assert len(made) == 2  # the migration made this month and the next
    assert retention.ensure_partitions(ahead=3) == []


BAD = [
    ({"reason": "x"}, 400, "invalid_request"),
    ({"scope": "acme", "run": "00000000-0000-0000-0000-000000000001", "reason": "x"}, 400, "invalid_request"),
    ({"scope": "acme//x", "reason": "x"}, 400, "invalid_request"),
    ({"scope": "acme", "reason": ""}, 400, "invalid_request"),
    ({"scope": "acme", "reason": "x" * 501}, 400, "invalid_request"),
    ({"scope": "acme", "reason": "x", "extra": 1}, 400, "invalid_request"),
    ({"scope": "globex", "reason": "x"}, 403, "forbidden"),
    ({"run": "00000000-0000-0000-0000-000000000001", "reason": "x"}, 404, "not_found"),
    ({"run": "not-a-uuid", "reason": "x"}, 400, "invalid_request"),
]


@pytest.mark.parametrize(("body", "status", "code"), BAD)
def test_a_bad_hold_is_a_problem_and_writes_nothing(auditor, body, status, code):
    problem(auditor.post("/api/v1/legal-holds", json.dumps(body), content_type="application/json"), status, code)
    assert LegalHold.objects.count() == 0


def test_a_run_of_another_tenant_cannot_be_held(auditor):
    other = RunFactory(scope="globex")
    problem(hold(auditor, run=str(other.id), reason="x"), 404, "not_found")
    assert LegalHold.objects.count() == 0


def test_operators_and_auditors_hold_and_release_and_others_may_not(auditor, token, engine):
    operator = client(token("acme", ["operator"], "olga"))
    made = hold(operator, scope="acme/legal", reason="litigation").json()
    assert made["scope"] == "acme/legal" and made["run"] is None and made["created_by"]
    assert [h["id"] for h in auditor.get("/api/v1/legal-holds").json()["results"]] == [made["id"]]
    problem(hold(engine, scope="acme", reason="x"), 403, "forbidden")
    problem(engine.get("/api/v1/legal-holds"), 403, "forbidden")
    released = auditor.post(f"/api/v1/legal-holds/{made['id']}/release").json()
    assert released["released_at"] and released["released_by"]
    problem(auditor.post(f"/api/v1/legal-holds/{made['id']}/release"), 409, "invalid_state")
    assert LegalHold.objects.get().released_by == released["released_by"]


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_the_commands_prune_then_verify_the_kept_trail(trail):
    out = StringIO()
    call_command("prune_audit", stdout=out)
    assert "pruned 8 events of 4 runs" in out.getvalue() and "sealed by checkpoint 2 of acme" in out.getvalue()
    out = StringIO()
    call_command("verify_audit", stdout=out)
    assert "1 runs verified from a pruned prefix" in out.getvalue()
    assert out.getvalue().strip().endswith("audit trail intact")


def test_the_prune_command_says_when_retention_is_off(trail):
    with pytest.raises(CommandError, match="AUDIT_RETENTION_DAYS is not set"):
        call_command("prune_audit", stdout=StringIO())
    assert Event.objects.count() == 9


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_a_run_whose_pruned_events_no_longer_verify_keeps_them_and_the_record_names_it(trail):
    target = rows_of(trail["gone"])[0][0]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE suspensions_event SET actor = 'mallory' WHERE id = %s", [target])
    record = retention.prune()
    assert len(rows_of(trail["gone"])) == 2
    assert record.held_runs == 1 and record.runs == 3
    assert record.problems == [f"run {trail['gone'].id}: event {target}: altered (its content does not match its hash)"]
    assert not PrunedRun.objects.filter(run_id=trail["gone"].id).exists()


@override_settings(AUDIT_RETENTION_DAYS=30)
def test_a_run_whose_old_events_are_not_the_first_of_its_chain_keeps_them(trail):
    """Its first event is from February (kept: no month of it is dropped), its next two from January: dropping
    January would cut its chain in the middle, so the run keeps them."""
    cut = RunFactory(scope="acme")
    chained(cut, datetime(2025, 2, 3, tzinfo=UTC), n=1)
    chained(cut, OLD, n=2)
    record = retention.prune()
    assert len(rows_of(cut)) == 3
    assert record.held_runs == 1 and record.runs == 4
    assert sealing.verify_all().problems == []
