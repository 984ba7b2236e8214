"""T10 in the console: the closure form on uncertain starts, the receipt page, the run page."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from suspensions import digests, services
from suspensions.models import ClosureReceipt, Membership, Run
from tests.closure_setup import OPERATOR, closure_body, closure_request, started, written

pytestmark = pytest.mark.django_db


def staff(name: str, scope: str, *roles: str) -> Client:
    user = get_user_model().objects.create_user(name, password="pw", is_staff=True)
    for role in roles:
        membership = Membership(user=user, role=role)
        membership.stamp_scope(scope)
        membership.save()
    browser = Client()
    browser.force_login(user)
    return browser


def proof(**overrides: str) -> dict[str, str]:
    now = services.db_now()
    body = {
        "issuer": "cluster-controller",
        "issuer_revision": "rev-7",
        "proof_ref": "pods/agent-7/terminated",
        "proof_digest": "ab" * 32,
        "observed_at": digests.rfc3339(now - timedelta(minutes=1)),
        "expires_at": digests.rfc3339(now + timedelta(hours=1)),
    }
    body.update(overrides)
    return body


def shown(claimed: services.Claimed) -> dict[str, str]:
    """The hidden fields exactly as the closure page renders them."""
    body = closure_body(claimed)
    return {
        "suspension_id": body["version"]["suspension_id"],
        "version_revision": str(body["version"]["run_revision"]),
        "admission_digest": body["admission_digest"],
        "start_digest": body["start_digest"],
        "run_revision": str(body["run_revision"]),
    }


def test_only_operators_see_the_closure_link_on_uncertain_starts():
    claimed = started()
    link = f"/console/runs/{claimed.run.id}/close"
    operator_page = staff("olga", "acme", "operator").get("/console/uncertain/?recent=1").content.decode()
    auditor_page = staff("aldo", "acme", "auditor").get("/console/uncertain/?recent=1").content.decode()
    assert f'id="close-{claimed.run.id}"' in operator_page and link in operator_page
    assert f'id="close-{claimed.run.id}"' in auditor_page and link not in auditor_page


def test_the_closure_page_is_prefilled_with_what_it_shows():
    claimed = started()
    page = staff("olga", "acme", "operator").get(f"/console/runs/{claimed.run.id}/close")
    assert page.status_code == 200
    html = page.content.decode()
    for value in shown(claimed).values():
        assert f'value="{value}"' in html
    assert 'id="closure-form"' in html


def test_a_user_without_the_operator_role_gets_no_closure_form():
    claimed = started()
    page = staff("aldo", "acme", "auditor").get(f"/console/runs/{claimed.run.id}/close")
    assert page.status_code == 200
    assert 'id="closure-form"' not in page.content.decode()


def test_an_operator_closes_from_the_console_and_lands_on_the_receipt():
    claimed = started()
    browser = staff("olga", "acme", "operator")
    response = browser.post(f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **proof()}, follow=True)
    receipt = ClosureReceipt.objects.get()
    assert response.redirect_chain[-1][0] == f"/console/runs/{claimed.run.id}/closures/{receipt.suspension_id}/"
    assert receipt.actor == "user:olga"
    assert Run.objects.get(pk=claimed.run.id).state == "incomplete"
    assert "Closed. The run is incomplete" in response.content.decode()
    run_page = browser.get(f"/console/runs/{claimed.run.id}/").content.decode()
    assert "kind-closed" in run_page
    assert f"/console/runs/{claimed.run.id}/closures/{receipt.suspension_id}/" in run_page


@pytest.mark.parametrize(
    ("fields", "status", "message"),
    [
        ({"run_revision": "1"}, 409, "The run moved on"),
        ({"observed_at": "+1h", "expires_at": "+2h"}, 400, 'id="error-observed_at"'),
        ({"proof_digest": "not-a-digest"}, 400, 'id="error-proof_digest"'),
        ({"observed_at": "0001-01-01T00:00:00+01:00"}, 400, 'id="error-observed_at"'),
    ],
    ids=["stale-revision", "proof-not-yet-valid", "malformed-digest", "before-year-one-in-utc"],
)
def test_a_refused_closure_is_a_message_on_the_form_and_writes_nothing(fields, status, message):
    claimed = started()
    now = services.db_now()
    relative = {"+1h": digests.rfc3339(now + timedelta(hours=1)), "+2h": digests.rfc3339(now + timedelta(hours=2))}
    data = {**shown(claimed), **proof(), **{k: relative.get(v, v) for k, v in fields.items()}}
    before = written()
    response = staff("olga", "acme", "operator").post(f"/console/runs/{claimed.run.id}/close", data)
    assert response.status_code == status
    assert message in response.content.decode()
    assert written() == before


def test_a_closure_posted_by_a_non_operator_is_a_message_not_an_error_page():
    claimed = started()
    before = written()
    response = staff("aldo", "acme", "auditor").post(
        f"/console/runs/{claimed.run.id}/close", {**shown(claimed), **proof()}
    )
    assert response.status_code == 403
    assert "operator role" in response.content.decode()
    assert written() == before


def test_the_receipt_page_is_not_found_outside_the_scope():
    claimed = started()
    services.close_run(principal=OPERATOR, run_id=claimed.run.id, request=closure_request(claimed))
    receipt = ClosureReceipt.objects.get()
    url = f"/console/runs/{claimed.run.id}/closures/{receipt.suspension_id}/"
    assert staff("gus", "globex", "operator", "auditor").get(url).status_code == 404
    assert staff("aldo", "acme/support", "auditor").get(url).status_code == 200
