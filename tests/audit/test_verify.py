"""`manage.py verify_audit` against tampering done with SQL on the real database (docs/auditors.md, "Verify online")."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from suspensions import audit
from suspensions.models import Event
from suspensions.services import audit as sealing
from tests.helpers import pause, post, resume

pytestmark = pytest.mark.django_db


def sql(statement, params=()):
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def ids(run_id):
    return list(Event.objects.filter(run_id=run_id).order_by("id").values_list("id", flat=True))


def verify(*args):
    """(exit 0?, stdout, stderr) of `verify_audit`."""
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_audit", *args, stdout=out, stderr=err)
    except CommandError as failed:
        return False, out.getvalue(), err.getvalue() + str(failed)
    return True, out.getvalue(), err.getvalue()


@pytest.fixture
def sealed(engine):
    """Two runs with four events each, sealed by acme's checkpoint 1; another run sealed by its checkpoint 2."""
    runs = []
    for _ in range(2):
        s = pause(engine)
        sql("SELECT nextval(pg_get_serial_sequence('suspensions_event', 'id')) FROM generate_series(1, 5)")  # gaps
        assert resume(engine, s).status_code == 201
        runs.append(s["run_id"])
    sealing.write_checkpoint()
    runs.append(pause(engine)["run_id"])
    sealing.write_checkpoint()
    return runs


def test_an_intact_trail_says_what_it_checked_and_exits_zero(sealed):
    ok, out, _ = verify()
    assert ok
    assert "checked 10 events in 3 runs and 2 checkpoints" in out
    assert out.strip().endswith("audit trail intact")


def test_an_updated_event_is_named_as_altered(sealed):
    target = ids(sealed[0])[1]
    sql('UPDATE suspensions_event SET data = data || \'{"reason": "approval"}\' WHERE id = %s', [target])
    ok, _, err = verify()
    assert not ok
    assert f"event {target}: altered" in err


def test_a_forged_event_inserted_with_a_valid_link_is_named_as_inserted(sealed):
    run = sealed[0]
    before = Event.objects.filter(run_id=run).order_by("id")[1]
    forged = {"id": before.id + 1, "run_id": run, "scope": "acme", "kind": "denied", "actor": "mallory"}
    forged.update(revision=before.revision, data={}, at=before.at)
    digest = audit.event_hash(before.hash, forged)
    sql(
        "INSERT INTO suspensions_event (id, run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, "
        "at, prev_hash, hash) VALUES (%s, %s, 'acme', 'acme', '', '', 'denied', 'mallory', %s, '{}', %s, %s, %s)",
        [forged["id"], run, forged["revision"], before.at, before.hash, digest],
    )
    ok, _, err = verify("--run", run)
    assert not ok
    assert f"event {forged['id']}: inserted" in err


def test_a_deleted_event_is_named_by_the_event_after_it(sealed):
    first, second, third, _ = ids(sealed[1])
    sql("DELETE FROM suspensions_event WHERE id = %s", [second])
    ok, _, err = verify()
    assert not ok
    assert f"event {third}: an event before it was deleted" in err


def test_two_swapped_ids_are_named_as_reordered(sealed):
    first, second, *_ = ids(sealed[0])
    sql("UPDATE suspensions_event SET id = -1 WHERE id = %s", [first])
    sql("UPDATE suspensions_event SET id = %s WHERE id = %s", [first, second])
    sql("UPDATE suspensions_event SET id = %s WHERE id = -1", [second])
    ok, _, err = verify()
    assert not ok
    assert f"event {first}: reordered" in err


def test_an_edited_checkpoint_no_longer_matches(sealed):
    sql("UPDATE suspensions_auditcheckpoint SET runs = runs - 0 WHERE seq = 1")
    ok, _, err = verify()
    assert not ok
    assert "checkpoint 1 of acme: its root does not match its lines (altered)" in err


def test_a_re_rooted_checkpoint_fails_its_signature_and_breaks_the_next_link(sealed):
    fake = audit.checkpoint_root(audit.GENESIS, [])
    sql("UPDATE suspensions_auditcheckpoint SET runs = '[]', root = %s WHERE seq = 1", [fake])
    ok, _, err = verify()
    assert not ok
    assert "checkpoint 1 of acme: its signature does not verify (altered)" in err
    assert "checkpoint 2 of acme: its previous root does not match checkpoint 1's root" in err


def test_a_deleted_checkpoint_is_a_gap_in_seq(sealed, engine):
    assert post(engine, f"/api/v1/runs/{sealed[2]}/cancel", {"revision": 2}).status_code == 200
    sealing.write_checkpoint()
    sql("DELETE FROM suspensions_auditcheckpoint WHERE seq = 2")
    ok, _, err = verify()
    assert not ok
    assert "checkpoint 2 of acme: missing (a gap in seq)" in err


def test_a_runs_events_deleted_after_its_checkpoint_are_missed_by_name(sealed):
    sql("DELETE FROM suspensions_event WHERE run_id = %s", [sealed[1]])
    ok, _, err = verify()
    assert not ok
    assert f"run {sealed[1]}: sealed by checkpoint 1 of acme, but it has no events (deleted)" in err


def test_the_last_events_of_a_sealed_run_deleted_are_found_by_its_count(sealed):
    last = ids(sealed[0])[-1]
    sql("DELETE FROM suspensions_event WHERE id = %s", [last])
    ok, _, err = verify()
    assert not ok
    assert f"run {sealed[0]}: checkpoint 1 of acme sealed 4 events, 3 remain (events deleted)" in err


def test_scope_and_run_narrow_what_is_checked(sealed, token):
    ok, out, _ = verify("--run", sealed[2])
    assert ok
    assert "checked 2 events in 1 runs" in out
    ok, out, _ = verify("--scope", "other")
    assert ok
    assert "checked 0 events in 0 runs" in out


def test_a_bad_scope_or_run_is_a_clear_error():
    assert "is not a scope path" in verify("--scope", "Bad Scope")[2]
    assert "is not a run id" in verify("--run", "nope")[2]
