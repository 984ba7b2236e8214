"""The console's legal holds page (docs/auditors.md, "Retention and legal holds"): auditors and operators create and
release holds through the same service as the API; a refused form writes nothing."""

import pytest
from django.test import Client

from suspensions.models import AuditPrune, LegalHold
from tests.factories import RunFactory
from tests.helpers import member

pytestmark = pytest.mark.django_db


def logged_in(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def auditor():
    return logged_in(member("audrey", {"acme": ["auditor"]}, is_staff=True))


def test_an_auditor_holds_a_scope_and_a_run_sees_them_and_releases_one(auditor):
    run = RunFactory(scope="acme")
    made = auditor.post("/console/legal-holds/", {"scope": "acme/legal", "reason": "case 12"})
    assert made.status_code == 302
    assert auditor.post("/console/legal-holds/", {"run": str(run.id), "reason": "incident"}).status_code == 302
    page = auditor.get("/console/legal-holds/").content.decode()
    assert "case 12" in page and str(run.id) in page and "Nothing pruned yet" in page
    first = LegalHold.objects.get(run_id__isnull=True)
    assert auditor.post(f"/console/legal-holds/{first.id}/release").status_code == 302
    first.refresh_from_db()
    assert first.released_by and first.released_at
    AuditPrune.objects.create(at=first.released_at, before=first.released_at, events=4, runs=2, held_runs=1)
    assert "4 events of 2 runs" in auditor.get("/console/legal-holds/").content.decode()


@pytest.mark.parametrize(
    "form",
    [
        {"reason": "neither"},
        {"scope": "acme", "run": "01a25217-c0e0-742b-a6ff-f6d4663207e0", "reason": "both"},
        {"scope": "globex", "reason": "not mine"},
        {"scope": "acme", "reason": ""},
        {"run": "not-a-uuid", "reason": "x"},
    ],
)
def test_a_refused_hold_is_a_form_error_and_writes_nothing(auditor, form):
    answer = auditor.post("/console/legal-holds/", form)
    assert answer.status_code == 400
    assert LegalHold.objects.count() == 0


def test_a_staff_user_neither_auditor_nor_operator_is_refused():
    approver = logged_in(member("ann", {"acme": ["approver"]}, is_staff=True))
    answer = approver.get("/console/legal-holds/")
    assert answer.status_code == 403
    assert approver.post("/console/legal-holds/", {"scope": "acme", "reason": "x"}).status_code == 403
    assert LegalHold.objects.count() == 0
