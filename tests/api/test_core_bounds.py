"""The input bound (docs/api.md, "5. Digests and bounds"): the retained input measured as canonical JSON, and the body
limit before it."""

import json

import pytest
from django.conf import settings

from suspensions import digests, services
from suspensions.exceptions import InputTooLarge
from suspensions.models import Admission
from suspensions.principals import Principal
from tests.helpers import call, continuation, pause, post, refused, register, resume, snapshot, version

BOUND = 8 * 1024 * 1024


def results_of_size(size: int, pad: str = "x") -> list[dict[str, str]]:
    """Results whose canonical encoding is exactly `size` bytes (pad characters encode to one byte each)."""
    overhead = len(digests.canonical([{"call_id": "c1", "content": ""}]))
    results = [{"call_id": "c1", "content": pad * (size - overhead)}]
    assert len(digests.canonical(results)) == size
    return results


def test_the_bound_is_the_one_in_settings():
    assert settings.MAX_INPUT_BYTES == BOUND
    assert settings.MAX_REQUEST_BYTES == BOUND + 64 * 1024


def test_results_encoding_to_exactly_eight_mib_are_accepted(engine):
    s = pause(engine)
    results = results_of_size(BOUND)
    response = resume(engine, s, results)
    assert response.status_code == 201, response.content[:500]
    assert response.json()["results"] == results
    assert len(Admission.objects.get(run_id=s["run_id"]).input.encode()) == BOUND


def test_results_one_byte_over_the_bound_are_input_too_large(engine):
    s = pause(engine)
    results = results_of_size(BOUND + 1)
    refused(lambda: resume(engine, s, results), 413, "input_too_large")


def test_a_short_string_whose_escapes_pass_the_bound_is_input_too_large(engine):
    s = pause(engine)
    # 4 MiB + 16 KiB of '"' is half the bound raw, but each one encodes as two bytes.
    quotes = '"' * (BOUND // 2 + 16 * 1024)
    assert len(quotes.encode()) < BOUND < len(digests.canonical([{"call_id": "c1", "content": quotes}]))
    refused(lambda: resume(engine, s, [{"call_id": "c1", "content": quotes}]), 413, "input_too_large")


def test_five_mib_of_quotes_are_refused_by_the_service_as_well_as_by_the_body_limit(engine):
    s = pause(engine)
    quotes = '"' * (5 * 1024 * 1024)
    results = [{"call_id": "c1", "content": quotes}]
    refused(lambda: resume(engine, s, results), 413, "request_too_large")
    principal = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
    before = snapshot()
    with pytest.raises(InputTooLarge):
        services.resume_run(
            principal=principal,
            run_id=s["run_id"],
            version=services.Version(run_id=s["run_id"], suspension_id=s["id"], run_revision=s["run_revision"]),
            results=results,
        )
    assert snapshot() == before


def test_a_body_over_the_request_limit_is_refused_before_it_is_read(engine):
    s = pause(engine)
    body = json.dumps({"version": version(s), "results": [{"call_id": "c1", "content": "x" * (BOUND + 64 * 1024)}]})
    assert len(body) > settings.MAX_REQUEST_BYTES
    url = f"/api/v1/runs/{s['run_id']}/resume"
    problem = refused(lambda: engine.post(url, data=body, content_type="application/json"), 413, "request_too_large")
    assert str(settings.MAX_REQUEST_BYTES) in problem["detail"]


def body_of_length(s, length: int) -> str:
    template = json.dumps({"version": version(s), "results": [{"call_id": "c1", "content": "PAD"}]})
    return template.replace("PAD", "x" * (length - len(template) + 3))


def test_a_body_of_exactly_the_request_limit_is_read_and_measured(engine):
    s = pause(engine)
    body = body_of_length(s, settings.MAX_REQUEST_BYTES)
    assert len(body) == settings.MAX_REQUEST_BYTES
    url = f"/api/v1/runs/{s['run_id']}/resume"
    refused(lambda: engine.post(url, data=body, content_type="application/json"), 413, "input_too_large")
    longer = body_of_length(s, settings.MAX_REQUEST_BYTES + 1)
    refused(lambda: engine.post(url, data=longer, content_type="application/json"), 413, "request_too_large")


def test_pending_calls_are_bounded_like_an_input(engine):
    run = register(engine)
    # Backslashes double at each encoding: the arguments text is half the bound, its encoding over it.
    huge = [call(arguments=json.dumps({"note": "\\" * (BOUND // 4 + 1024)}))]
    body = {"revision": 1, "reason": "external_tool", "pending": huge, "continuation": continuation()}
    assert len(digests.canonical(huge)) > BOUND
    refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 413, "input_too_large")
