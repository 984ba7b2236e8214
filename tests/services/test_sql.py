"""The hand-written SQL (services/sql/) held to the models: no field can be dropped by a statement written by hand.

Three guards. Every INSERT in services/sql/ names every column of its table, read from
the model's `_meta` (and so from the migrations: makemigrations --check holds
the models to them). The audit chain's function (migration 0017), read back from
PostgreSQL, inserts whole event rows, names only Event's columns, and is sent
every column of Event by name. And the rows the sweep, the fan-out and a
delivery's claim leave are compared field by field with the rows the ORM path
builds for the same change, so a field set in Python and lost on the way to the
database fails here (the drift of issue 31: a field added to WebhookMessage
and set in the fan-out was dropped by a hand-written column list).
"""

import ast
import inspect
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Exists, Model, OuterRef
from django.db.models.fields import AutoFieldMixin
from django.utils.dateparse import parse_datetime

from suspensions import audit, presenters, services
from suspensions.clock import db_now
from suspensions.models import (
    Admission,
    Approval,
    ApprovalVote,
    Event,
    IdempotencyKey,
    OutboxEvent,
    Run,
    Start,
    WebhookMessage,
)
from suspensions.services import announce, delivery, fan_out_steps, outbox
from suspensions.services.claims import event, write_events
from suspensions.services.sql import expiry, idempotency, push, rows
from suspensions.services.sql.rows import Writes
from tests.helpers import approval_pause, pause, resume

from ..push.conftest import make_endpoint, paused

pytestmark = pytest.mark.django_db


def statement_texts() -> list[tuple[Any, str]]:
    """Every f-string and string of services/sql/ as written, `{NAME}` where a table name is interpolated."""
    texts = []
    for module in (expiry, push, rows):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.JoinedStr):
                texts.append((module, "".join(_piece(v) for v in node.values)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append((module, node.value))
    return texts


def _piece(value: ast.expr) -> str:
    if isinstance(value, ast.Constant):
        return str(value.value)
    assert isinstance(value, ast.FormattedValue)
    return "{" + ast.unparse(value.value) + "}"


def inserted_columns(model: type[Model]) -> set[str]:
    return {f.column for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin)}


INSERT = re.compile(r"INSERT INTO \{(\w+)\} \(([^)]*)\)")


def test_every_insert_in_the_hand_written_sql_names_every_column_of_its_table():
    inserts = [(module, m) for module, text in statement_texts() for m in INSERT.finditer(text)]
    assert inserts, "services/sql/ has INSERTs: the parse found none"
    for module, found in inserts:
        model = {m._meta.db_table: m for m in (Event, OutboxEvent, *_models())}[getattr(module, found.group(1))]
        named = {c.strip() for c in found.group(2).split(",")}
        expected = inserted_columns(model)
        assert named == expected, f"INSERT INTO {model.__name__}: {named ^ expected}"


def chain_function() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef(%s::regproc)", [rows.CHAIN_EVENTS])
        return cursor.fetchone()[0]


def test_the_chain_function_inserts_whole_event_rows_with_no_column_list_to_keep():
    definition = chain_function()
    # The row variable is the table's own row type, filled by column name from the JSON rows.chain_params sends.
    assert f" e {rows.EVENT};" in definition
    assert f"e := jsonb_populate_record(NULL::{rows.EVENT}, item -> 'row');" in definition
    assert re.findall(r"INSERT INTO [^;]*;", definition) == [f"INSERT INTO {rows.EVENT} SELECT e.*;"]
    assert f"nextval('{rows.EVENT_SEQUENCE}')" in definition
    # The columns it does name (the ones it computes, and the run it reads the previous hash of) are Event's.
    named = set(re.findall(r"\b[ep]\.(\w+)", definition))
    assert named == {"id", "run_id", "prev_hash", "hash"} <= {f.column for f in Event._meta.concrete_fields}


def test_the_chain_function_is_sent_every_column_of_event_and_its_pieces():
    row = event(Run(scope="acme/support"), "noted", "tester", db_now(), n=1)
    (sent,) = rows.chain_params([row])
    (item,) = json.loads(sent)
    assert list(item["row"]) == [f.column for f in Event._meta.concrete_fields]
    assert (item["before"], item["after"]) == audit.pieces(fields_of(row))


def test_an_event_written_by_the_chain_function_reads_back_field_by_field_as_built(engine):
    run = Run.objects.get(pk=pause(engine)["run_id"])
    row = event(run, "noted", "tester", db_now(), text='naïve ✓ "quoted" \\ {a,b}', n=1.5, none=None)
    with transaction.atomic():
        writes = Writes()
        write_events(writes, row)
        writes.send()
    assert fields_of(Event.objects.get(pk=row.id), skip=()) == fields_of(row, skip=())


def test_the_service_prepares_no_statement_on_the_server_even_when_psycopg_is_told_to(engine):
    """PgBouncer in transaction mode needs this (docs/deploy.md, "PgBouncer"): client-side binding prepares nothing."""
    connection.ensure_connection()
    raw = connection.connection
    saved, raw.prepare_threshold = raw.prepare_threshold, 0  # 0: psycopg would prepare every statement at once
    try:
        for _ in range(3):  # register, pause; each statement more than once on this one connection
            pause(engine)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            assert cursor.fetchone()[0] == 0
    finally:
        raw.prepare_threshold = saved


def test_the_take_of_an_idempotency_key_writes_every_column_of_its_table():
    named = set(re.findall(r'"(\w+)"', idempotency.TAKE.split(" VALUES ")[0]))
    assert named == inserted_columns(IdempotencyKey)


def _models() -> list[type[Model]]:
    from django.apps import apps

    return list(apps.get_app_config("suspensions").get_models())


def fields_of(row: Model, *, skip: tuple[str, ...] = ("id",)) -> dict[str, object]:
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields if f.attname not in skip}


