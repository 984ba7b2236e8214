"""Single sign-on against a real OpenID Provider (docs/identity.md): who signs in, with which roles, and every refusal.

The provider is oidc-provider-mock on a free port (tests/identity/provider.py); the
service side is the Django test client, so each step of the flow can be looked at
and, for the refusals, bent: a forged or replayed state, a wrong nonce, an id_token
of another issuer or audience, an expired one. Each is a clear 400 page that writes nothing.
"""

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from suspensions import oidc
from suspensions.models import Membership, OidcIdentity, RoleChange, RoleMapping
from tests.identity import provider as idp

NEXT = "/console/approvals/"


@pytest.fixture(scope="module")
def issuer():
    with idp.provider() as url:
        yield url


@pytest.fixture
def sso(settings, issuer, db):
    idp.configure(settings, issuer)
    mapping("approvers", "acme", "approver")
    mapping("auditors", "acme/payments", "auditor")
    return issuer


def mapping(group, scope, role):
    row = RoleMapping(group=group, role=role, created_by="test", created_at="2026-01-01T00:00:00Z")
    row.stamp_scope(scope)
    row.save()


def everything() -> dict[str, Any]:
    """What a refused sign-in must leave as it was."""
    return {
        "users": sorted(User.objects.values_list("username", "email", "is_staff", "is_active")),
        "identities": sorted(OidcIdentity.objects.values_list("issuer", "sub", "user_id", "last_seen_at")),
        "memberships": sorted(Membership.objects.values_list("user_id", "scope", "role", "source")),
        "changes": RoleChange.objects.count(),
    }


def start(c: Client) -> str:
    """The provider's authorization URL the sign-in sends the browser to."""
    response = c.get(f"/oidc/authenticate/?next={NEXT}")
    assert response.status_code == 302, response.content
    return str(response["Location"])


def sign_in(c: Client, sub: str) -> Any:
    return c.get(idp.authorize(start(c), sub))


def refused(response: Any, words: str) -> None:
    assert response.status_code == 400, response.content[:500]
    text = response.content.decode()
    assert 'id="sign-in-failed"' in text and words in text, text[:2000]


def test_the_authorization_request_carries_state_nonce_and_a_pkce_challenge(sso):
    params = idp.query(start(Client()))
    assert params["response_type"] == "code" and params["client_id"] == idp.CLIENT_ID
    assert len(params["state"]) >= 32 and len(params["nonce"]) >= 32
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
    assert set(params["scope"].split()) >= {"openid", "email"}


def test_a_first_sign_in_makes_a_person_keyed_by_issuer_and_sub_with_the_mapped_roles(sso):
    idp.person(
        sso,
        "u-alice",
        email="alice@example.com",
        email_verified=True,
        groups=["approvers", "other"],
        preferred_username="alice",
    )
    c = Client()
    response = sign_in(c, "u-alice")
    assert response.status_code == 302 and response["Location"] == NEXT
    identity = OidcIdentity.objects.get(issuer=sso, sub="u-alice")
    user = identity.user
    assert (user.username, user.email, user.is_staff, user.is_superuser) == ("alice", "alice@example.com", True, False)
    assert not user.has_usable_password()
    assert set(Membership.objects.filter(user=user).values_list("scope", "role", "source")) == {
        ("acme", "approver", "provider")
    }
    change = RoleChange.objects.get(user_id=user.pk)
    assert (change.change, change.by, change.cause) == ("added", "oidc", f"oidc sign-in {sso} u-alice")
    assert c.get(NEXT).status_code == 200


def test_the_next_sign_in_finds_the_same_person_by_sub_and_resets_the_roles_from_the_groups(sso):
    idp.person(sso, "u-bob", email="bob@example.com", email_verified=True, groups=["approvers"])
    sign_in(Client(), "u-bob")
    # A new email and other groups at the provider: the same person, other roles.
    idp.person(sso, "u-bob", email="robert@example.com", email_verified=True, groups=["auditors"])
    sign_in(Client(), "u-bob")
    assert OidcIdentity.objects.filter(sub="u-bob").count() == 1
    user = OidcIdentity.objects.get(sub="u-bob").user
    assert set(Membership.objects.filter(user=user).values_list("scope", "role")) == {("acme/payments", "auditor")}
    assert User.objects.filter(oidc_identities__sub="u-bob").count() == 1


