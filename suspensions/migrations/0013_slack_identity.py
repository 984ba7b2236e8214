# Slack approvals (docs/notifications.md, "Who a Slack user is"): a person's Slack member id, so a button press acts as
# that user.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0012_notifications"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="SlackIdentity",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "slack_user_id",
                    models.CharField(help_text="The Slack member id, like U0123ABC.", max_length=32, unique=True),
                ),
                ("linked_by", models.CharField(blank=True, max_length=200)),
                ("linked_at", models.DateTimeField(auto_now_add=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="slack_identity",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "Slack identities",
            },
        ),
    ]
