"""One audit checkpoint chain per workspace (issue 50, item 7; docs/decisions.md, "One checkpoint chain per
workspace").

The global `seq`, the primary key, becomes `id`, an identity that only orders the rows as written; `seq` is
now the number within a workspace's chain, unique with `workspace`. The rows already written become the
legacy chain, workspace "", with `seq` = their old number: nothing is re-hashed or re-signed, so they verify
exactly as before (suspensions/audit.py, `signed_text`, keeps their text).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0020_slack_channel_grants"),
    ]

    operations = [
        migrations.RenameField(model_name="auditcheckpoint", old_name="seq", new_name="id"),
        migrations.AlterField(
            model_name="auditcheckpoint",
            name="id",
            field=models.BigAutoField(primary_key=True, serialize=False),
        ),
        # Django adds the identity starting at 1: move it past the legacy rows' ids.
        migrations.RunSQL(
            "SELECT setval(pg_get_serial_sequence('suspensions_auditcheckpoint', 'id'), COALESCE(MAX(id), 0) + 1, "
            "false) FROM suspensions_auditcheckpoint",
            migrations.RunSQL.noop,
        ),
        migrations.AddField(
            model_name="auditcheckpoint",
            name="workspace",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(model_name="auditcheckpoint", name="seq", field=models.BigIntegerField(null=True)),
        migrations.RunSQL("UPDATE suspensions_auditcheckpoint SET seq = id", migrations.RunSQL.noop),
        migrations.AlterField(model_name="auditcheckpoint", name="seq", field=models.BigIntegerField()),
        migrations.AddConstraint(
            model_name="auditcheckpoint",
            constraint=models.UniqueConstraint(fields=("workspace", "seq"), name="one_checkpoint_per_seq"),
        ),
    ]
