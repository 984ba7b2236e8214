"""Identity (issue 52, docs/identity.md): who an OpenID subject (issuer, sub) is here, provider groups mapped to roles,
the record of every provider-given role change, and a membership's source (hand or provider), so a sign-in or a SCIM
call rewrites only the roles the provider gave. Every membership before this one was granted by hand.
"""

import django.db.models.deletion
import suspensions.ids
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0027_retention_legal_hold"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="OidcIdentity",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("issuer", models.CharField(max_length=500)),
                ("sub", models.CharField(max_length=255)),
                ("email", models.CharField(blank=True, max_length=320)),
                ("groups", models.JSONField(blank=True, default=list)),
                ("linked_at", models.DateTimeField(auto_now_add=True)),
                ("last_seen_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "OpenID identity",
                "verbose_name_plural": "OpenID identities",
            },
        ),
        migrations.CreateModel(
            name="RoleChange",
            fields=[
                ("scope", models.CharField(max_length=192)),
                ("scope_l1", models.CharField(editable=False, max_length=64)),
                ("scope_l2", models.CharField(blank=True, editable=False, max_length=128)),
                ("scope_l3", models.CharField(blank=True, editable=False, max_length=192)),
                (
                    "id",
                    models.UUIDField(default=suspensions.ids.uuid7, editable=False, primary_key=True, serialize=False),
                ),
                ("user_id", models.IntegerField()),
                ("username", models.CharField(max_length=150)),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("engine", "Engine"),
                            ("bus", "Bus"),
                            ("approver", "Approver"),
                            ("auditor", "Auditor"),
                            ("operator", "Operator"),
                        ],
                        max_length=16,
                    ),
                ),
                ("change", models.CharField(choices=[("added", "Added"), ("removed", "Removed")], max_length=8)),
                ("by", models.CharField(max_length=200)),
                ("cause", models.CharField(max_length=500)),
                ("at", models.DateTimeField()),
            ],
            options={
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="RoleMapping",
            fields=[
                ("scope", models.CharField(max_length=192)),
                ("scope_l1", models.CharField(editable=False, max_length=64)),
                ("scope_l2", models.CharField(blank=True, editable=False, max_length=128)),
                ("scope_l3", models.CharField(blank=True, editable=False, max_length=192)),
                (
                    "id",
                    models.UUIDField(default=suspensions.ids.uuid7, editable=False, primary_key=True, serialize=False),
                ),
                ("group", models.CharField(max_length=255)),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("engine", "Engine"),
                            ("bus", "Bus"),
                            ("approver", "Approver"),
                            ("auditor", "Auditor"),
                            ("operator", "Operator"),
                        ],
                        max_length=16,
                    ),
                ),
                ("created_by", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "abstract": False,
            },
        ),
        migrations.RemoveConstraint(
            model_name="membership",
            name="one_membership_per_role",
        ),
        migrations.AddField(
            model_name="membership",
            name="source",
            field=models.CharField(choices=[("hand", "Hand"), ("provider", "Provider")], default="hand", max_length=8),
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(
                fields=("user", "scope", "role", "source"), name="one_membership_per_role_source"
            ),
        ),
        migrations.AddField(
            model_name="oidcidentity",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="oidc_identities", to=settings.AUTH_USER_MODEL
            ),
        ),
        migrations.AddIndex(
            model_name="rolechange",
            index=models.Index(fields=["scope_l2"], name="rolechange_scope_l2"),
        ),
        migrations.AddIndex(
            model_name="rolechange",
            index=models.Index(fields=["scope_l3"], name="rolechange_scope_l3"),
        ),
        migrations.AddIndex(
            model_name="rolechange",
            index=models.Index(fields=["scope_l1", "-at"], name="rolechange_l1_at"),
        ),
        migrations.AddIndex(
            model_name="rolechange",
            index=models.Index(fields=["user_id", "-at"], name="rolechange_user_at"),
        ),
        migrations.AddIndex(
            model_name="rolemapping",
            index=models.Index(fields=["scope_l1"], name="rolemapping_scope_l1"),
        ),
        migrations.AddIndex(
            model_name="rolemapping",
            index=models.Index(fields=["scope_l2"], name="rolemapping_scope_l2"),
        ),
        migrations.AddIndex(
            model_name="rolemapping",
            index=models.Index(fields=["scope_l3"], name="rolemapping_scope_l3"),
        ),
        migrations.AddConstraint(
            model_name="rolemapping",
            constraint=models.UniqueConstraint(
                fields=("group", "scope", "role"), name="one_mapping_per_group_scope_role"
            ),
        ),
        migrations.AddConstraint(
            model_name="oidcidentity",
            constraint=models.UniqueConstraint(fields=("issuer", "sub"), name="one_user_per_oidc_subject"),
        ),
    ]
