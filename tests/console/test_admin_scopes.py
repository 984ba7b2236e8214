"""Django admin trust boundary (docs/decisions.md, "Trust boundaries"): every registered model is scoped, secrets never
shown.

The models under test come from `admin.site._registry`, so a newly registered
model is covered without editing this file: it fails here until it has a row
builder (or is listed as superuser-only).
"""

import hashlib
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group, Permission, User
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from suspensions.admin.base import ScopedAdmin
from suspensions.models import (
    Admission,
    ApiToken,
    Approval,
    ApprovalFloor,
    ApprovalVote,
    ClosureReceipt,
    Delegation,
    DeliveryAttempt,
    EarlyResult,
    Event,
    ExpiryReceipt,
    FlowWait,
    LegalHold,
    Membership,
    Notification,
    NotificationRoute,
    OidcIdentity,
    OutboxEvent,
    RoleChange,
    RoleMapping,
    Run,
    ScimGroup,
    ScimUser,
    SlackChannel,
    SlackIdentity,
    Start,
    Suspension,
    WebhookEndpoint,
    WebhookMessage,
)
from suspensions.services.webhooks import new_secret
from suspensions.tokens import create_token
from tests.helpers import member

REGISTERED = list(admin.site._registry)
# Users, groups and Slack identities carry no scope: only superusers see them (a staff user
# allowed to edit users could make itself a superuser; one linking Slack ids could act as someone else).
SUPERUSER_ONLY = [User, Group, SlackIdentity, SlackChannel, OidcIdentity, ScimUser, ScimGroup]
SCOPED = [m for m in REGISTERED if m not in SUPERUSER_ONLY]


def name(model: Any) -> str:
    return model.__name__


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stamped(model: Any, scope: str, **fields: Any) -> Any:
    row = model(**fields)
    row.stamp_scope(scope)
    row.save(force_insert=True)
    return row


def ids() -> dict[str, uuid.UUID]:
    return {"run_id": uuid.uuid4(), "suspension_id": uuid.uuid4()}


def build_run(scope: str) -> Run:
    now = timezone.now()
    return stamped(Run, scope, agent_id=f"agent-{scope}", created_at=now, updated_at=now)


def build_suspension(scope: str) -> Suspension:
    now = timezone.now()
    return stamped(
        Suspension,
        scope,
        run=build_run(scope),
        reason="approval",
        pending="[]",
        continuation="{}",
        reply_with=f"reply-{scope}",
        deadline=now,
        created_at=now,
    )


def build_approval(scope: str) -> Approval:
    return stamped(
        Approval,
        scope,
        suspension_id=uuid.uuid4(),
        run_id=uuid.uuid4(),
        agent_id=f"agent-{scope}",
        pending='[{"id": "c1", "name": "refund", "arguments": "{\\"amount\\": 900}"}]',
        requested_by=f"token:engine-{scope}",
        expires_at=timezone.now(),
        created_at=timezone.now(),
    )


def build_admission(scope: str) -> Admission:
    return stamped(
        Admission,
        scope,
        **ids(),
        source="one_shot",
        input="{}",
        request_digest=digest(f"request-{scope}"),
        suspension_digest=digest(f"suspension-{scope}"),
        version_revision=2,
        claimed_revision=2,
        actor=f"token:engine-{scope}",
        admitted_at=timezone.now(),
    )


def build_start(scope: str) -> Start:
    return stamped(
        Start,
        scope,
        **ids(),
        admission_id=uuid.uuid4(),
        run_revision=3,
        request_digest=digest(f"request-{scope}"),
        digest=digest(f"start-{scope}"),
        actor=f"token:engine-{scope}",
        started_at=timezone.now(),
    )


def build_expiry(scope: str) -> ExpiryReceipt:
    return stamped(
        ExpiryReceipt,
        scope,
        **ids(),
        request_digest=digest(f"request-{scope}"),
        run_revision=3,
        digest=digest(f"expiry-{scope}"),
        expired_at=timezone.now(),
    )


