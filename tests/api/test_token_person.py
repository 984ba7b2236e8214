"""Issue 32 item 4: a token acts for its user only while that user is active, and staff for the people's roles."""

from django.contrib.auth import get_user_model
from django.test import Client

from suspensions.models import ApiToken, Run
from suspensions.tokens import create_token
from tests.helpers import client, pause, post, refused, register, version


def person(name, **flags):
    return get_user_model().objects.create_user(name, password="pw", **{"is_staff": True, **flags})


def decide(c, s):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})


def test_a_deactivated_users_token_no_longer_decides_nor_does_anything_else(engine):
    ian = person("ian")
    _, secret = create_token(scope="acme", roles=["approver", "engine"], name="ian", user=ian)
    s = pause(engine, reason="approval")
    get_user_model().objects.filter(pk=ian.pk).update(is_active=False)
    refused(lambda: decide(client(secret), s), 401, "unauthenticated")
    refused(lambda: post(client(secret), "/api/v1/runs", {"agent_id": "a"}), 401, "unauthenticated")
    assert Run.objects.get(pk=s["run_id"]).state == "paused"
    # Active again, the same token works again: deactivation is a switch, not a revocation.
    get_user_model().objects.filter(pk=ian.pk).update(is_active=True)
    assert decide(client(secret), s).status_code == 201


def test_a_token_of_a_user_without_staff_status_keeps_its_machine_roles_only(engine):
    nina = person("nina", is_staff=False)
    _, secret = create_token(scope="acme", roles=["approver", "engine"], name="nina", user=nina)
    s = pause(engine, reason="approval")
    refused(lambda: decide(client(secret), s), 403, "forbidden")
    assert register(client(secret))["state"] == "running"
    get_user_model().objects.filter(pk=nina.pk).update(is_staff=True)
    assert decide(client(secret), s).status_code == 201


def test_a_token_linked_to_no_one_is_unaffected(engine, token):
    s = pause(engine, reason="approval")
    assert decide(client(token("acme", ["approver"], "desk")), s).status_code == 201


def test_the_admin_says_what_the_users_status_does_to_the_token(db):
    root = Client()
    root.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    ian, nina = person("ian", is_active=False), person("nina", is_staff=False)
    made = {
        "ian": create_token(scope="acme", roles=["approver"], name="ian", user=ian)[0],
        "nina": create_token(scope="acme", roles=["approver", "engine"], name="nina", user=nina)[0],
    }
    page = root.get(f"/admin/suspensions/apitoken/{made['ian'].pk}/change/").content.decode()
    assert "ian, who is inactive: the token is refused (401) until they are active again" in page
    page = root.get(f"/admin/suspensions/apitoken/{made['nina'].pk}/change/").content.decode()
    assert "nina, who is not staff: the roles of people (approver) do not count" in page
    listing = root.get("/admin/suspensions/apitoken/").content.decode()
    assert listing.count("who is inactive") == 1 and ApiToken.objects.count() == 2
