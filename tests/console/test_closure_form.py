"""The closure form fills in what the server knows and reads local times; uncertain starts wait for a threshold."""

import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from suspensions import digests, services
from suspensions.models import ClosureReceipt, Start
from tests.closure_setup import started, written
from tests.console.test_closure_console import proof, shown, staff

pytestmark = pytest.mark.django_db


def value_of(html: str, name: str) -> str:
    found = re.search(rf'<input type="[^"]+" name="{name}" value="([^"]*)"', html)
    assert found is not None, name
    return found[1]


def backdate(claimed: services.Claimed, seconds: int) -> None:
    Start.objects.filter(run_id=claimed.run.id).update(started_at=timezone.now() - timedelta(seconds=seconds))


# -- the closure form -------------------------------------------------------------------------------


def test_the_closure_form_fills_in_now_and_an_hour_of_validity_in_utc():
    claimed = started()
    before = services.db_now().replace(microsecond=0)
    html = staff("olga", "acme", "operator").get(f"/console/runs/{claimed.run.id}/close").content.decode()
    after = services.db_now()
    observed = datetime.fromisoformat(value_of(html, "observed_at")).replace(tzinfo=UTC)
    expires = datetime.fromisoformat(value_of(html, "expires_at")).replace(tzinfo=UTC)
    assert before <= observed <= after
    assert expires - observed == timedelta(hours=1)
    assert '<option value="UTC" selected>' in html
    assert "Until when the proof can be trusted" in html and "sha256sum" in html


def test_local_times_are_read_in_the_chosen_zone_and_recorded_in_utc():
    claimed = started()
    new_york = ZoneInfo("America/New_York")
    now = services.db_now()
    observed = (now - timedelta(minutes=2)).astimezone(new_york).replace(microsecond=0)
    local = {
        "observed_at": observed.strftime("%Y-%m-%dT%H:%M:%S"),
        "expires_at": (observed + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
        "time_zone": "America/New_York",
    }
    response = staff("olga", "acme", "operator").post(
        f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **proof(), **local}
    )
    assert response.status_code == 302
    request = json.loads(ClosureReceipt.objects.get().request)
    assert request["observed_at"] == digests.rfc3339(observed)
    assert request["expires_at"] == digests.rfc3339((observed + timedelta(hours=2)).replace(second=0))


def test_a_time_with_an_offset_keeps_its_offset_whatever_zone_is_chosen():
    claimed = started()
    observed = services.db_now().replace(microsecond=0) - timedelta(minutes=1)
    fields = {
        **proof(),
        "observed_at": observed.astimezone(ZoneInfo("Asia/Tokyo")).isoformat(),
        "time_zone": "Europe/Berlin",
    }
    response = staff("olga", "acme", "operator").post(
        f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **fields}
    )
    assert response.status_code == 302
    assert json.loads(ClosureReceipt.objects.get().request)["observed_at"] == digests.rfc3339(observed)


def test_an_uppercase_proof_digest_is_taken_in_lowercase():
    claimed = started()
    response = staff("olga", "acme", "operator").post(
        f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **proof(proof_digest="AB" * 32)}
    )
    assert response.status_code == 302
    assert json.loads(ClosureReceipt.objects.get().request)["proof_digest"] == "ab" * 32


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"observed_at": "0001-01-01T00:30:00", "time_zone": "Europe/Berlin"}, "error-observed_at"),
        ({"expires_at": "9999-12-31T23:00:00", "time_zone": "America/New_York"}, "error-expires_at"),
        ({"time_zone": "Mars/Olympus_Mons"}, "error-time_zone"),
        ({"observed_at": "yesterday"}, "error-observed_at"),
        ({"proof_digest": "ab" * 31}, "error-proof_digest"),
    ],
    ids=["before-year-one-in-utc", "after-year-9999-in-utc", "unknown-zone", "not-a-time", "short-digest"],
)
def test_a_time_or_zone_the_form_cannot_read_is_a_field_error_and_writes_nothing(fields, error):
    claimed = started()
    before = written()
    response = staff("olga", "acme", "operator").post(
        f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **proof(), **fields}
    )
    assert response.status_code == 400
    assert f'id="{error}"' in response.content.decode()
    assert written() == before


# -- uncertain starts: only settled ones by default ----------------------------------------------------


def test_a_start_younger_than_the_threshold_is_left_out_and_counted(settings):
    settings.UNCERTAIN_AFTER_SECONDS = 300
    young, old = started(), started()
    backdate(old, 301)
    olga = staff("olga", "acme", "operator")
    html = olga.get("/console/uncertain/").content.decode()
    assert f'id="uncertain-{old.run.id}"' in html and f'id="uncertain-{young.run.id}"' not in html
    assert "1 start younger than 5 min is not listed" in html and "?recent=1" in html
    everything = olga.get("/console/uncertain/?recent=1").content.decode()
    assert f'id="uncertain-{old.run.id}"' in everything and f'id="uncertain-{young.run.id}"' in everything
    assert everything.count(">recent</span>") == 1


def test_a_threshold_of_zero_lists_every_start_at_once(settings):
    settings.UNCERTAIN_AFTER_SECONDS = 0
    claimed = started()
    backdate(claimed, 1)
    html = staff("olga", "acme", "operator").get("/console/uncertain/").content.decode()
    assert f'id="uncertain-{claimed.run.id}"' in html and 'id="recent-note"' not in html


@pytest.mark.parametrize("rows", [1, 8])
def test_uncertain_starts_take_the_same_few_queries_for_any_number_of_rows(rows, django_assert_max_num_queries):
    for _ in range(rows):
        backdate(started(), 600)
        started()
    olga = staff("olga", "acme", "operator")
    # session + user + memberships, then the rows, their admissions and runs, and the count of younger ones.
    with django_assert_max_num_queries(7):
        response = olga.get("/console/uncertain/")
    assert (len(response.context["rows"]), response.context["hidden_recent"]) == (rows, rows)