def build_closure(scope: str) -> ClosureReceipt:
    return stamped(
        ClosureReceipt,
        scope,
        **ids(),
        request="{}",
        request_digest=digest(f"request-{scope}"),
        run_revision=4,
        actor=f"user:operator-{scope}",
        digest=digest(f"closure-{scope}"),
        closed_at=timezone.now(),
    )


def build_early_result(scope: str) -> EarlyResult:
    return stamped(
        EarlyResult,
        scope,
        run_id=uuid.uuid4(),
        call_id=f"call-{scope}",
        content="1",
        digest=digest(f"early-{scope}"),
        created_at=timezone.now(),
        expires_at=timezone.now(),
    )


def build_event(scope: str) -> Event:
    return stamped(
        Event,
        scope,
        run_id=uuid.uuid4(),
        kind="registered",
        actor=f"token:engine-{scope}",
        revision=1,
        at=timezone.now(),
    )


def build_flow_wait(scope: str) -> FlowWait:
    return stamped(
        FlowWait,
        scope,
        **ids(),
        store_key=f"key-{scope}-{uuid.uuid4().hex[:8]}",
        correlation_id=f"corr-{scope}",
        nonce=uuid.uuid4().hex,
        pack="pack",
        flow="flow",
        decision_token_hash=digest(f"decision-{scope}"),
        run_revision=2,
        created_at=timezone.now(),
    )


def build_token(scope: str) -> ApiToken:
    return create_token(scope=scope, roles=["auditor"], name=f"token-{scope}")[0]


def build_membership(scope: str) -> Membership:
    return stamped(Membership, scope, user=member(f"holder-{scope}-{uuid.uuid4().hex[:8]}"), role="auditor")


def build_webhook(scope: str) -> WebhookEndpoint:
    return stamped(
        WebhookEndpoint,
        scope,
        url=f"https://hooks.example.com/{scope}",
        secret=new_secret(),
        previous_secret=new_secret(),
        previous_secret_expires_at=timezone.now(),
        created_by=f"token:ops-{scope}",
        created_at=timezone.now(),
    )


def build_delegation(scope: str) -> Delegation:
    tag = uuid.uuid4().hex[:8]
    now = timezone.now()
    return stamped(
        Delegation,
        scope,
        from_user=member(f"away-{tag}"),
        to_user=member(f"stand-in-{tag}"),
        starts_at=now,
        ends_at=now + timedelta(days=1),
        created_by=f"user:away-{tag}",
        created_at=now,
    )


def build_floor(scope: str) -> ApprovalFloor:
    # One floor per scope: a second row asked of the same scope goes one level below it, still inside it.
    if ApprovalFloor.objects.filter(scope=scope).exists():
        scope = f"{scope}/f{uuid.uuid4().hex[:8]}"
    now = timezone.now()
    return stamped(
        ApprovalFloor,
        scope,
        quorum=2,
        on_expiry=["expire"],
        created_by=f"token:ops-{scope}",
        created_at=now,
        updated_by=f"token:ops-{scope}",
        updated_at=now,
    )


def build_outbox(scope: str) -> OutboxEvent:
    return stamped(OutboxEvent, scope, run_id=uuid.uuid4(), type="run.finished", created_at=timezone.now())


def build_message(scope: str) -> WebhookMessage:
    now = timezone.now()
    message = stamped(
        WebhookMessage,
        scope,
        endpoint=build_webhook(scope),
        event_id=build_outbox(scope).id,
        run_id=uuid.uuid4(),
        type="run.finished",
        body=f'{{"type": "run.finished", "data": {{"scope": "{scope}"}}}}',
        status="failed",
        attempts=1,
        next_attempt_at=now,
        created_at=now,
    )
    DeliveryAttempt.objects.create(message=message, number=1, at=now, status_code=503, duration_ms=40)
    return message


def build_vote(scope: str) -> ApprovalVote:
    return stamped(
        ApprovalVote,
        scope,
        suspension_id=uuid.uuid4(),
        run_id=uuid.uuid4(),
        voter=f"token:approver-{scope}",
        voter_key=f"token:approver-{scope}",
        calls="[]",
        digest="0" * 64,
        cast_at=timezone.now(),
    )


