"""Escalation chains (issue 54, item 3; docs/policies.md, "Escalation chains").

An approval keeps its chain's steps, how many the sweep has run and when the next is due (a partial index for the
sweep's scan); a floor may require a chain; a notification names its step, so each step asks its people once even
when an earlier step asked them (the dedupe key gains `step`, 0 for every row written before).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0021_checkpoints_per_workspace"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="notification",
            name="one_notification_per_recipient",
        ),
        migrations.AddField(
            model_name="approval",
            name="escalation",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="approval",
            name="escalation_step",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="approval",
            name="next_escalation_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="approvalfloor",
            name="require_escalation",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="notification",
            name="step",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="approval",
            index=models.Index(
                condition=models.Q(("next_escalation_at__isnull", False), ("status", "pending")),
                fields=["next_escalation_at"],
                name="approval_escalation_due",
            ),
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.UniqueConstraint(
                fields=("approval_id", "channel", "recipient", "kind", "step"), name="one_notification_per_recipient"
            ),
        ),
    ]
