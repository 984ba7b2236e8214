"""The auditor's client calls against the live server: the key, the export, and its offline check
(docs/api.md, "7.14 Audit")."""

from suspensions_client import verify

from suspensions.services import audit

from .conftest import cont, pending


def test_an_auditor_reads_the_key_and_an_export_that_verifies_offline(connect, engine):
    run = engine.register("a")
    engine.suspend(run, reason="external_tool", pending=[pending()], continuation=cont())
    audit.write_checkpoint()
    auditor = connect("auditor")
    key = auditor.audit_public_key()
    assert key == audit.public_key()
    text = auditor.audit_export(scope="acme")
    verdict = verify.verify(text.splitlines(), key)
    assert (verdict.events, verdict.checkpoints, verdict.lines_checked, verdict.problems) == (2, 1, 1, [])