def build_route(scope: str) -> NotificationRoute:
    return stamped(
        NotificationRoute,
        scope,
        kind="email",
        target=f"oncall@{scope.replace('/', '-')}.example.com",
        created_by=f"token:ops-{scope}",
        created_at=timezone.now(),
    )


def build_notification(scope: str) -> Notification:
    now = timezone.now()
    return stamped(
        Notification,
        scope,
        approval_id=uuid.uuid4(),
        run_id=uuid.uuid4(),
        channel="email",
        kind="request",
        recipient=f"approver@{scope.replace('/', '-')}.example.com",
        status="failed",
        attempts=3,
        last_error="SMTPServerDisconnected: gone",
        next_attempt_at=now,
        created_at=now,
    )


def build_role_mapping(scope: str) -> RoleMapping:
    return stamped(
        RoleMapping,
        scope,
        group=f"approvers-{uuid.uuid4().hex[:8]}",
        role="approver",
        created_by="token:ops",
        created_at=timezone.now(),
    )


def build_role_change(scope: str) -> RoleChange:
    return stamped(
        RoleChange,
        scope,
        user_id=1,
        username=f"person-{scope.replace('/', '-')}",
        role="approver",
        change="added",
        by="identity provider",
        cause="oidc sign-in",
        at=timezone.now(),
    )


def build_hold(scope: str) -> LegalHold:
    return stamped(LegalHold, scope, reason=f"case of {scope}", created_by="token:ann", created_at=timezone.now())


BUILDERS: dict[Any, Callable[[str], Any]] = {
    Run: build_run,
    Suspension: build_suspension,
    Approval: build_approval,
    ApprovalVote: build_vote,
    Admission: build_admission,
    Start: build_start,
    ExpiryReceipt: build_expiry,
    ClosureReceipt: build_closure,
    EarlyResult: build_early_result,
    Event: build_event,
    FlowWait: build_flow_wait,
    ApiToken: build_token,
    Membership: build_membership,
    WebhookEndpoint: build_webhook,
    ApprovalFloor: build_floor,
    Delegation: build_delegation,
    WebhookMessage: build_message,
    OutboxEvent: build_outbox,
    NotificationRoute: build_route,
    Notification: build_notification,
    RoleMapping: build_role_mapping,
    RoleChange: build_role_change,
    LegalHold: build_hold,
}


def build(model: Any, scope: str) -> Any:
    if model not in BUILDERS:
        pytest.fail(
            f"{model._meta.label} is registered in the Django admin but tests/console/test_admin_scopes.py has no row "
            "builder for it: add one to BUILDERS (or to SUPERUSER_ONLY if it has no scope)."
        )
    return BUILDERS[model](scope)


def changelist(model: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change(row: Any) -> str:
    opts = row._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(row.pk)])


def listed(c: Client, model: Any, query: str = "") -> list[Any]:
    response = c.get(changelist(model) + query)
    assert response.status_code == 200, response.content[:500]
    return [row.pk for row in response.context["cl"].result_list]


def logged_in(user: Any) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def acme_staff(db: None) -> Client:
    return logged_in(member("ann", {"acme": ["approver"]}, is_staff=True))


@pytest.fixture
def root(db: None) -> Client:
    return logged_in(member("root", is_staff=True, is_superuser=True))


