"""Who a person is at the company's identity provider, and the roles its groups give (docs/identity.md).

A person signed in by OpenID Connect is keyed by (issuer, sub), never by email
alone (OidcIdentity). Operators map a provider group to a role in a scope
(RoleMapping); at each sign-in or provisioning call the person's provider-given
memberships (Membership.source = provider) become exactly what the mappings
give, and each change is kept as a RoleChange for auditors.
"""

from django.conf import settings
from django.db import models

from ..ids import uuid7
from .base import Role, Scoped, level_indexes


class MembershipSource(models.TextChoices):
    """Where a membership came from: granted by hand (admin, createuser) or by a provider group's mapping."""

    HAND = "hand"
    PROVIDER = "provider"


class OidcIdentity(models.Model):
    """The (issuer, sub) an OpenID Provider names a person by, linked to one user here."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities")
    issuer = models.CharField(max_length=500)
    sub = models.CharField(max_length=255)
    # The email the provider gave at the last sign-in, for the admin's eyes only: never a key.
    email = models.CharField(max_length=320, blank=True)
    # The groups claim of the last sign-in (or SCIM's membership), as given.
    groups = models.JSONField(default=list, blank=True)
    linked_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "OpenID identity"
        verbose_name_plural = "OpenID identities"
        constraints = [models.UniqueConstraint(fields=["issuer", "sub"], name="one_user_per_oidc_subject")]

    def __str__(self) -> str:
        return f"{self.sub} at {self.issuer} is {self.user}"


class RoleMapping(Scoped):
    """A provider group gives its members `role` in `scope` (and the scopes under it)."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    group = models.CharField(max_length=255)
    role = models.CharField(max_length=16, choices=Role.choices)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["group", "scope", "role"], name="one_mapping_per_group_scope_role")
        ]

    def __str__(self) -> str:
        return f"{self.group} → {self.role} in {self.scope}"


class RoleChangeKind(models.TextChoices):
    ADDED = "added"
    REMOVED = "removed"


class RoleChange(Scoped):
    """One provider-given role added to or removed from a person, with what caused it.

    Evidence: the user is kept as a plain id and name, not a cascading key, so
    deleting a user never deletes the record of what was granted to them.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    user_id = models.IntegerField()
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices)
    change = models.CharField(max_length=8, choices=RoleChangeKind.choices)
    # Who or what made the change: "oidc", "scim:<token>", "operator:<name>" ...
    by = models.CharField(max_length=200)
    # Which sign-in or provisioning call: "oidc sign-in <issuer> <sub>", "scim PATCH /Users/<id>" ...
    cause = models.CharField(max_length=500)
    at = models.DateTimeField()

    class Meta(Scoped.Meta):
        indexes = [
            *level_indexes("scope_l2", "scope_l3"),
            models.Index(fields=["scope_l1", "-at"], name="rolechange_l1_at"),
            models.Index(fields=["user_id", "-at"], name="rolechange_user_at"),
        ]

    def __str__(self) -> str:
        return f"{self.username} {self.change} {self.role} in {self.scope} ({self.cause})"
