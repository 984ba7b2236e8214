"""The auditor's reads (docs/api.md, "7.14 Audit"): the public key, the JSON Lines export, and its offline check."""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.db import connection

from suspensions import audit
from suspensions.api import audit as export_view
from suspensions.services import audit as sealing
from tests.helpers import client, pause, problem, resume

pytestmark = pytest.mark.django_db
CLIENT_SRC = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"


@pytest.fixture
def auditor(token):
    return client(token("acme", ["auditor"], "ann"))


def export(c, query=""):
    response = c.get(f"/api/v1/audit/export{query}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/x-ndjson"
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def offline(tmp_path, lines, key=None):
    """Run `suspensions-verify` (the client's console script, as a module) on the lines written to a file."""
    path = tmp_path / "audit.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(CLIENT_SRC)}
    command = [
        sys.executable,
        "-m",
        "suspensions_client.verify",
        str(path),
        "--public-key",
        key or sealing.public_key(),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_the_public_key_is_the_auditors_and_verifies_the_checkpoints(auditor, engine):
    answer = auditor.get("/api/v1/audit/public-key")
    assert answer.status_code == 200
    assert answer.json()["algorithm"] == "ed25519"
    assert answer.json()["public_key"] == sealing.public_key()
    problem(engine.get("/api/v1/audit/public-key"), 403, "forbidden")


def test_the_export_holds_the_auditors_scopes_only_then_their_workspaces_checkpoints_only(auditor, engine, token):
    mine = pause(engine)
    theirs = pause(client(token("beta", ["engine"], "beta-engine")), scope="beta")
    sealing.write_checkpoint()
    lines = export(auditor)
    events = [line for line in lines if line["type"] == "event"]
    assert {e["run_id"] for e in events} == {mine["run_id"]}
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert theirs["run_id"] not in json.dumps(lines)
    (checkpoint,) = [line for line in lines if line["type"] == "checkpoint"]
    assert checkpoint["runs"] == [[mine["run_id"], events[-1]["hash"], 2]]
    assert (checkpoint["workspace"], checkpoint["seq"], checkpoint["complete"]) == ("acme", 1, True)
    assert lines[-1] is checkpoint or lines[-1] == checkpoint


def test_scope_and_since_narrow_the_export(auditor, engine, token):
    support = pause(client(token("acme/support", ["engine"], "support-engine")), scope="acme/support")
    pause(engine)
    assert {e["run_id"] for e in export(auditor, "?scope=acme/support") if e["type"] == "event"} == {support["run_id"]}
    later = export(auditor)[-1]["at"]
    since = [e for e in export(auditor, f"?since={later.replace('+', '%2B')}") if e["type"] == "event"]
    assert since and all(audit.rfc3339(e["at"]) >= later for e in since)


@pytest.mark.parametrize(
    "query, status, code",
    [
        ("?scope=Not A Scope", 400, "invalid_request"),
        ("?since=yesterday", 400, "invalid_request"),
        ("?since=2026-01-01T00:00:00", 400, "invalid_request"),
        ("?scope=beta", 403, "forbidden"),
    ],
)
def test_a_bad_query_is_a_problem_before_anything_streams(auditor, query, status, code):
    problem(auditor.get(f"/api/v1/audit/export{query}"), status, code)


def test_an_unknown_query_parameter_is_a_400_naming_it_as_the_lists_answer(auditor):
    # `scopes` for `scope`: a misspelt filter must not export every scope as if it had matched (issue 50).
    body = problem(auditor.get("/api/v1/audit/export?scopes=acme&since=2026-01-01T00:00:00Z"), 400, "invalid_request")
    assert list(body["errors"]) == ["scopes"]
    assert body["errors"]["scopes"] == ["Unknown query parameter. Known: scope, since."]


def test_only_an_auditor_exports(engine):
    problem(engine.get("/api/v1/audit/export"), 403, "forbidden")


def test_the_export_reads_in_keyset_pages(auditor, engine, monkeypatch):
    runs = [pause(engine)["run_id"] for _ in range(3)]
    monkeypatch.setattr(export_view, "PAGE", 2)
    events = [line for line in export(auditor) if line["type"] == "event"]
    assert len(events) == 6
    assert {e["run_id"] for e in events} == set(runs)


def test_a_real_export_verifies_offline_and_a_tampered_one_does_not(auditor, engine, tmp_path):
    s = pause(engine)
    assert resume(engine, s).status_code == 201
    sealing.write_checkpoint()
    pause(engine)
    sealing.write_checkpoint()
    lines = export(auditor)
    code, out = offline(tmp_path, lines)
    assert code == 0, out
    assert "checked 6 events in 2 runs, 2 checkpoints and 2 checkpoint lines" in out
    forged = [dict(line) for line in lines]
    forged[1]["actor"] = "mallory"
    code, out = offline(tmp_path, forged)
    assert code == 1
    assert f"event {forged[1]['id']}: altered" in out


def test_a_tampered_database_exports_a_trail_the_offline_check_refuses(auditor, engine, tmp_path):
    s = pause(engine)
    sealing.write_checkpoint()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM suspensions_event WHERE run_id = %s AND kind = 'suspended'", [s["run_id"]])
    code, out = offline(tmp_path, export(auditor))
    assert code == 1
    assert f"run {s['run_id']}: checkpoint 1 of acme sealed 2 events, the export has 1" in out


def test_a_checkpoint_signed_by_another_key_is_refused_offline(auditor, engine, tmp_path):
    pause(engine)
    sealing.write_checkpoint()
    other = "aW1wb3N0b3Iga2V5IG9mIHRoaXJ0eS10d28gYnl0ZXM="  # not the service's key

    raw = Ed25519PrivateKey.from_private_bytes(base64.b64decode(other)).public_key()
    key = base64.b64encode(raw.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
    code, out = offline(tmp_path, export(auditor), key)
    assert code == 1
    assert "checkpoint 1 of acme: its signature does not verify" in out


def test_the_clients_copy_of_the_chain_arithmetic_is_the_services():
    service = Path(audit.__file__).read_text(encoding="utf-8")
    assert (CLIENT_SRC / "suspensions_client" / "audit.py").read_text(encoding="utf-8") == service