def test_an_existing_account_is_linked_by_email_only_when_the_provider_verified_it(sso):
    carol = User.objects.create_user("carol", email="carol@example.com", is_staff=True)
    dave = User.objects.create_user("dave", email="dave@example.com", is_staff=True)
    idp.person(sso, "u-carol", email="Carol@example.com", email_verified=True, groups=[])
    idp.person(sso, "u-dave", email="dave@example.com", email_verified=False, groups=[])
    sign_in(Client(), "u-carol")
    sign_in(Client(), "u-dave")
    assert OidcIdentity.objects.get(sub="u-carol").user == carol
    assert OidcIdentity.objects.get(sub="u-dave").user != dave  # unverified: a new account, never dave's


def test_an_unmapped_group_signs_in_with_no_role(sso):
    idp.person(sso, "u-erin", email="erin@example.com", email_verified=True, groups=["strangers"])
    c = Client()
    sign_in(c, "u-erin")
    user = OidcIdentity.objects.get(sub="u-erin").user
    assert not Membership.objects.filter(user=user).exists()
    assert c.get(NEXT).status_code == 200  # the inbox, empty


def test_a_forged_state_is_refused_and_nothing_written(sso):
    idp.person(sso, "u-frank", groups=["approvers"])
    c = Client()
    callback = idp.authorize(start(c), "u-frank")
    forged = callback.replace(f"state={idp.query(callback)['state']}", "state=forged-state-of-an-attacker")
    before = everything()
    refused(c.get(forged), "state")
    assert everything() == before


def test_a_callback_without_any_sign_in_started_is_refused(sso):
    idp.person(sso, "u-frank", groups=["approvers"])
    callback = idp.authorize(start(Client()), "u-frank")
    before = everything()
    response = Client().get(callback)  # another browser: no state in its session
    assert response.status_code == 400 and 'id="sign-in-failed"' in response.content.decode()
    assert everything() == before


def test_a_replayed_callback_is_refused_and_writes_nothing_more(sso):
    idp.person(sso, "u-gina", groups=["approvers"])
    c = Client()
    callback = idp.authorize(start(c), "u-gina")
    assert c.get(callback).status_code == 302
    before = everything()
    refused(c.get(callback), "state")
    assert everything() == before


def test_a_wrong_nonce_is_refused_and_nothing_written(sso):
    idp.person(sso, "u-hal", groups=["approvers"])
    c = Client()
    callback = idp.authorize(start(c), "u-hal")
    session = c.session
    session["oidc_states"][idp.query(callback)["state"]]["nonce"] = "not-the-nonce-sent"
    session.save()
    before = everything()
    refused(c.get(callback), "Nonce")
    assert everything() == before


def test_an_id_token_from_another_issuer_is_refused_and_nothing_written(sso, monkeypatch):
    idp.person(sso, "u-ivy", groups=["approvers"])
    c = Client()
    callback = idp.authorize(start(c), "u-ivy")
    # The same provider reached by another name signs its tokens as that other issuer.
    real = oidc.discovery()
    other = {**real, "token_endpoint": real["token_endpoint"].replace("localhost", "127.0.0.1")}
    monkeypatch.setattr(oidc, "discovery", lambda: other)
    before = everything()
    refused(c.get(callback), "issuer")
    assert everything() == before


def test_an_id_token_for_another_audience_is_refused_and_nothing_written(sso, settings, monkeypatch):
    idp.person(sso, "u-jay", groups=["approvers"])
    c = Client()
    # The code, and so the id_token the provider gives for it, is another app's ...
    settings.OIDC_CLIENT_ID = settings.OIDC_RP_CLIENT_ID = "another-app"
    callback = idp.authorize(start(c), "u-jay")
    # ... while this service checks every id_token against its own client id.
    check = oidc.ProviderBackend._verify_jws

    def ours(backend: Any, payload: Any, key: Any) -> Any:
        backend.OIDC_RP_CLIENT_ID = idp.CLIENT_ID
        return check(backend, payload, key)

    monkeypatch.setattr(oidc.ProviderBackend, "_verify_jws", ours)
    before = everything()
    refused(c.get(callback), "Audience")
    assert everything() == before


