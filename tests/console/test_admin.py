"""Django admin (docs/decisions.md, "Trust boundaries"): every model listed and searchable, evidence read-only, tokens
and memberships."""

import re
import uuid
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client, RequestFactory
from django.utils import timezone

from suspensions.models import (
    Admission,
    ApiToken,
    Approval,
    ClosureReceipt,
    Event,
    ExpiryReceipt,
    Membership,
    Run,
    Start,
    Suspension,
)
from suspensions.tokens import hash_token
from tests.helpers import client, member, pause, post, version

READ_ONLY = [Run, Suspension, Approval, Admission, Start, ExpiryReceipt, ClosureReceipt, Event]


@pytest.fixture
def auditor(db):
    c = Client()
    c.force_login(member("audrey", {"acme": ["auditor"]}, is_staff=True))
    return c


@pytest.fixture
def root(db):
    c = Client()
    c.force_login(member("root", is_staff=True, is_superuser=True))
    return c


@pytest.fixture
def started(engine):
    """One run through every evidence table that exists without a sweeper or an operator."""
    s = pause(engine)
    body = {"version": version(s), "results": [{"call_id": "c1", "content": "ok"}]}
    assert post(engine, f"/api/v1/runs/{s['run_id']}/resume", body).status_code == 201
    pause(engine, reason="approval")
    return s


def url(model, suffix=""):
    return f"/admin/suspensions/{model._meta.model_name}/{suffix}"


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_a_staff_auditor_lists_filters_and_searches_every_evidence_model(auditor, started, model):
    assert auditor.get(url(model)).status_code == 200
    # A search term that is no UUID must not break the exact-id searches.
    assert auditor.get(url(model) + "?q=not-a-uuid").status_code == 200
    assert auditor.get(url(model) + f"?q={started['run_id']}").status_code == 200
    admin_class = admin.site._registry[model]
    assert admin_class.list_filter and admin_class.search_fields and admin_class.date_column
    # The date column is filtered by fixed links, not Django's date hierarchy, which reads every row.
    assert not admin_class.date_hierarchy
    since = (timezone.now() - timedelta(days=7)).date().isoformat()
    response = auditor.get(url(model) + f"?{admin_class.date_column}__gte={since}")
    assert response.status_code == 200


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_evidence_and_state_cannot_be_added_changed_or_deleted_even_by_a_superuser(root, started, model):
    request = RequestFactory().get("/admin/")
    request.user = get_user_model().objects.get(username="root")
    admin_class = admin.site._registry[model]
    assert not admin_class.has_add_permission(request)
    assert not admin_class.has_change_permission(request)
    assert not admin_class.has_delete_permission(request)
    assert admin_class.has_view_permission(request)
    assert root.get(url(model, "add/")).status_code == 403


