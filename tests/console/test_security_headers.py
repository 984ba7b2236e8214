"""Issue 32: a Content-Security-Policy on every HTML page, and a sign-in that lasts a working day."""

from django.test import Client

from suspensions.middleware import ContentSecurityPolicyMiddleware
from tests.helpers import member


def test_the_console_the_admin_and_the_api_docs_carry_the_policy(db):
    c = Client()
    pages = [c.get("/console/login/"), c.get("/admin/login/"), c.get("/api/docs/"), c.get("/console/nowhere/")]
    assert [p.status_code for p in pages] == [200, 200, 200, 404]
    assert {p["Content-Security-Policy"] for p in pages} == {ContentSecurityPolicyMiddleware.POLICY}
    assert (
        "script-src 'self'" in ContentSecurityPolicyMiddleware.POLICY
        and "unsafe" not in ContentSecurityPolicyMiddleware.POLICY
    )
    # The docs page's start-up script is a file now, not inline.
    assert "<script>" not in pages[2].content.decode() and "<style>" not in pages[2].content.decode()


def test_a_sign_in_lasts_eight_hours_not_two_weeks(db):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    c = Client()
    response = c.post("/console/login/", {"username": "alice", "password": "pw"})
    assert response.status_code == 302
    assert response.cookies["sessionid"]["max-age"] == 8 * 3600
