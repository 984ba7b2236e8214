"""The bodies Okta and Microsoft Entra ID send, as their SCIM documentation shows them (ids and names as there).

Okta: "SCIM 2.0 protocol reference" (developer.okta.com, Provisioning integrations). Entra: "Tutorial: Develop
and plan provisioning for a SCIM endpoint in Microsoft Entra ID" (learn.microsoft.com), its request examples.
"""

PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"

OKTA_CREATE_USER = {
    "schemas": [USER],
    "userName": "test.user@okta.local",
    "name": {"givenName": "Test", "familyName": "User"},
    "emails": [{"primary": True, "value": "test.user@okta.local", "type": "work"}],
    "displayName": "Test User",
    "locale": "en-US",
    "externalId": "00ujl29u0le5T6Aj10h7",
    "groups": [],
    "password": "1mz050nq",
    "active": True,
}
OKTA_DEACTIVATE = {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"active": False}}]}
OKTA_CREATE_GROUP = {"schemas": [GROUP], "displayName": "Test SCIMv2", "members": []}


def okta_rename_group(group_id, name):
    return {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"id": group_id, "displayName": name}}]}


def okta_members(add=(), remove=()):
    ops = [{"op": "remove", "path": f'members[value eq "{m}"]'} for m in remove]
    if add:
        ops.append({"op": "add", "path": "members", "value": [{"value": m, "display": m} for m in add]})
    return {"schemas": [PATCH_OP], "Operations": ops}


ENTRA_CREATE_USER = {
    "schemas": [USER, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
    "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
    "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
    "active": True,
    "emails": [
        {"primary": True, "type": "work", "value": "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com"}
    ],
    "meta": {"resourceType": "User"},
    "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
    "roles": [],
}
ENTRA_DISABLE = {"Operations": [{"op": "Replace", "path": "active", "value": False}], "schemas": [PATCH_OP]}
# What Entra sent before its SCIM 2.0 compliance fixes (and still sends without the aadOptscim062020 flag).
ENTRA_DISABLE_AS_STRING = {"Operations": [{"op": "Replace", "path": "active", "value": "False"}], "schemas": [PATCH_OP]}
ENTRA_UPDATE_USER = {
    "schemas": [PATCH_OP],
    "Operations": [
        {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "updatedEmail@microsoft.com"},
        {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
    ],
}
ENTRA_CREATE_GROUP = {
    "schemas": [GROUP, "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
    "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
    "displayName": "displayName",
    "meta": {"resourceType": "Group"},
}


def entra_add_member(user_id):
    return {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "Add", "path": "members", "value": [{"$ref": None, "value": user_id}]}],
    }


def entra_remove_member(user_id):
    return {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "Remove", "path": "members", "value": [{"$ref": None, "value": user_id}]}],
    }


def rfc_deactivate():
    """RFC 7644, section 3.5.2.3's form: a path and a value."""
    return {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "path": "active", "value": False}]}