def test_every_registered_model_has_a_row_builder_or_is_superuser_only():
    missing = [m._meta.label for m in REGISTERED if m not in BUILDERS and m not in SUPERUSER_ONLY]
    assert not missing, (
        f"registered in the admin without a row builder in tests/console/test_admin_scopes.py: {missing}"
    )


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_every_scoped_model_admin_derives_from_the_shared_scoped_base(model):
    assert isinstance(admin.site._registry[model], ScopedAdmin)


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_a_staff_member_of_one_scope_lists_its_rows_and_not_another_tenants(acme_staff, model):
    mine, theirs = build(model, "acme"), build(model, "globex")
    shown = listed(acme_staff, model)
    assert mine.pk in shown and theirs.pk not in shown
    html = acme_staff.get(changelist(model)).content.decode()
    assert change(theirs) not in html and "globex" not in html


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_the_change_page_of_another_tenants_row_is_not_served(acme_staff, model):
    mine, theirs = build(model, "acme"), build(model, "globex")
    assert "acme" in acme_staff.get(change(mine)).content.decode()
    response = acme_staff.get(change(theirs))
    # Django 5.2 answers a missing (here: hidden) object with a redirect to the index and a warning.
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")
    page = acme_staff.get(response["Location"]).content.decode()
    assert "doesn’t exist" in page and "globex" not in page
    history = acme_staff.get(change(theirs).replace("/change/", "/history/"))
    assert history.status_code == 302 and "globex" not in acme_staff.get(history["Location"]).content.decode()


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_a_staff_user_without_membership_sees_no_rows(db, model):
    build(model, "acme")
    build(model, "globex")
    assert listed(logged_in(member("nobody", is_staff=True)), model) == []


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_a_superuser_sees_the_rows_of_every_scope(root, model):
    mine, theirs = build(model, "acme"), build(model, "globex")
    assert {mine.pk, theirs.pk} <= set(listed(root, model))
    assert root.get(change(theirs)).status_code == 200


@pytest.mark.parametrize("model", REGISTERED, ids=name)
def test_a_member_who_is_not_staff_is_sent_to_the_login_page(db, model):
    c = logged_in(member("plain", {"acme": ["operator"]}))
    response = c.get(changelist(model))
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("model", SCOPED, ids=name)
def test_the_admin_queryset_is_empty_for_an_inactive_or_non_staff_user(db, model):
    build(model, "acme")
    request = RequestFactory().get("/admin/")
    request.user = member("gone", {"acme": ["operator"]}, is_staff=True, is_active=False)
    assert not admin.site._registry[model].get_queryset(request).exists()
    request.user = member("plain", {"acme": ["operator"]})
    assert not admin.site._registry[model].get_queryset(request).exists()


def test_a_member_of_a_project_sees_its_teams_but_not_its_workspace_or_sibling_projects(db):
    c = logged_in(member("pam", {"acme/support": ["auditor"]}, is_staff=True))
    team, project = build_run("acme/support/eu"), build_run("acme/support")
    workspace, sibling = build_run("acme"), build_run("acme/sales")
    shown = listed(c, Run)
    assert {team.pk, project.pk} <= set(shown) and not {workspace.pk, sibling.pk} & set(shown)


@pytest.mark.parametrize("model", SUPERUSER_ONLY, ids=name)
def test_users_and_groups_are_shown_to_superusers_only_even_with_model_permissions(root, model):
    staff = member("ann", {"acme": ["operator"]}, is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="auth"))
    c = logged_in(staff)
    assert c.get(changelist(model)).status_code == 403
    assert c.get(changelist(model) + "add/").status_code == 403
    assert root.get(changelist(model)).status_code == 200


# Writes only where the role allows: tokens and memberships are the superusers'.


def test_a_staff_operator_views_tokens_of_its_scope_but_cannot_create_or_revoke_them(db):
    c = logged_in(member("otto", {"acme": ["operator"]}, is_staff=True))
    token = build_token("acme")
    assert c.get(change(token)).status_code == 200
    assert c.get(changelist(ApiToken) + "add/").status_code == 403
    add = {"name": "mine", "scope": "acme", "role_set": ["engine"]}
    assert c.post(changelist(ApiToken) + "add/", add).status_code == 403
    c.post(changelist(ApiToken), {"action": "revoke", "_selected_action": [str(token.pk)]})
    assert not ApiToken.objects.filter(name="mine").exists() and not ApiToken.objects.get(pk=token.pk).revoked


