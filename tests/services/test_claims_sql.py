"""The claim path's precompiled SQL (services/claims_sql.py) leaves the rows its ORM twins leave.

The same transitions run twice, once through the ORM (`ORM_ONLY`, the twin
the SQL replaces) and once through the fixed SQL: every row of every table they
write is compared, with ids, times and digests (which differ from run to
run) replaced by the order they first appear in, and no transition may
cost more statements through the SQL (which sends its writes together).
"""

import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from suspensions import services
from suspensions.exceptions import NotFound
from suspensions.models import Admission, Approval, ApprovalVote, Event, OutboxEvent, Run, Start, Suspension
from suspensions.principals import Principal
from suspensions.services import claims_sql, sql_values
from tests.factories import principal
from tests.helpers import call, continuation

pytestmark = pytest.mark.django_db

TABLES = [Run, Suspension, Approval, ApprovalVote, Admission, Start, Event, OutboxEvent]
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}}
HEX64 = re.compile(r"^[0-9a-f]{64}$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def transitions(scope: str) -> list[int]:
    """Every claim-path transition once or more, in `scope`; returns the statements each cost."""
    engine = principal("token:engine", scope, "engine", "bus", "approver")
    other = principal("token:other", scope, "approver")
    third = principal("token:third", scope, "approver")
    costs: list[int] = []

    def counted(fn: Any) -> Any:
        with CaptureQueriesContext(connection) as queries:
            result = fn()
        costs.append(len(queries.captured_queries))
        return result

    def paused(reason: str, **kwargs: Any) -> Any:
        run = counted(lambda: services.register_run(principal=engine, agent_id="a", scope=scope, session_id="s"))
        pending = kwargs.pop("pending", [call()])
        return counted(
            lambda: services.suspend_run(
                principal=engine,
                run_id=run.id,
                revision=1,
                reason=reason,
                pending=pending,
                continuation=continuation(),
                **kwargs,
            )
        )

    def version(s: Suspension, revision: int = 2) -> services.Version:
        return services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=revision)

    s = paused("external_tool", ttl_seconds=600)
    results = [{"call_id": "c1", "content": {"ok": True}}]
    counted(lambda: services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=results))
    counted(lambda: services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=results))
    again = counted(
        lambda: services.suspend_run(
            principal=engine, run_id=s.run_id, revision=3, reason="external_tool", pending=[call()], continuation={}
        )
    )
    counted(lambda: services.cancel_run(principal=engine, run_id=again.run_id, revision=4))

    s = paused("approval", pending=[call(arguments_schema=SCHEMA, editable=True)], approval={"quorum": 2})
    edits = [{"id": "c1", "arguments": '{"amount": 5}'}]
    counted(lambda: services.approve(principal=third, suspension_id=s.id, version=version(s), edits=edits))
    counted(lambda: services.approve(principal=other, suspension_id=s.id, version=version(s), note="ok", edits=edits))
    work = Admission.objects.get(suspension_id=s.id)
    counted(lambda: services.start_admission(principal=engine, admission_id=work.id))
    counted(lambda: services.complete_run(principal=engine, run_id=s.run_id, revision=3))

    s = paused("agent_reply", pending=[call(reply_with="q1")])
    counted(
        lambda: services.admit_reply(
            principal=engine, run_id=s.run_id, version=version(s), input='"42"', reply_with="q1"
        )
    )
    reply = Admission.objects.get(suspension_id=s.id)
    counted(lambda: services.start_admission(principal=engine, admission_id=reply.id))
    counted(lambda: services.fail_run(principal=engine, run_id=s.run_id, revision=3, error="boom"))

    s = paused("approval")
    counted(lambda: services.deny_approval(principal=other, suspension_id=s.id, version=version(s), reason="no"))
    s = paused("approval")
    counted(lambda: services.respond(principal=other, suspension_id=s.id, version=version(s), response="use EUR"))
    return costs


