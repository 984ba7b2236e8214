"""SCIM Users (docs/identity.md, "Provisioning (SCIM) and leavers"): created, found, changed and deleted as Okta and
Entra do it; userName is the username; bad bodies are SCIM errors that write nothing."""

import pytest
from django.contrib.auth import get_user_model

from suspensions.models import ScimUser
from tests.helpers import member

from . import payloads

pytestmark = pytest.mark.django_db
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def people():
    users = get_user_model().objects.order_by("username")
    return {
        "users": list(users.values_list("username", "email", "first_name", "last_name", "is_active", "is_staff")),
        "scim": sorted(ScimUser.objects.values_list("scim_id", "external_id", "user__username")),
    }


def test_okta_creates_a_person_whose_username_is_the_scim_username(provisioner):
    response = provisioner.call("post", "Users", payloads.OKTA_CREATE_USER)

    assert response.status_code == 201, response.content
    body = response.json()
    user = get_user_model().objects.get(username="test.user@okta.local")
    assert (user.email, user.first_name, user.last_name, user.is_active) == (
        "test.user@okta.local",
        "Test",
        "User",
        True,
    )
    assert not user.has_usable_password()  # the password Okta sends is never kept
    assert body["id"] == user.scim.scim_id
    assert (body["userName"], body["externalId"], body["active"]) == (
        "test.user@okta.local",
        "00ujl29u0le5T6Aj10h7",
        True,
    )
    assert response["Location"].endswith(f"/scim/v2/Users/{body['id']}")


def test_entra_creates_a_person_and_finds_them_by_a_username_filter(provisioner):
    created = provisioner.call("post", "Users", payloads.ENTRA_CREATE_USER).json()

    found = provisioner.get('Users?filter=userName eq "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"').json()
    missing = provisioner.get('Users?filter=userName eq "nobody"').json()

    assert found["totalResults"] == 1
    assert found["Resources"][0]["id"] == created["id"]
    assert found["Resources"][0]["emails"][0]["value"] == "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com"
    assert missing["totalResults"] == 0


def test_an_account_made_by_hand_is_adopted_with_its_memberships(provisioner):
    alice = member("alice@example.com", {"acme": ["approver"]}, is_staff=True)

    response = provisioner.call("post", "Users", {**payloads.OKTA_CREATE_USER, "userName": "alice@example.com"})

    assert response.status_code == 201
    assert ScimUser.objects.get(scim_id=response.json()["id"]).user == alice
    assert alice.memberships.count() == 1


def test_a_second_create_of_the_same_username_is_a_409_uniqueness_and_writes_nothing(provisioner):
    provisioner.call("post", "Users", payloads.OKTA_CREATE_USER)
    before = people()

    response = provisioner.call("post", "Users", {**payloads.OKTA_CREATE_USER, "name": {"givenName": "Other"}})

    assert response.status_code == 409
    assert (response.json()["schemas"], response.json()["scimType"]) == ([ERROR], "uniqueness")
    assert people() == before


def test_entra_updates_the_work_email_and_the_family_name(provisioner):
    created = provisioner.call("post", "Users", payloads.ENTRA_CREATE_USER).json()

    response = provisioner.call("patch", f"Users/{created['id']}", payloads.ENTRA_UPDATE_USER)

    assert response.status_code == 200, response.content
    user = get_user_model().objects.get(scim__scim_id=created["id"])
    assert (user.email, user.last_name, user.first_name) == (
        "updatedEmail@microsoft.com",
        "updatedFamilyName",
        "givenName",
    )


def test_put_replaces_the_person(provisioner):
    created = provisioner.call("post", "Users", payloads.OKTA_CREATE_USER).json()
    replaced = {**payloads.OKTA_CREATE_USER, "userName": "renamed@okta.local", "name": {"givenName": "Re"}}

    response = provisioner.call("put", f"Users/{created['id']}", replaced)

    assert response.status_code == 200
    user = get_user_model().objects.get(scim__scim_id=created["id"])
    assert (user.username, user.first_name, user.last_name) == ("renamed@okta.local", "Re", "")


@pytest.mark.parametrize(
    "body, says",
    [
        ({"userName": ""}, "userName"),
        ({"userName": "has space"}, "userName"),
        ({"userName": 7}, "userName"),
        ({"name": {"givenName": "A"}}, "userName"),
        ({"userName": "bob", "active": "maybe"}, "active"),
        ({"userName": "bob", "active": None}, "active"),
        ({"userName": "bob", "emails": [{"value": "not-an-email"}]}, "emails"),
        ({"userName": "bob", "emails": "bob@example.com"}, "emails"),
        ({"userName": "bob", "name": "Bob"}, "name"),
        ({"userName": "x" * 151}, "userName"),
    ],
)
def test_a_user_body_of_the_wrong_shape_is_a_400_that_names_the_attribute_and_writes_nothing(provisioner, body, says):
    before = people()

    response = provisioner.call("post", "Users", body)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/scim+json"
    assert response.json()["schemas"] == [ERROR]
    assert says in response.json()["detail"]
    assert people() == before


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "{not json", '{"userName": "a", "userName": "b"}', b"\xff\xfe"])
def test_a_body_that_is_not_a_json_object_is_a_400_invalid_syntax(provisioner, raw):
    before = people()

    response = provisioner.call("post", "Users", raw=raw)

    assert response.status_code == 400
    assert response.json()["scimType"] == "invalidSyntax"
    assert people() == before