def test_an_expired_id_token_is_refused_and_nothing_written(settings, db):
    with idp.provider(**idp.EXPIRED) as issuer:
        idp.configure(settings, issuer)
        idp.person(issuer, "u-kim", groups=["approvers"])
        c = Client()
        callback = idp.authorize(start(c), "u-kim")
        before = everything()
        refused(c.get(callback), "expired")
        assert everything() == before


def test_passwords_sign_in_superusers_only_when_password_sign_in_is_off(sso, settings):
    settings.PASSWORD_SIGN_IN = False
    User.objects.create_user("lena", password="pw-lena-1", is_staff=True)
    User.objects.create_superuser("root", password="pw-root-1")
    page = Client().get("/console/login/").content.decode()
    assert 'id="sso-sign-in"' in page and "Sign in with Test IdP" in page and "superusers only" in page
    lena = Client()
    assert lena.post("/console/login/", {"username": "lena", "password": "pw-lena-1"}).status_code == 200
    assert lena.get(NEXT).status_code == 302  # still signed out
    root = Client()
    assert root.post("/console/login/", {"username": "root", "password": "pw-root-1"}).status_code == 302
    assert root.get(NEXT).status_code == 200
    admin_page = Client().get("/admin/login/").content.decode()
    assert 'id="sso-sign-in"' in admin_page


def test_without_an_issuer_there_is_no_single_sign_on(db, settings):
    settings.OIDC_ISSUER = ""
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/?code=x&state=y").status_code == 404
    assert 'id="sso-sign-in"' not in Client().get("/console/login/").content.decode()


def test_a_re_check_renews_the_roles_and_a_disabled_person_is_signed_out(sso, settings):
    settings.OIDC_RENEW_SECONDS = 60
    idp.person(sso, "u-max", groups=["approvers"])
    c = Client()
    sign_in(c, "u-max")
    user = OidcIdentity.objects.get(sub="u-max").user
    idp.person(sso, "u-max", groups=["auditors"])
    assert c.get(NEXT).status_code == 200  # not due yet: nothing asked, nothing changed
    assert set(Membership.objects.filter(user=user).values_list("role", flat=True)) == {"approver"}
    age(c, 61)
    assert c.get(NEXT).status_code == 200  # due: asked again, the new groups give the new roles
    assert set(Membership.objects.filter(user=user).values_list("role", flat=True)) == {"auditor"}
    assert RoleChange.objects.filter(user_id=user.pk, cause__startswith="oidc re-check").count() == 2
    idp.disable(sso, "u-max")
    assert c.get(NEXT).status_code == 200  # checked a moment ago: within OIDC_RENEW_SECONDS
    age(c, 61)
    response = c.get(NEXT)
    assert response.status_code == 302 and response["Location"].startswith("/console/login/")
    assert c.get(NEXT).status_code == 302  # the session is gone, not just this request


def age(c: Client, seconds: float) -> None:
    """Move the session's last check `seconds` into the past (no sleeping)."""
    session = c.session
    session[oidc.CHECKED_AT] = time.time() - seconds
    session.save()


def test_the_admin_signs_in_through_the_provider_too(sso):
    idp.person(sso, "u-nora", groups=["approvers"])
    c = Client()
    start_url = c.get("/oidc/authenticate/?next=/admin/")["Location"]
    response = c.get(idp.authorize(start_url, "u-nora"))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert c.get("/admin/").status_code == 200


def test_a_next_outside_the_site_is_not_followed(sso):
    idp.person(sso, "u-olga", groups=[])
    c = Client()
    start_url = c.get("/oidc/authenticate/?next=https://evil.example.com/")["Location"]
    response = c.get(idp.authorize(start_url, "u-olga"))
    assert response.status_code == 302 and not response["Location"].startswith("https://evil")
