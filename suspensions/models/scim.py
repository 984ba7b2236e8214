"""Who the company's identity provider provisioned (docs/identity.md, "Provisioning (SCIM) and leavers").

A person stays a Django user (username, email, is_active); ScimUser only gives
them the SCIM `id` the provider addresses them by and its `externalId`. A
SCIM group is a name and its members; the roles a group gives come from the
operators' role mappings, not from here.
"""

import uuid

from django.conf import settings
from django.db import models


def new_scim_id() -> str:
    return str(uuid.uuid4())


class ScimUser(models.Model):
    # Text, not a UUIDField: a provider's lookup by any string is a 404, never a validation error.
    scim_id = models.CharField(max_length=36, default=new_scim_id, editable=False)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim")
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM user"
        # Unique by constraint, not `unique=True`: no text-pattern twin index (tests/services/test_indexes.py).
        constraints = [models.UniqueConstraint(fields=["scim_id"], name="one_scim_user_per_id")]

    def __str__(self) -> str:
        return f"SCIM {self.scim_id} is {self.user}"


class ScimGroup(models.Model):
    scim_id = models.CharField(max_length=36, default=new_scim_id, editable=False)
    display_name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="scim_groups", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group"
        constraints = [
            models.UniqueConstraint(fields=["scim_id"], name="one_scim_group_per_id"),
            models.UniqueConstraint(fields=["display_name"], name="one_scim_group_per_name"),
        ]

    def __str__(self) -> str:
        return self.display_name