def test_a_staff_operator_cannot_grant_change_or_remove_memberships(db):
    operator = member("otto", {"acme": ["operator"]}, is_staff=True)
    c = logged_in(operator)
    other = build_membership("acme")
    grant = {"user": operator.pk, "scope": "globex", "role": "operator"}
    assert c.post(changelist(Membership) + "add/", grant).status_code == 403
    assert c.post(change(other), {"user": operator.pk, "scope": "acme", "role": "operator"}).status_code == 403
    assert c.post(change(other).replace("/change/", "/delete/"), {"post": "yes"}).status_code == 403
    assert not Membership.objects.filter(scope="globex").exists()
    assert Membership.objects.get(pk=other.pk).user_id == other.user_id


def test_a_superuser_can_remove_a_membership(root):
    m = build_membership("acme")
    assert root.post(change(m).replace("/change/", "/delete/"), {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(pk=m.pk).exists()


# Secret material is never displayed, searched or filterable.


def test_no_admin_page_shows_a_token_hash_a_decision_token_hash_or_a_webhook_secret(root):
    token, wait, hook = build_token("acme"), build_flow_wait("acme"), build_webhook("acme")
    secrets = [token.token_hash, wait.decision_token_hash, hook.secret, hook.previous_secret]
    # Their base64 without the prefix too: a page must not show the key under another label.
    secrets += [hook.secret.removeprefix("whsec_"), hook.previous_secret.removeprefix("whsec_")]
    pages = [
        changelist(ApiToken),
        changelist(FlowWait),
        changelist(WebhookEndpoint),
        change(token),
        change(wait),
        change(hook),
        change(token).replace("/change/", "/history/"),
        change(wait).replace("/change/", "/history/"),
        change(hook).replace("/change/", "/history/"),
    ]
    for page in pages:
        html = root.get(page).content.decode()
        assert token.name in html or wait.store_key in html or hook.url in html
        assert not [s for s in secrets if s in html], page


def test_searching_or_filtering_by_a_secret_finds_nothing(root):
    token, wait, hook = build_token("acme"), build_flow_wait("acme"), build_webhook("acme")
    assert listed(root, ApiToken, f"?q={token.token_hash}") == []
    assert listed(root, FlowWait, f"?q={wait.decision_token_hash}") == []
    assert listed(root, WebhookEndpoint, f"?q={hook.secret}") == []
    # A filter on the hash would be an oracle (one prefix at a time): refused as a suspicious lookup.
    assert root.get(changelist(ApiToken) + f"?token_hash__startswith={token.token_hash[:1]}").status_code == 400
    assert root.get(changelist(FlowWait) + f"?decision_token_hash={wait.decision_token_hash}").status_code == 400
    assert root.get(changelist(WebhookEndpoint) + f"?secret__startswith={hook.secret[:7]}").status_code == 400
    assert root.get(changelist(WebhookEndpoint) + f"?previous_secret={hook.previous_secret}").status_code == 400


# Search by id works with and without hyphens, in either case.

UUID_PK = [m for m in SCOPED if m._meta.pk.get_internal_type() == "UUIDField"]


@pytest.mark.parametrize("model", UUID_PK, ids=name)
@pytest.mark.parametrize("spelling", [str, lambda u: u.hex, lambda u: str(u).upper()], ids=["hyphens", "hex", "upper"])
def test_searching_a_full_uuid_finds_the_row_by_its_id(acme_staff, model, spelling):
    mine, other = build(model, "acme"), build(model, "acme")
    assert listed(acme_staff, model, f"?q={spelling(mine.pk)}") == [mine.pk]
    assert other.pk != mine.pk


def test_searching_a_run_id_finds_its_suspension_and_events(acme_staff):
    s = build_suspension("acme")
    event = stamped(Event, "acme", run_id=s.run_id, kind="suspended", actor="x", revision=2, at=timezone.now())
    build_event("acme")
    assert listed(acme_staff, Suspension, f"?q={s.run_id.hex}") == [s.pk]
    assert listed(acme_staff, Event, f"?q={s.run_id}") == [event.pk]


def test_a_uuid_search_stays_inside_the_members_scope(acme_staff):
    theirs = build_run("globex")
    assert listed(acme_staff, Run, f"?q={theirs.pk}") == []