def test_the_sweeps_event_and_outbox_rows_are_the_rows_the_orm_path_builds(engine):
    s = pause(engine, ttl_seconds=60)
    now = db_now() + timedelta(days=2)
    services.expire_suspensions(now=now)
    run = Run.objects.get(pk=s["run_id"])
    written = Event.objects.get(run_id=run.id, kind="expired")
    data = {"suspension_id": s["id"], "reason": "external_tool", "expires_at": s["expires_at"]}
    chain = ("id", "prev_hash", "hash")  # written by the INSERT itself; tests/audit check the chain
    assert fields_of(written, skip=chain) == fields_of(event(run, "expired", expiry.SWEEPER, now, **data), skip=chain)
    announced = OutboxEvent.objects.get(run_id=run.id, type="suspension.expired")
    built = OutboxEvent(run_id=run.id, type=announced.type, data=announced.data, created_at=now)
    built.stamp_scope(run.scope)
    assert fields_of(announced) == fields_of(built)
    expected = announce.expired_data(
        run_id=run.id,
        suspension_id=s["id"],
        scope=run.scope,
        revision=run.revision,
        reason="external_tool",
        deadline=parse_datetime(s["expires_at"]),
        admission_id=None,
    )
    assert announced.data == expected


def test_the_fan_outs_messages_are_stored_exactly_as_built(monkeypatch):
    make_endpoint("acme")
    make_endpoint("acme", format="slack")
    built: list[WebhookMessage] = []
    dispatch = fan_out_steps.dispatch

    def keep(messages, events, now):
        built.extend(messages)
        dispatch(messages, events, now)

    monkeypatch.setattr(outbox.current_app, "send_task", lambda *args, **kwargs: None)
    monkeypatch.setattr(fan_out_steps, "dispatch", keep)
    paused(reason="approval")
    outbox.fan_out()
    assert len(built) == 2
    for message in built:
        assert fields_of(WebhookMessage.objects.get(pk=message.pk), skip=()) == fields_of(message, skip=())


def test_a_deliverys_claim_reads_the_message_and_its_endpoint_as_stored(monkeypatch):
    endpoint = make_endpoint("acme")
    monkeypatch.setattr(outbox.current_app, "send_task", lambda *args, **kwargs: None)
    paused(reason="approval")
    outbox.fan_out()
    message = WebhookMessage.objects.get()
    claimed = delivery.claim(message_id=message.id)
    assert claimed is not None
    (one,) = claimed.messages
    stored = (endpoint.id, endpoint.url, endpoint.format, (endpoint.secret,), message.id, message.run_id, message.body)
    assert (claimed.endpoint_id, claimed.url, claimed.format, claimed.secrets, one.id, one.run_id, one.body) == stored
    assert (one.endpoint_id, one.number) == (endpoint.id, 1)
    assert message.body == presenters.webhook_body(OutboxEvent.objects.get(pk=message.event_id), endpoint.format)


def test_a_doors_read_after_the_lock_is_the_row_the_orm_reads_with_its_exists_flag(engine):
    """rows.select_row (a decision's approval, a start's admission) against the ORM's annotate(Exists) read."""
    record = approval_pause()
    read = rows.select_row(
        Approval,
        {"suspension_id": record.pk, "run_id": record.run_id},
        flag=("has_votes", ApprovalVote, "suspension_id"),
    )
    votes = ApprovalVote.objects.filter(suspension_id=OuterRef("pk"))
    orm = Approval.objects.annotate(has_votes=Exists(votes)).get(pk=record.pk)
    assert read is not None and fields_of(read, skip=()) == fields_of(orm, skip=())
    assert read.has_votes is orm.has_votes is False
    assert not read._state.adding

    resumed = resume(engine, pause(engine)).json()
    admission_id = resumed["admission"]["id"]
    read = rows.select_row(Admission, {"id": admission_id}, flag=("has_start", Start, "admission_id"))
    orm = Admission.objects.get(pk=admission_id)
    assert read is not None and fields_of(read, skip=()) == fields_of(orm, skip=())
    assert read.has_start is True
    assert rows.select_row(Approval, {"suspension_id": record.pk, "run_id": admission_id}) is None
