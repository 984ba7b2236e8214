"""The bearer token lookup: one SELECT of the columns a request needs, live tokens only.

A revocation counts from the very next request (nothing is cached), and
last_used_at is written on first use and then at most once a minute.
"""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from suspensions.models import ApiToken
from suspensions.tokens import create_token, hash_token, live_token
from tests.helpers import client, pause, post, snapshot

from .test_trust_auth import unauthenticated


@pytest.fixture
def tokens(db):
    """Secrets of tokens in every state the lookup tells apart, by name."""
    user = get_user_model().objects.create_user("tina", password="pw")
    gone = get_user_model().objects.create_user("ivan", password="pw", is_active=False)
    now = timezone.now()
    made = {
        "plain": create_token(scope="acme", roles=["engine", "approver"], name="plain"),
        "linked": create_token(scope="acme/team", roles=["bus"], name="linked", user=user),
        "lapsing": create_token(scope="acme", roles=["engine"], name="lapsing", expires_at=now + timedelta(days=1)),
        "expired": create_token(scope="acme", roles=["engine"], name="expired", expires_at=now - timedelta(seconds=1)),
        "revoked": create_token(scope="acme", roles=["engine"], name="revoked"),
        "inactive": create_token(scope="acme", roles=["engine"], name="inactive", user=gone),
    }
    ApiToken.objects.filter(name="revoked").update(revoked=True)
    ApiToken.objects.filter(name="plain").update(last_used_at=now)
    return {name: secret for name, (_, secret) in made.items()}


def test_the_lookup_finds_only_live_tokens_with_the_columns_a_request_needs(tokens):
    secrets = [*tokens.values(), "sus_unknown"]
    found = [live_token(hash_token(secret)) for secret in secrets]
    assert [t.name if t else None for t in found] == ["plain", "linked", "lapsing", None, None, None, None]
    linked = found[1]
    assert linked is not None and linked.user_id == get_user_model().objects.get(username="tina").pk
    assert (linked.user_staff, found[0].user_staff) == (False, None)
    assert found[0] is not None and found[0].last_used_at is not None


def test_a_request_authenticates_with_one_statement_once_its_token_was_used_this_minute(tokens):
    c = client(tokens["plain"])
    with CaptureQueriesContext(connection) as queries:
        assert c.get("/api/v1/approvals").status_code == 200
    token_reads = [q for q in queries.captured_queries if "suspensions_apitoken" in q["sql"]]
    assert len(token_reads) == 1 and token_reads[0]["sql"].startswith("SELECT")


def test_last_used_at_is_written_on_first_use_and_not_again_within_the_minute(tokens):
    assert live_token(hash_token(tokens["lapsing"])).last_used_at is None
    c = client(tokens["lapsing"])
    c.get("/api/v1/runs")
    first = ApiToken.objects.get(name="lapsing").last_used_at
    assert first is not None
    c.get("/api/v1/runs")
    assert ApiToken.objects.get(name="lapsing").last_used_at == first
    ApiToken.objects.filter(name="lapsing").update(last_used_at=first - timedelta(minutes=2))
    c.get("/api/v1/runs")
    assert ApiToken.objects.get(name="lapsing").last_used_at > first


def test_a_token_revoked_while_in_use_is_refused_from_the_next_request_on(tokens):
    c = client(tokens["plain"])
    s = pause(c)
    ApiToken.objects.filter(name="plain").update(revoked=True)
    before = snapshot()
    unauthenticated(post(c, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": s["run_revision"]}))
    assert snapshot() == before


def test_the_hand_written_lookup_reads_every_field_of_a_live_token_in_order(tokens):
    """LIVE_TOKEN_SQL is written by hand: its columns are LiveToken's fields, and each equals the stored value."""
    import dataclasses

    from suspensions.tokens import LIVE_TOKEN_SQL, LiveToken

    selected = LIVE_TOKEN_SQL.split(" FROM ")[0].removeprefix("SELECT ").split(", ")
    assert [c.split(".")[1] for c in selected] == [*[f.name for f in dataclasses.fields(LiveToken)][:-1], "is_staff"]
    token = live_token(hash_token(tokens["linked"]))
    stored = ApiToken.objects.select_related("user").get(name="linked")
    assert token == LiveToken(
        stored.id, stored.name, stored.scope, stored.roles, stored.user_id, stored.last_used_at, stored.user.is_staff
    )
