"""SCIM 2.0 provisioning (issue 52; docs/identity.md, "Provisioning (SCIM) and leavers"): the SCIM id of a provisioned
person, the provider's groups and their members, and the `provisioner` role of the provider's token (a choice of
every role field)."""

import django.db.models.deletion
import suspensions.models.scim
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0028_identity_and_role_mappings"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="membership",
            name="role",
            field=models.CharField(
                choices=[
                    ("engine", "Engine"),
                    ("bus", "Bus"),
                    ("approver", "Approver"),
                    ("auditor", "Auditor"),
                    ("operator", "Operator"),
                    ("provisioner", "Provisioner"),
                ],
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="rolechange",
            name="role",
            field=models.CharField(
                choices=[
                    ("engine", "Engine"),
                    ("bus", "Bus"),
                    ("approver", "Approver"),
                    ("auditor", "Auditor"),
                    ("operator", "Operator"),
                    ("provisioner", "Provisioner"),
                ],
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="rolemapping",
            name="role",
            field=models.CharField(
                choices=[
                    ("engine", "Engine"),
                    ("bus", "Bus"),
                    ("approver", "Approver"),
                    ("auditor", "Auditor"),
                    ("operator", "Operator"),
                    ("provisioner", "Provisioner"),
                ],
                max_length=16,
            ),
        ),
        migrations.CreateModel(
            name="ScimGroup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "scim_id",
                    models.CharField(
                        default=suspensions.models.scim.new_scim_id, editable=False, max_length=36, unique=True
                    ),
                ),
                ("display_name", models.CharField(max_length=255, unique=True)),
                ("external_id", models.CharField(blank=True, max_length=255)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "members",
                    models.ManyToManyField(blank=True, related_name="scim_groups", to=settings.AUTH_USER_MODEL),
                ),
            ],
            options={
                "verbose_name": "SCIM group",
            },
        ),
        migrations.CreateModel(
            name="ScimUser",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "scim_id",
                    models.CharField(
                        default=suspensions.models.scim.new_scim_id, editable=False, max_length=36, unique=True
                    ),
                ),
                ("external_id", models.CharField(blank=True, max_length=255)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="scim", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "verbose_name": "SCIM user",
            },
        ),
    ]