@pytest.mark.parametrize(
    "operations",
    [
        [],
        "replace",
        [{"op": "explode", "path": "active", "value": False}],
        [{"op": "replace", "path": "active[", "value": False}],
        [{"op": "replace", "value": False}],
        [{"op": "replace", "path": "active", "value": False}, {"op": "replace", "path": "userName", "value": ""}],
        [{"op": "replace", "path": "active", "value": False}, {"op": "remove", "path": "userName"}],
        [{"op": "replace", "path": "active", "value": "False"}, {"op": "add", "path": "emails", "value": 3}],
    ],
)
def test_a_patch_with_one_bad_operation_applies_none_of_them(provisioner, operations):
    created = provisioner.call("post", "Users", payloads.OKTA_CREATE_USER).json()
    before = people()

    response = provisioner.call(
        "patch", f"Users/{created['id']}", {"schemas": [payloads.PATCH_OP], "Operations": operations}
    )

    assert response.status_code == 400, response.content
    assert response.json()["schemas"] == [ERROR]
    assert people() == before


@pytest.mark.parametrize(
    "query",
    [
        "Users?filter=userName eq",
        'Users?filter=userName xx "a"',
        'Users?filter=active eq "not-a-boolean"',
        "Users?filter=((((",
        "Users?startIndex=0",
        "Users?count=-3",
        "Users?count=many",
    ],
)
def test_a_bad_filter_or_page_is_a_400_not_a_500(provisioner, query):
    provisioner.call("post", "Users", payloads.OKTA_CREATE_USER)

    response = provisioner.get(query)

    assert response.status_code == 400, response.content
    assert response.json()["schemas"] == [ERROR]


def test_an_unknown_id_is_a_404_scim_error(provisioner):
    for method in ("get", "put", "patch", "delete"):
        response = provisioner.call(method, "Users/not-an-id", payloads.OKTA_DEACTIVATE)
        assert (response.status_code, response.json()["schemas"]) == (404, [ERROR])


def test_delete_forgets_the_person_for_scim_and_keeps_the_account_inactive(provisioner):
    created = provisioner.call("post", "Users", payloads.ENTRA_CREATE_USER).json()

    response = provisioner.call("delete", f"Users/{created['id']}")

    assert response.status_code == 204
    assert provisioner.get(f"Users/{created['id']}").status_code == 404
    user = get_user_model().objects.get(username=payloads.ENTRA_CREATE_USER["userName"])
    assert user.is_active is False


def test_without_a_provisioner_token_scim_answers_401_or_403_and_writes_nothing(token, client):
    from .conftest import Scim

    before = people()
    engine = Scim(token("acme", ["engine", "operator"]))

    anonymous = client.post("/scim/v2/Users", data=payloads.OKTA_CREATE_USER, content_type="application/scim+json")
    forbidden = engine.call("post", "Users", payloads.OKTA_CREATE_USER)
    wrong = Scim("sus_not-a-token").get("Users")

    assert (anonymous.status_code, anonymous.json()["schemas"]) == (401, [ERROR])
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert (forbidden.status_code, forbidden.json()["schemas"]) == (403, [ERROR])
    assert wrong.status_code == 401
    assert people() == before


def test_the_discovery_documents_say_what_is_supported(provisioner):
    config = provisioner.get("ServiceProviderConfig").json()
    types = provisioner.get("ResourceTypes").json()
    schemas = provisioner.get("Schemas").json()

    assert config["patch"]["supported"] is True
    assert config["bulk"]["supported"] is False
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    assert sorted(t["id"] for t in types["Resources"]) == ["Group", "User"]
    assert payloads.USER in {s["id"] for s in schemas["Resources"]}


@pytest.mark.parametrize(
    "query, expected",
    [
        ('userName sw "test."', ["test.user@okta.local"]),
        ('emails.value co "testuser.com"', ["Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"]),
        ('active eq false and externalId eq "00ujl29u0le5T6Aj10h7"', ["test.user@okta.local"]),
        ('userName eq "nobody" or active eq true', ["Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"]),
    ],
)
def test_filters_combine_the_attributes_providers_search_by(provisioner, query, expected):
    okta = provisioner.call("post", "Users", payloads.OKTA_CREATE_USER).json()
    provisioner.call("patch", f"Users/{okta['id']}", payloads.OKTA_DEACTIVATE)
    provisioner.call("post", "Users", payloads.ENTRA_CREATE_USER)

    found = provisioner.get(f"Users?filter={query}").json()

    assert sorted(r["userName"] for r in found["Resources"]) == expected


def test_createtoken_makes_the_provisioner_token_scim_takes(client):
    from io import StringIO

    from django.core.management import call_command

    from .conftest import Scim

    out = StringIO()
    call_command("createtoken", "--scope", "acme", "--roles", "provisioner", "--name", "okta-scim", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]

    response = Scim(secret).call("post", "Users", payloads.OKTA_CREATE_USER)

    assert response.status_code == 201
    assert Scim(secret).get("Users").json()["totalResults"] == 1


def test_superusers_read_what_was_provisioned_in_the_admin_and_nobody_edits_it(provisioner):
    from django.test import Client

    created = provisioner.call("post", "Users", payloads.OKTA_CREATE_USER).json()
    root, olga = Client(), Client()
    root.force_login(member("root", is_staff=True, is_superuser=True))
    olga.force_login(member("olga", {"acme": ["operator"]}, is_staff=True))
    row = ScimUser.objects.get(scim_id=created["id"])

    assert created["id"] in root.get("/admin/suspensions/scimuser/").content.decode()
    assert root.get(f"/admin/suspensions/scimuser/{row.pk}/delete/").status_code == 403
    assert root.get("/admin/suspensions/scimgroup/add/").status_code == 403
    assert olga.get("/admin/suspensions/scimuser/").status_code == 403
