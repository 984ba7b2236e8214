"""The suspension digest spliced from a pause's stored canonical text equals the digest of the object itself."""

import random
from datetime import UTC, datetime

import pytest

from suspensions import digests, services
from suspensions.models import Admission
from suspensions.services.claims import suspension_digest_of
from tests.factories import principal
from tests.helpers import call, continuation

VALUES = [None, True, 0, -7, 2.5, "", 'é ✓ \u2028 "q" \\', [1, {"b": 1, "a": [None]}], {"z": {"y": "x"}, "a": 1}]


def object_digest(**fields):
    return digests.digest(
        {
            "id": str(fields["id"]),
            "run_id": str(fields["run_id"]),
            "scope": fields["scope"],
            "reason": fields["reason"],
            "pending": fields["pending"],
            "continuation": fields["continuation"],
            "expires_at": digests.rfc3339(fields["expires_at"]),
        }
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_spliced_digest_is_the_digest_of_the_canonical_object(seed):
    rng = random.Random(seed)
    fields = {
        "id": f"id-{rng.random()}",
        "run_id": "run-é" if seed % 3 else "run",
        "scope": rng.choice(["acme", "acme/support/é", 'we"ird\\scope']),
        "reason": rng.choice(["approval", "external_tool", "agent_reply"]),
        "pending": [rng.choice(VALUES) for _ in range(rng.randint(0, 4))],
        "continuation": {f"k{n}": rng.choice(VALUES) for n in range(rng.randint(0, 5))},
        "expires_at": None if seed % 4 == 0 else datetime(2026, 12, 1, 1, 2, 3, seed, tzinfo=UTC),
    }
    spliced = digests.suspension_digest_of_texts(
        **{
            **fields,
            "pending": digests.canonical(fields["pending"]),
            "continuation": digests.canonical(fields["continuation"]),
        }
    )
    assert spliced == object_digest(**fields) == digests.suspension_digest(**fields)
    # Any change of a part changes it.
    assert spliced != digests.suspension_digest(**{**fields, "reason": fields["reason"] + "x"})


@pytest.mark.parametrize("text", ["", "plain", 'q"uote\\', "\u2028\u2029\x00\x1f\x7f", "é ✓ 😀", "\ud800"])
def test_a_string_is_spliced_as_canonical_json_writes_it(text):
    try:
        expected = digests.canonical(text)
    except ValueError:
        with pytest.raises(ValueError):
            digests._string(text)
        return
    assert digests._string(text) == expected


@pytest.mark.django_db
def test_a_claim_records_the_digest_of_the_pause_as_it_was_asked():
    engine = principal("token:engine", "acme", "engine")
    run = services.register_run(principal=engine, agent_id="a", scope="acme")
    pending = [call(arguments='{"b": 2, "a": "é"}')]
    asked = {"z": [1, {"y": None}], "a": "ü"}
    s = services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason="external_tool",
        pending=pending,
        continuation={**continuation(), **asked},
        ttl_seconds=600,
    )
    version = services.Version(run_id=run.id, suspension_id=s.id, run_revision=2)
    results = [{"call_id": "c1", "content": {"ok": True}}]
    services.resume_run(principal=engine, run_id=run.id, version=version, results=results)
    recorded = Admission.objects.get(suspension_id=s.id).suspension_digest
    expected = object_digest(
        id=s.id,
        run_id=run.id,
        scope="acme",
        reason="external_tool",
        pending=pending,
        continuation={**continuation(), **asked},
        expires_at=s.expires_at,
    )
    assert recorded == expected == suspension_digest_of(s)
