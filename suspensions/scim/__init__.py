"""SCIM 2.0 provisioning at /scim/v2/ (docs/identity.md, "Provisioning (SCIM) and leavers"), on django-scim2."""
