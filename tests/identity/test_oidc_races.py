"""Two first sign-ins of one person at once (docs/identity.md, "Sign-in settings"): one account, one identity, one
set of roles, and both browsers signed in; real concurrent connections, a real provider."""

import threading

import pytest
from django.db import connection
from django.test import Client

from suspensions.models import Membership, OidcIdentity, RoleChange, RoleMapping
from tests.identity import provider as idp


@pytest.fixture(scope="module")
def issuer():
    with idp.provider() as url:
        yield url


@pytest.mark.django_db(transaction=True)
def test_two_first_sign_ins_of_one_subject_at_once_make_one_person(settings, issuer):
    idp.configure(settings, issuer)
    row = RoleMapping(group="approvers", role="approver", created_by="test", created_at="2026-01-01T00:00:00Z")
    row.stamp_scope("acme")
    row.save()
    idp.person(issuer, "u-twin", email="twin@example.com", email_verified=True, groups=["approvers"])
    browsers = [Client(), Client()]
    callbacks = [idp.authorize(c.get("/oidc/authenticate/")["Location"], "u-twin") for c in browsers]
    barrier = threading.Barrier(2)
    answers: list[object] = []

    def finish(c: Client, callback: str) -> None:
        try:
            barrier.wait()
            answers.append(c.get(callback).status_code)
        except Exception as exc:  # noqa: BLE001 - shown by the assert below
            answers.append(repr(exc)[:300])
        finally:
            connection.close()

    threads = [threading.Thread(target=finish, args=pair) for pair in zip(browsers, callbacks, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [302, 302]
    identity = OidcIdentity.objects.get(sub="u-twin")
    assert OidcIdentity.objects.count() == 1
    assert list(Membership.objects.values_list("user_id", "scope", "role")) == [(identity.user_id, "acme", "approver")]
    assert RoleChange.objects.count() == 1