def test_a_run_opens_read_only_and_cannot_be_posted_or_deleted(root, started):
    run = Run.objects.get(pk=started["run_id"])
    change = f"/admin/suspensions/run/{run.pk}/change/"
    html = root.get(change).content.decode()
    assert 'name="_save"' not in html and run.agent_id in html
    assert root.post(change, {"state": "completed"}).status_code == 403
    assert root.post(f"/admin/suspensions/run/{run.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Run.objects.get(pk=run.pk).state == run.state


def test_a_non_staff_user_cannot_open_the_admin(db):
    c = Client()
    c.force_login(member("plain"))
    assert c.get(url(Event)).status_code == 302


def test_an_admin_creates_a_token_and_sees_its_secret_once_in_the_page_not_in_a_cookie(root):
    response = root.post(url(ApiToken, "add/"), {"name": "ci", "scope": "acme/support", "role_set": ["engine", "bus"]})
    assert response.status_code == 200
    token = ApiToken.objects.get(name="ci")
    assert (token.scope, token.scope_l2, token.roles) == ("acme/support", "acme/support", "bus,engine")
    page = response.content.decode()
    secret = re.search(r'<code id="token-secret">(sus_[A-Za-z0-9_-]+)</code>', page).group(1)
    assert hash_token(secret) == token.token_hash
    # The messages cookie is signed, not encrypted: the secret must never travel in it (nor in the session).
    assert "messages" not in response.cookies
    assert not [m for m in get_messages(response.wsgi_request) if secret in str(m)]
    assert secret not in str(dict(root.session.items()))
    assert client(secret).get("/api/v1/runs").status_code == 200
    assert secret not in root.get(url(ApiToken)).content.decode()
    assert secret not in root.get(f"/admin/suspensions/apitoken/{token.pk}/change/").content.decode()


def test_the_token_secret_page_escapes_the_tokens_name_and_links_back_to_the_tokens(root):
    response = root.post(url(ApiToken, "add/"), {"name": "<b>ci</b>", "scope": "acme", "role_set": ["engine"]})
    page = response.content.decode()
    assert "&lt;b&gt;ci&lt;/b&gt;" in page and "<b>ci</b>" not in page
    assert f'href="{url(ApiToken)}"' in page


def test_a_token_with_an_invalid_scope_or_no_role_is_not_created(root):
    response = root.post(url(ApiToken, "add/"), {"name": "bad", "scope": "Not A Scope", "role_set": []})
    assert response.status_code == 200
    assert not ApiToken.objects.filter(name="bad").exists()


def test_revoking_a_token_in_the_admin_shuts_it_out_of_the_api(root, token):
    secret = token("acme", ["engine"], "old")
    old = ApiToken.objects.get(name="old")
    response = root.post(url(ApiToken), {"action": "revoke", "_selected_action": [str(old.pk)]}, follow=True)
    assert "Revoked 1 token." in response.content.decode()
    assert ApiToken.objects.get(pk=old.pk).revoked
    assert client(secret).get("/api/v1/runs").status_code == 401


def test_tokens_cannot_be_deleted_only_revoked(root, token):
    token("acme", ["engine"], "keep")
    old = ApiToken.objects.get(name="keep")
    assert root.post(f"/admin/suspensions/apitoken/{old.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ApiToken.objects.filter(pk=old.pk).exists()


def test_an_admin_grants_a_membership_and_the_scope_columns_are_stamped(root):
    user = member("carol")
    response = root.post(url(Membership, "add/"), {"user": user.pk, "scope": "acme/support/eu", "role": "approver"})
    assert response.status_code == 302
    m = Membership.objects.get(user=user)
    assert (m.scope_l1, m.scope_l2, m.scope_l3, m.role) == ("acme", "acme/support", "acme/support/eu", "approver")


def test_a_membership_with_an_invalid_scope_is_refused(root):
    user = member("dave")
    response = root.post(url(Membership, "add/"), {"user": user.pk, "scope": "../etc", "role": "approver"})
    assert response.status_code == 200
    assert not Membership.objects.filter(user=user).exists()


def test_an_auditor_sees_what_an_approval_asked_pretty_printed_and_escaped(auditor):
    pending = '[{"id": "c1", "name": "refund", "arguments": "{\\"note\\": \\"<script>alert(1)</script>\\"}"}]'
    approval = Approval(
        suspension_id=uuid.uuid4(),
        run_id=uuid.uuid4(),
        agent_id="billing-agent",
        pending=pending,
        requested_by="token:engine",
        expires_at=timezone.now(),
        created_at=timezone.now(),
    )
    approval.stamp_scope("acme")
    approval.save(force_insert=True)
    html = auditor.get(f"/admin/suspensions/approval/{approval.pk}/change/").content.decode()
    assert "billing-agent" in html and "token:engine" in html and "Expires at" in html
    assert "\n    &quot;name&quot;: &quot;refund&quot;," in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html


def test_approvals_are_searchable_by_agent(auditor):
    approval = Approval(
        suspension_id=uuid.uuid4(), run_id=uuid.uuid4(), agent_id="billing-agent", created_at=timezone.now()
    )
    approval.stamp_scope("acme")
    approval.save(force_insert=True)
    response = auditor.get(url(Approval) + "?q=billing-agent")
    assert [a.pk for a in response.context["cl"].result_list] == [approval.pk]
