"""Roles from groups in the console (docs/identity.md, "How roles map"): operators only; the same service as the API.

A refused mapping is a form error (400) that writes nothing; every POST that goes through redirects.
"""

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from suspensions.models import RoleChange, RoleMapping
from suspensions.services.role_mappings import sync_roles
from tests.helpers import member

pytestmark = pytest.mark.django_db

PAGE = reverse("console:role_mappings")


def browser(username, grants):
    c = Client()
    c.force_login(member(username, grants, is_staff=True))
    return c


def mappings():
    return sorted(RoleMapping.objects.values_list("group", "scope", "role"))


def test_an_operator_maps_a_group_sees_it_and_the_changes_and_deletes_it():
    c = browser("olga", {"acme": ["operator"], "acme/eu": ["operator"]})
    response = c.post(PAGE, {"group": "eu-approvers", "scope": "acme/eu", "role": "approver"})
    assert response.status_code == 302 and response["Location"] == PAGE
    assert mappings() == [("eu-approvers", "acme/eu", "approver")]
    sync_roles(User.objects.create_user("ann", is_staff=True), ["eu-approvers"], cause="oidc sign-in x ann")
    page = c.get(PAGE).content.decode()
    assert "eu-approvers" in page and 'id="role-changes"' in page and "oidc sign-in x ann" in page
    mapping = RoleMapping.objects.get()
    assert c.post(reverse("console:role_mapping_delete", args=[mapping.pk])).status_code == 302
    assert mappings() == []


@pytest.mark.parametrize(
    "form",
    [
        {"group": "", "scope": "acme", "role": "approver"},
        {"group": "g" * 256, "scope": "acme", "role": "approver"},
        {"group": "g", "scope": "globex", "role": "approver"},
        {"group": "g", "scope": "acme", "role": "engine"},
    ],
)
def test_a_bad_mapping_is_a_form_error_and_nothing_is_written(form):
    c = browser("olga", {"acme": ["operator"]})
    response = c.post(PAGE, form)
    assert response.status_code == 400
    assert 'class="notice notice-error small"' in response.content.decode()
    assert mappings() == [] and RoleChange.objects.count() == 0


def test_a_twin_mapping_is_refused_with_the_services_words():
    c = browser("olga", {"acme": ["operator"]})
    c.post(PAGE, {"group": "g", "scope": "acme", "role": "approver"})
    response = c.post(PAGE, {"group": "g", "scope": "acme", "role": "approver"})
    assert response.status_code == 400 and "already" in response.content.decode()
    assert mappings() == [("g", "acme", "approver")]


def test_a_staff_user_who_is_no_operator_gets_a_403_and_another_tenants_mapping_a_404():
    assert browser("abe", {"acme": ["approver"]}).get(PAGE).status_code == 403
    theirs = RoleMapping(group="g", role="approver", created_by="x", created_at="2026-01-01T00:00:00Z")
    theirs.stamp_scope("globex")
    theirs.save()
    c = browser("olga", {"acme": ["operator"]})
    assert c.post(reverse("console:role_mapping_delete", args=[theirs.pk])).status_code == 404
    assert mappings() == [("g", "globex", "approver")]
    assert "globex" not in c.get(PAGE).content.decode()