def rows(scope: str) -> dict[str, list[dict[str, Any]]]:
    """Every row the transitions left in `scope`, ids, times and digests replaced by their first-seen order."""
    seen: dict[Any, str] = {}

    def token(value: Any, kind: str) -> str:
        return seen.setdefault(value, f"{kind}{len([k for k in seen.values() if k.startswith(kind)])}")

    def plain(value: Any) -> Any:
        if isinstance(value, UUID):
            return token(str(value), "id")
        if isinstance(value, datetime):
            return token(value, "t")
        if value == scope:  # the two runs' scopes differ by design
            return "scope"
        if isinstance(value, str) and HEX64.match(value):
            return token(value, "digest")
        if isinstance(value, str) and RFC3339.match(value):
            return token(datetime.fromisoformat(value), "t")
        if isinstance(value, str):
            return UUID_TEXT.sub(lambda m: token(m.group(0), "id"), value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    out = {}
    for model in TABLES:
        fields = [f.attname for f in model._meta.concrete_fields if f.attname != "scope"]
        found = model.objects.filter(scope=scope).order_by("pk").values(*fields)
        out[model.__name__] = [
            # A serial key (events, outbox rows) counts on across both runs: its order is what must agree.
            {k: (n if k == "id" and isinstance(v, int) else plain(v)) for k, v in row.items() if k[:7] != "scope_l"}
            for n, row in enumerate(found)
        ]
    return out


def test_the_sql_and_the_orm_leave_the_same_rows_in_no_more_statements(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(claims_sql, "ORM_ONLY", True)
        assert not claims_sql.enabled()
        orm_costs = transitions("orm")
    assert claims_sql.enabled()
    sql_costs = transitions("sql")
    # The SQL path sends a transition's writes together (claims_sql.Batch): never more statements.
    assert len(sql_costs) == len(orm_costs)
    assert all(s <= o for s, o in zip(sql_costs, orm_costs, strict=True)), (sql_costs, orm_costs)
    assert sum(sql_costs) < sum(orm_costs)
    orm, sql = rows("orm"), rows("sql")
    assert {name: len(r) for name, r in sql.items()} == {name: len(r) for name, r in orm.items()}
    assert all(orm.values())  # every table was written
    for name in orm:
        assert sql[name] == orm[name], name


@pytest.mark.parametrize("orm_only", [True, False])
def test_the_lock_sees_the_runs_of_each_grant_and_of_a_superuser_only(monkeypatch, orm_only):
    monkeypatch.setattr(claims_sql, "ORM_ONLY", orm_only)
    engine = principal("token:engine", "acme", "engine")
    mine = services.register_run(principal=engine, agent_id="a", scope="acme/team")
    theirs = services.register_run(principal=principal("token:x", "beta", "engine"), agent_id="a", scope="beta")
    two = Principal(name="two", grants=(("acme/team", frozenset({"auditor"})), ("gamma", frozenset({"engine"}))))
    root = Principal(name="root", superuser=True)
    nobody = Principal(name="nobody")
    assert claims_sql.lock_run(engine, mine.id)[0].id == mine.id
    assert claims_sql.lock_run(two, mine.id)[0].id == mine.id
    assert claims_sql.lock_run(root, theirs.id)[0].id == theirs.id
    for who, run in [(engine, theirs), (two, theirs)]:
        with pytest.raises(NotFound):
            claims_sql.lock_run(who, run.id)
    with CaptureQueriesContext(connection) as queries, pytest.raises(NotFound):
        claims_sql.lock_run(nobody, mine.id)
    assert queries.captured_queries == []


@pytest.mark.parametrize("orm_only", [True, False])
def test_the_lock_reads_the_live_pause_with_the_run_and_the_database_clock(monkeypatch, orm_only):
    monkeypatch.setattr(claims_sql, "ORM_ONLY", orm_only)
    engine = principal("token:engine", "acme", "engine")
    run = services.register_run(principal=engine, agent_id="a", scope="acme")
    locked, live, now = claims_sql.lock_run(engine, run.id)
    assert live is None and (locked.state, locked.revision) == ("running", 1) and now > run.created_at
    s = services.suspend_run(
        principal=engine, run_id=run.id, revision=1, reason="external_tool", pending=[call()], continuation={}
    )
    locked, live, _ = claims_sql.lock_run(engine, run.id)
    assert live is not None and live.id == s.id and live.pending == s.pending and live.run is locked
    assert locked.suspension is live and not locked._state.adding and not live._state.adding


@pytest.mark.parametrize("orm_only", [True, False])
def test_the_run_of_an_admission_is_found_in_the_callers_scopes_only(monkeypatch, orm_only):
    monkeypatch.setattr(claims_sql, "ORM_ONLY", orm_only)
    engine = principal("token:engine", "acme", "engine", "bus")
    s = services.suspend_run(
        principal=engine,
        run_id=services.register_run(principal=engine, agent_id="a", scope="acme/team").id,
        revision=1,
        reason="agent_reply",
        pending=[call(reply_with="q1")],
        continuation={},
    )
    v = services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=2)
    admitted = services.admit_reply(principal=engine, run_id=s.run_id, version=v, input='"x"', reply_with="q1")
    pk = admitted.admission.id
    assert claims_sql.admission_run(engine, pk) == s.run_id
    assert claims_sql.admission_run(Principal(name="root", superuser=True), str(pk)) == s.run_id
    assert claims_sql.admission_run(principal("token:x", "beta", "engine"), pk) is None
    assert claims_sql.admission_run(Principal(name="nobody"), pk) is None


SAMPLES = {str: "é text", UUID: UUID(int=7), datetime: datetime(2026, 12, 1, tzinfo=UTC), bool: True, int: 2**40}


def test_the_values_sent_as_they_are_are_those_django_would_send_unchanged():
    checked = 0
    for model in TABLES:
        for field in model._meta.concrete_fields:
            plain = sql_values.UNCHANGED.get(field.get_internal_type())
            if plain is None:
                continue
            sample = SAMPLES[plain]
            prepared = field.get_db_prep_save(sample, connection)
            assert prepared == sample and type(prepared) is plain, (model.__name__, field.name)
            checked += 1
    assert checked > 40
    # Integers are not among them: Django types each one (Int2, Int4, Int8) for the server.
    assert type(Run._meta.get_field("revision").get_db_prep_save(3, connection)) is not int
