"""Typed errors: each problem the live server sends becomes its own exception class, and nothing was written."""

import uuid

import pytest
from suspensions_client import (
    AdmissionConflict,
    Client,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotAnApproval,
    NotFound,
    RequiresApproval,
    ResumeAlreadyStarted,
    SuspensionsError,
    Unauthenticated,
    Version,
    VersionConflict,
    errors,
)

from suspensions.models import Admission, Event, Run, Suspension

from .conftest import cont, pending


def test_a_stale_revision_is_a_version_conflict_with_the_problem_fields_and_changes_nothing(engine):
    run = engine.register("a")
    engine.suspend(run, reason="external_tool", pending=[pending()], continuation=cont())
    with pytest.raises(VersionConflict) as conflict:
        engine.complete(run.id, revision=1)
    error = conflict.value
    assert isinstance(error, Conflict) and isinstance(error, SuspensionsError)
    assert (error.status, error.code, error.title) == (
        409,
        "version_conflict",
        "The revision or pause you hold is stale",
    )
    assert error.detail == f"run {run.id} is at revision 2, not 1"
    assert error.problem["type"] == "https://suspensions.dev/errors/version_conflict"
    assert error.request_id and str(error).startswith("409 version_conflict")
    assert (Run.objects.get(pk=run.id).state, Event.objects.filter(run_id=run.id).count()) == ("paused", 2)


def test_a_different_resume_of_a_claimed_pause_is_an_admission_conflict_naming_both_digests(engine):
    pause = engine.suspend(engine.register("a"), reason="external_tool", pending=[pending()], continuation=cont())
    first = engine.resume(pause, [{"call_id": "c1", "content": 1}])
    with pytest.raises(AdmissionConflict) as conflict:
        engine.resume(pause, [{"call_id": "c1", "content": 2}])
    assert conflict.value.admitted_digest == first.admission.request_digest
    assert len(conflict.value.request_digest) == 64 and conflict.value.request_digest != first.admission.request_digest
    assert Admission.objects.count() == 1


def test_a_second_start_is_resume_already_started_carrying_the_start_receipt(engine, approver):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    admitted = approver.decide(pause.id, pause.version)
    started = engine.start(admitted)
    with pytest.raises(ResumeAlreadyStarted) as again:
        engine.start(admitted.admission.id)
    assert again.value.receipt["digest"] == started.start.digest and "suspension" not in again.value.problem


def test_each_door_refuses_the_other_reasons_with_its_own_class(engine, approver):
    approval = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    with pytest.raises(RequiresApproval):
        engine.resume(approval, [{"call_id": "c1", "content": 1}])
    tool = engine.suspend(engine.register("b"), reason="external_tool", pending=[pending()], continuation=cont())
    with pytest.raises(NotAnApproval) as refused:
        approver.decide(tool.id, tool.version)
    assert refused.value.status == 403
    assert Suspension.objects.count() == 2 and Admission.objects.count() == 0


def test_invalid_fields_are_invalid_request_with_field_errors(engine):
    run = engine.register("a")
    with pytest.raises(InvalidRequest) as invalid:
        engine.suspend(run, reason="external_tool", pending=[pending()], continuation=cont(), ttl_seconds=-1)
    assert invalid.value.status == 400 and "ttl_seconds" in invalid.value.errors
    assert Run.objects.get(pk=run.id).revision == 1


def test_unknown_ids_wrong_roles_and_bad_tokens_have_their_classes(base_url, connect):
    approver = connect("approver")
    with pytest.raises(NotFound):
        approver.get_run(str(uuid.uuid4()))
    with pytest.raises(Forbidden):
        approver.register("a", scope="acme")
    with Client(base_url, "sus_not-a-token") as stranger, pytest.raises(Unauthenticated) as refused:
        stranger.list_runs()
    assert refused.value.status == 401 and refused.value.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(NotFound):
        stale = Version(run_id=str(uuid.uuid4()), suspension_id=str(uuid.uuid4()), run_revision=2)
        approver.decide(stale.suspension_id, stale, "deny", reason="no")
    assert Run.objects.count() == 0


def test_an_unknown_code_maps_to_the_class_of_its_status_and_a_non_problem_body_too():
    unknown = errors.error_from(409, {"code": "brand_new_conflict", "detail": "later"})
    assert type(unknown) is errors.Conflict and unknown.code == "brand_new_conflict"
    assert type(errors.error_from(403, {"code": "version_conflict"})) is errors.PermissionDenied
    assert type(errors.error_from(502, "<html>bad gateway</html>")) is errors.ServerError
    assert type(errors.error_from(418, {"code": "teapot"})) is errors.SuspensionsError
    assert type(errors.error_from(503, {"code": "unavailable"})) is errors.Unavailable


def test_bad_utf8_in_a_real_servers_path_or_query_is_a_400_problem(base_url):
    """Through gunicorn, as a client sends it: the raw bytes on the request line (issue 50 item 14)."""
    import http.client
    import json as _json
    from urllib.parse import urlsplit

    address = urlsplit(base_url)
    answers = {}
    for target in ("/api/v1/callbacks/%ff%c3", "/api/v1/runs?agent_id=%ff%c3"):
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        connection.request("GET", target)
        response = connection.getresponse()
        answers[target] = (response.status, response.getheader("Content-Type"), _json.loads(response.read()))
        connection.close()
    for status, content_type, body in answers.values():
        assert (status, content_type, body["code"]) == (400, "application/problem+json", "invalid_request")
    assert list(answers["/api/v1/callbacks/%ff%c3"][2]["errors"]) == ["path"]
    assert list(answers["/api/v1/runs?agent_id=%ff%c3"][2]["errors"]) == ["agent_id"]
