"""A leaver is out at once (docs/identity.md, "Provisioning (SCIM) and leavers"): after the SCIM call that deactivates
or deletes a person, in every form Okta, Entra and RFC 7644 use, the very next request by their console session,
their API token, their emailed link or their Slack press is refused, and nothing more is sent to them."""

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from suspensions import email_links, selectors
from suspensions.clock import db_now
from suspensions.models import (
    Approval,
    Membership,
    MessageStatus,
    Notification,
    NotificationChannel,
    NotificationKind,
    Run,
    ScimUser,
    SlackIdentity,
)
from suspensions.slack.interactions import NOT_ALLOWED
from suspensions.tokens import create_token
from tests.helpers import client as api_client
from tests.slack.conftest import SECRET, answers_in_process, posted, request_approval, slack  # noqa: F401
from tests.slack_fake import button_press, post_interaction

from . import payloads

pytestmark = pytest.mark.django_db


def out_by_put(scim_id):
    return "put", f"Users/{scim_id}", {**payloads.OKTA_CREATE_USER, "userName": "alice", "active": False}


FORMS = {
    "okta-patch": lambda i: ("patch", f"Users/{i}", payloads.OKTA_DEACTIVATE),
    "entra-patch": lambda i: ("patch", f"Users/{i}", payloads.ENTRA_DISABLE),
    "entra-patch-string": lambda i: ("patch", f"Users/{i}", payloads.ENTRA_DISABLE_AS_STRING),
    "rfc-patch": lambda i: ("patch", f"Users/{i}", payloads.rfc_deactivate()),
    "put": out_by_put,
    "delete": lambda i: ("delete", f"Users/{i}", None),
}


def provisioned_approver(provisioner):
    """alice, created by SCIM, approver in acme (as a role mapping or an operator would make her), linked in Slack."""
    body = {
        **payloads.OKTA_CREATE_USER,
        "userName": "alice",
        "emails": [{"value": "alice@example.com", "primary": True}],
    }
    scim_id = provisioner.call("post", "Users", body).json()["id"]
    alice = ScimUser.objects.get(scim_id=scim_id).user
    membership = Membership(user=alice, role="approver")
    membership.stamp_scope("acme")
    membership.save()
    SlackIdentity.objects.create(user=alice, slack_user_id="UALICE", linked_by="test")
    return alice, scim_id


def email_link_path(alice, approval):
    revision = Run.objects.get(pk=approval.run_id).revision
    links = email_links.links(
        user_id=alice.pk,
        approval_id=approval.pk,
        run_id=approval.run_id,
        revision=revision,
        deadline=approval.expires_at,
        now=timezone.now(),
    )
    return links["approve"].split("://", 1)[1].split("/", 1)[1]


def waiting_email(alice, approval):
    now = db_now()
    row = Notification(
        approval_id=approval.pk,
        run_id=approval.run_id,
        channel=NotificationChannel.EMAIL,
        kind=NotificationKind.REQUEST,
        recipient=alice.email,
        user=alice,
        next_attempt_at=now,
        created_at=now,
    )
    row.stamp_scope(approval.scope)
    row.save(force_insert=True)
    return row


@pytest.mark.parametrize("form", FORMS)
def test_after_the_scim_call_every_door_of_the_leaver_is_refused(provisioner, client, slack, form):  # noqa: F811
    alice, scim_id = provisioned_approver(provisioner)
    approval = request_approval()
    message = posted(slack, approval)
    console = Client()
    console.force_login(alice)
    _, secret = create_token(scope="acme", roles=["approver"], name="alice-cli", user=alice)
    link = "/" + email_link_path(alice, approval)
    email = waiting_email(alice, approval)
    # Before: every door is open.
    assert console.get(reverse("console:inbox")).status_code == 200
    assert api_client(secret).get("/api/v1/approvals").status_code == 200
    assert Client().get(link).status_code == 200
    assert alice in selectors.approvers_covering(approval.scope)

    method, path, body = FORMS[form](scim_id)
    assert provisioner.call(method, path, body).status_code in (200, 204)

    assert console.get(reverse("console:inbox")).status_code == 302  # back to the sign-in
    assert not Session.objects.filter(expire_date__gt=timezone.now()).exists()
    assert api_client(secret).get("/api/v1/approvals").status_code == 401
    assert Client().get(link).status_code == 403
    pressed = post_interaction(client, button_press(message, "approve", "UALICE"), SECRET)
    assert pressed.status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    assert [c.args["text"] for c in slack.of("chat.postEphemeral")] == [NOT_ALLOWED]
    assert alice not in selectors.approvers_covering(approval.scope)
    email.refresh_from_db()
    assert (email.status, email.last_error) == (MessageStatus.FAILED, "not sent: the recipient was deprovisioned")


def test_a_reactivated_person_signs_in_again_and_their_token_works_again(provisioner):
    alice, scim_id = provisioned_approver(provisioner)
    _, secret = create_token(scope="acme", roles=["approver"], name="alice-cli", user=alice)
    provisioner.call("patch", f"Users/{scim_id}", payloads.OKTA_DEACTIVATE)

    back = {"schemas": [payloads.PATCH_OP], "Operations": [{"op": "replace", "value": {"active": True}}]}
    assert provisioner.call("patch", f"Users/{scim_id}", back).status_code == 200

    assert api_client(secret).get("/api/v1/approvals").status_code == 200
    console = Client()
    console.force_login(alice)
    assert console.get(reverse("console:inbox")).status_code == 200


def test_a_refused_deactivation_ends_nothing(provisioner):
    alice, scim_id = provisioned_approver(provisioner)
    console = Client()
    console.force_login(alice)
    bad = {"schemas": [payloads.PATCH_OP], "Operations": [{"op": "replace", "path": "active", "value": "no"}]}

    assert provisioner.call("patch", f"Users/{scim_id}", bad).status_code == 400

    assert console.get(reverse("console:inbox")).status_code == 200
    alice.refresh_from_db()
    assert alice.is_active is True


@pytest.mark.django_db(transaction=True)
def test_over_http_the_leavers_token_is_refused_on_the_request_right_after_the_scim_call(live_server):
    import httpx

    from suspensions.models import Role
    from tests.helpers import member

    alice = member("alice", {"acme": ["approver"]}, is_staff=True)
    _, provider = create_token(scope="acme", roles=[Role.PROVISIONER], name="entra")
    _, secret = create_token(scope="acme", roles=["approver"], name="alice-cli", user=alice)
    with httpx.Client(base_url=live_server.url, timeout=10) as http:
        scim = {"Authorization": f"Bearer {provider}", "Content-Type": "application/scim+json"}
        mine = {"Authorization": f"Bearer {secret}"}
        adopted = http.post("/scim/v2/Users", headers=scim, json={**payloads.ENTRA_CREATE_USER, "userName": "alice"})
        assert http.get("/api/v1/approvals", headers=mine).status_code == 200

        out = http.patch(f"/scim/v2/Users/{adopted.json()['id']}", headers=scim, json=payloads.ENTRA_DISABLE)
        refused = http.get("/api/v1/approvals", headers=mine)

    assert (adopted.status_code, out.status_code, out.json()["active"]) == (201, 200, False)
    assert refused.status_code == 401
