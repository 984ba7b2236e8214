"""Escalation chains and approvals at risk (issue 54, items 3 and 4; docs/policies.md, "Escalation chains").

An approval keeps its chain's steps, how many the sweep has run and when the next is due (a partial index for the
sweep's scan); a floor may require a chain; a notification names its step, so each step asks its people once even
when an earlier step asked them (the dedupe key gains `step`, 0 for every row written before). An approval also
keeps when 80% of its window passes (`at_risk_at`, a partial index for the at-risk gauge and filter), filled in for
the pending approvals that have a deadline.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0024_trace_context"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="notification",
            name="one_notification_per_recipient",
        ),
        migrations.AddField(
            model_name="approval",
            name="at_risk_at",
            field=models.DateTimeField(blank=True, null=True),
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
        migrations.AddIndex(
            model_name="approval",
            index=models.Index(
                condition=models.Q(("at_risk_at__isnull", False), ("status", "pending")),
                fields=["at_risk_at"],
                name="approval_at_risk",
            ),
        ),
        migrations.RunSQL(
            "UPDATE suspensions_approval SET at_risk_at = created_at + (expires_at - created_at) * 0.8 "
            "WHERE status = 'pending' AND expires_at IS NOT NULL",
            migrations.RunSQL.noop,
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.UniqueConstraint(
                fields=("approval_id", "channel", "recipient", "kind", "step"), name="one_notification_per_recipient"
            ),
        ),
    ]
